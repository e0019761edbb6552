"""The README's "Layout" section, drawn from the package itself, by wing.

``python tests/readme_layout.py`` rewrites the section in README.md; ``test_readme`` checks that
the README holds exactly what ``layout()`` draws, so the drawing cannot go stale.
Each module's line is the first line of its docstring.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "miniagent"
WIDTH = 110
NAME_COLUMN = 36
GROUPS = (
    ("", "the core and the top-level modules: the loop and what it speaks (the core: standard library only)"),
    ("net", "floor: the cancellable HTTP exchange that model clients and MCP share"),
    ("process", "floor: child processes in a group of their own (tools, MCP servers, the embedded model)"),
    ("providers", "wing: model clients over HTTP, and the embedded model (providers/local/)"),
    ("toolbox", "wing: the built-in tools"),
    ("mcp", "wing: the MCP client (imports net/ and process/, never providers/ or toolbox/)"),
    ("stores", "wing: session stores beyond the JSONL file"),
    ("cli", "wing: the command line (imports everything; nothing imports it)"),
)
START = "<!-- layout: drawn by tests/readme_layout.py -->"


def _summary(path: Path) -> str:
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    first = doc.strip().splitlines()[0] if doc.strip() else ""
    return first.rstrip(".").replace("``", "`")


def _line(name: str, summary: str) -> str:
    line = f"  {name.ljust(NAME_COLUMN - 3)} {summary}".rstrip()
    if len(line) <= WIDTH:
        return line
    return line[: WIDTH - 4].rsplit(" ", 1)[0].rstrip(" ,:;(") + " ..."


def layout() -> str:
    """The section's code block: ``miniagent/``, then each group's heading and modules."""
    modules = sorted(path.relative_to(PACKAGE).as_posix() for path in PACKAGE.rglob("*.py"))
    lines = ["```", "miniagent/"]
    for folder, heading in GROUPS:
        inside = [m for m in modules if (m.split("/", 1)[0] == folder if folder else "/" not in m)]
        lines.append(f"  # {folder + '/' if folder else ''}{': ' if folder else ''}{heading}")
        lines.extend(_line(m, _summary(PACKAGE / m)) for m in inside)
    lines.append("```")
    return "\n".join(lines)


def drawn(readme: str) -> str:
    """The code block that follows ``START`` in ``readme`` (empty when there is none)."""
    match = re.search(re.escape(START) + r"\n(```\n.*?\n```)", readme, re.S)
    return match.group(1) if match else ""


def main() -> int:
    readme_path = ROOT / "README.md"
    readme = readme_path.read_text(encoding="utf-8")
    old = drawn(readme)
    if not old:
        print(f"README.md has no {START!r} marker", file=sys.stderr)
        return 1
    readme_path.write_text(readme.replace(old, layout()), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
