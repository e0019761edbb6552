"""Checks of the command line that come before anything costly (client start, model requests).

A failed check raises ``UsageProblem``: ``run_cli`` prints it as one ``miniagent: error:`` line
and exits ``EXIT_USAGE``, with nothing on stdout. Messages never repeat a URL that carries
user info or a query (they may hold credentials).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .._text import undecodable_replaced
from ..tools import MIN_TOOL_OUTPUT_CHARS
from .defaults import MIN_CONTEXT_CHARS, resolve_provider
from .options import Options
from .problems import UsageProblem

__all__ = [
    "MIN_CONTEXT_CHARS",
    "UsageProblem",
    "check_base_url",
    "check_mcp_configs",
    "check_options",
    "check_prompt_fits",
    "valid_text",
]


def check_options(options: Options) -> None:
    """Refuse option values and combinations that cannot work, before anything starts.

    Raises:
        UsageProblem: ``--base-url`` with the local provider or one the providers refuse, a
            ``--context-max-chars`` below ``MIN_CONTEXT_CHARS``, a bad ``--mcp-config`` file.
    """
    if options.base_url is not None:
        source = _base_url_source()
        if resolve_provider(options.provider, base_url=options.base_url) == "local":
            raise UsageProblem(f"{source} does not apply to the local provider")
        check_base_url(options.base_url, source)
    budget = options.context_max_chars
    if budget is not None and budget < MIN_CONTEXT_CHARS:
        raise UsageProblem(
            f"--context-max-chars {budget} is too small: a tool result alone may take "
            f"{MIN_TOOL_OUTPUT_CHARS} characters and must fit in half of it; use at least {MIN_CONTEXT_CHARS}"
        )
    check_mcp_configs(options)


def check_mcp_configs(options: Options) -> None:
    """Read every ``--mcp-config`` file (nothing is started).

    Raises:
        UsageProblem: a file is not a valid ``mcpServers`` file (the message names the file, the
            server and the field), or two files define a server of the same name.
    """
    if not options.mcp_config:
        return
    from ..mcp import MCPError, load_mcp_config

    defined: dict[str, str] = {}
    for path in options.mcp_config:
        try:
            servers = load_mcp_config(path)
        except MCPError as error:
            raise UsageProblem(f"--mcp-config {error}") from None
        for name in servers:
            if name in defined:
                raise UsageProblem(
                    f"--mcp-config: MCP server {name!r} is defined in {defined[name]} and {path}"
                )
            defined[name] = str(path)


def check_base_url(url: str, source: str = "--base-url") -> None:
    """Refuse a base URL, or the proxy the environment selects for it, that the providers would
    refuse: the one check is ``miniagent.providers.check_base_url`` (and ``check_proxy_for``),
    imported here lazily (it imports ``requests``).

    Args:
        url: the value given.
        source: how the error names it: ``--base-url`` or ``MINIAGENT_BASE_URL``.

    Raises:
        UsageProblem: every URL the library refuses (no or another scheme, user info, a query or
            fragment, a percent-encoded host, a bad port, no host...), or an unusable proxy
            variable; the text never shows user info or query values.
    """
    from ..net.urls import check_base_url as check_url
    from ..net.urls import check_proxy_for

    try:
        check_proxy_for(check_url(url, what=source))
    except ValueError as error:
        raise UsageProblem(str(error)) from None


def _base_url_source() -> str:
    """``MINIAGENT_BASE_URL`` when click took the value from that variable, else ``--base-url``."""
    try:
        from typer._click.globals import get_current_context  # typer >= 0.26 vendors click
    except ImportError:  # pragma: no cover (older typer)
        from click import get_current_context  # type: ignore[no-redef,unused-ignore]
    ctx: Any = get_current_context(silent=True)
    source = ctx.get_parameter_source("base_url") if ctx is not None else None
    return "MINIAGENT_BASE_URL" if getattr(source, "name", "") == "ENVIRONMENT" else "--base-url"


def check_prompt_fits(prompt: str, context_max_chars: int | None) -> None:
    """Refuse a prompt longer than the context budget (it could never be sent).

    Raises:
        UsageProblem: ``len(prompt) > context_max_chars``.
    """
    if context_max_chars is not None and len(prompt) > context_max_chars:
        raise UsageProblem(
            f"the prompt has {len(prompt)} characters, more than --context-max-chars {context_max_chars}"
        )


def valid_text(text: str) -> str:
    """Replace what was undecodable in argv or stdin (surrogate escapes) with U+FFFD."""
    return undecodable_replaced(text)


def own_files_in_workspace(options: Options, stdout_fd: int = 1) -> list[str]:
    """The files this command writes that lie inside ``--workspace``: the ``--session`` file and
    the file stdout is redirected to (read from ``/proc/self/fd``, Linux only). The built-in
    tools would show them to the model like any other file (a half-written ``run.jsonl`` in the
    project answered "Which files mention TODO?" with itself), so the CLI says so on stderr.

    Returns:
        Each such path as given (stdout's as the kernel names it), the session's first.
    """
    workspace = (options.workspace or Path.cwd()).resolve()  # absolute after Options is built
    session = options.session
    candidates = [Path(session)] if session is not None else []
    try:
        target = Path(os.readlink(f"/proc/self/fd/{stdout_fd}"))  # "pipe:[...]" for a pipe
    except OSError:  # no /proc
        target = None
    if target is not None and target.is_absolute() and target.is_file():
        candidates.append(target)
    return [str(path) for path in candidates if path.resolve().is_relative_to(workspace)]
