"""MkDocs hook of the documentation site: the pages' generated parts, drawn from the code.

A page asks for a generated part with a marker line ``<!-- generated: NAME -->``; the hook
replaces it, before the page's Markdown is rendered, with ``GENERATORS[NAME]()``. Nothing a
generator writes is written anywhere else in the docs:

- ``cli``: every command of the Typer app ``miniagent.cli.app`` with its usage line, its help and
  each option's help record exactly as ``--help`` prints it (click's ``get_help_record``: flags,
  value names, defaults, ranges, environment variables);
- ``exit-codes``: ``miniagent.cli.defaults.EXIT_CODES`` (code and meaning) and the library's
  stop reasons with ``exit_code_for_stop_reason``;
- ``providers``: the provider catalogue (``miniagent._catalogue.CATALOGUE``);
- ``layout``: the package's modules by wing (``GROUPS``), each with the first line of its
  docstring.

An unknown marker fails the build. ``python docs/hooks.py NAME`` prints one part (to read it
without building the site). The hook imports the ``miniagent`` of this checkout (the folder
above this file goes first on ``sys.path``), the one mkdocstrings reads (``paths: [..]``).
"""

from __future__ import annotations

import ast
import html
import re
import sys
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

HELP_WIDTH = 88
"""The width the help text is wrapped to (click wraps to the terminal, at most 80 by default)."""
MARKER = re.compile(r"^<!-- generated: ([a-z-]+) -->$", re.M)


def _cell(text: str) -> str:
    """Text for an HTML table cell: escaped, runs of white space as one space."""
    return html.escape(" ".join(text.split()))


def _html_table(heads: tuple[str, str], rows: list[tuple[str, str]], first_is_code: bool = True) -> str:
    """A two-column HTML table (raw HTML: a ``|`` in a value name cannot split a cell)."""
    lines = ["<table>", f"<thead><tr><th>{heads[0]}</th><th>{heads[1]}</th></tr></thead>", "<tbody>"]
    for first, second in rows:
        shown = f"<code>{_cell(first)}</code>" if first_is_code else _cell(first)
        lines.append(f"<tr><td>{shown}</td><td>{_cell(second)}</td></tr>")
    lines += ["</tbody>", "</table>"]
    return "\n".join(lines)


def _commands(group: Any, context: Any) -> list[tuple[Any, Any]]:
    """Every leaf command of a click group with its context, in the order help lists them.

    Typer's own ``Context`` and duck typing (a group has ``list_commands``) serve both the click
    that typer >= 0.26 vendors and the separate ``click`` package of older typer releases."""
    import typer

    found: list[tuple[Any, Any]] = []
    for name in group.list_commands(context):
        command = group.get_command(context, name)
        sub = typer.Context(command, info_name=name, parent=context, **command.context_settings)
        if hasattr(command, "list_commands"):
            found += _commands(command, sub)
        else:
            found.append((command, sub))
    return found


def _records(command: Any, context: Any) -> list[tuple[str, str]]:
    """The command's help records (arguments, options, ``--help``) as its ``--help`` shows them
    (click's ``get_help_record``; the context carries the command's ``context_settings``)."""
    params = [*command.params, command.get_help_option(context)]
    rows = [param.get_help_record(context) for param in params if param is not None]
    return [row for row in rows if row is not None]


def cli() -> str:
    """The commands of ``miniagent.cli.app``, each with its usage line and help records."""
    import typer
    import typer.main

    from miniagent.cli.app import app

    root = typer.main.get_command(app)
    context = typer.Context(root, info_name="miniagent", **root.context_settings)
    context.terminal_width = context.max_content_width = HELP_WIDTH
    parts = ["`miniagent --help`:", "", "```text", root.get_help(context).rstrip(), "```"]
    for command, sub in _commands(root, context):
        usage = command.get_usage(sub).removeprefix("Usage: ")
        parts += [
            "",
            f"## `{sub.command_path}`",
            "",
            "```text",
            usage,
            "```",
            "",
            _cell(command.help or ""),
            "",
            _html_table(("Argument or option", "Meaning"), _records(command, sub)),
        ]
    return "\n".join(parts)


def exit_codes() -> str:
    """``EXIT_CODES`` as a table, then the stop reasons of the library and their codes."""
    from miniagent import StopReason, exit_code_for_stop_reason
    from miniagent.cli.defaults import EXIT_CODES

    codes = [(str(code), meaning) for code, meaning in EXIT_CODES.items()]
    reasons = [(reason, str(exit_code_for_stop_reason(reason))) for reason in typing.get_args(StopReason)]
    return "\n".join(
        [
            _html_table(("Exit code", "Meaning"), codes),
            "",
            "The library's stop reasons and their codes (`miniagent.exit_code_for_stop_reason`):",
            "",
            _html_table(("Stop reason", "Exit code"), reasons),
        ]
    )


def providers() -> str:
    """The provider catalogue: name, key variable, default model and default API root."""
    from miniagent._catalogue import CATALOGUE

    lines = [
        "<table>",
        "<thead><tr><th>Provider</th><th>Key variable</th><th>Default model</th>"
        "<th>Default API root</th></tr></thead>",
        "<tbody>",
    ]
    for row in CATALOGUE:
        cells = [row.name, row.key_env or "", row.default_model or "", row.default_base_url or ""]
        shown = "".join(f"<td><code>{_cell(cell)}</code></td>" if cell else "<td>none</td>" for cell in cells)
        lines.append(f"<tr>{shown}</tr>")
    lines += ["</tbody>", "</table>"]
    return "\n".join(lines)


LAYOUT_WIDTH = 110
"""The longest line of the layout drawing; a longer module line is cut at a word, with ``...``."""
NAME_COLUMN = 36
GROUPS = (
    ("", "the core and the top-level modules: the loop and what it speaks (the core: standard library only)"),
    ("_validation", "the core's JSON Schema check, in parts (private; standard library only)"),
    ("net", "floor: the cancellable HTTP exchange that model clients and MCP share"),
    ("process", "floor: child processes in a group of their own (tools, MCP servers, the embedded model)"),
    ("providers", "wing: model clients over HTTP, and the embedded model (providers/local/)"),
    ("toolbox", "wing: the built-in tools"),
    ("mcp", "wing: the MCP client (imports net/ and process/, never providers/ or toolbox/)"),
    ("stores", "wing: session stores beyond the JSONL file"),
    ("cli", "wing: the command line (imports everything; nothing imports it)"),
)
"""The package's folders in the drawing's order (``""``: the top-level modules), with headings."""


def _summary(path: Path) -> str:
    """The first line of a module's docstring, without its final period (``""`` when none)."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    first = doc.strip().splitlines()[0] if doc.strip() else ""
    return first.rstrip(".").replace("``", "`")


def _layout_line(name: str, summary: str) -> str:
    line = f"  {name.ljust(NAME_COLUMN - 3)} {summary}".rstrip()
    if len(line) <= LAYOUT_WIDTH:
        return line
    return line[: LAYOUT_WIDTH - 4].rsplit(" ", 1)[0].rstrip(" ,:;(") + " ..."


def layout() -> str:
    """The package's modules by wing (``GROUPS``) with their docstrings' first lines, as a text block.

    Raises:
        ValueError: a folder of the package is in no group (add it to ``GROUPS``).
    """
    package = ROOT / "miniagent"
    modules = sorted(path.relative_to(package).as_posix() for path in package.rglob("*.py"))
    folders = {module.split("/", 1)[0] for module in modules if "/" in module}
    unknown = folders - {folder for folder, _ in GROUPS}
    if unknown:
        raise ValueError(f"miniagent/ folders missing from GROUPS of docs/hooks.py: {sorted(unknown)}")
    lines = ["```text", "miniagent/"]
    for folder, heading in GROUPS:
        inside = [m for m in modules if (m.split("/", 1)[0] == folder if folder else "/" not in m)]
        lines.append(f"  # {folder + '/' if folder else ''}{': ' if folder else ''}{heading}")
        lines.extend(_layout_line(m, _summary(package / m)) for m in inside)
    lines.append("```")
    return "\n".join(lines)


GENERATORS: dict[str, Callable[[], str]] = {
    "cli": cli,
    "exit-codes": exit_codes,
    "layout": layout,
    "providers": providers,
}
"""The generated parts by marker name."""


def expand(markdown: str, where: str = "a page") -> str:
    """``markdown`` with each marker line replaced by its generated part.

    Raises:
        KeyError: a marker names no generator (the text names the page and the known names).
    """

    if str(ROOT) not in sys.path:  # MkDocs restores sys.path after loading a hook: set it here
        sys.path.insert(0, str(ROOT))

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in GENERATORS:
            raise KeyError(f"{where}: unknown generated part {name!r} (known: {', '.join(GENERATORS)})")
        return GENERATORS[name]()

    return MARKER.sub(replace, markdown)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """MkDocs event: expand the markers of one page."""
    return expand(markdown, page.file.src_uri)


if __name__ == "__main__":
    print(expand(f"<!-- generated: {sys.argv[1]} -->", "the command line"))
