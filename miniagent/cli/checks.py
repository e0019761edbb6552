"""Checks of the command line that come before anything costly (client start, model requests).

A failed check raises ``UsageProblem``: ``run_cli`` prints it as one ``miniagent: error:`` line
and exits 64 (``EXIT_USAGE``), with nothing on stdout. Messages never repeat a URL that carries
user info or a query (they may hold credentials).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from .._text import undecodable_replaced
from .defaults import resolve_provider
from .options import Options

__all__ = [
    "MIN_CONTEXT_CHARS",
    "TOOL_OUTPUT_CHARS",
    "UsageProblem",
    "check_base_url",
    "check_mcp_configs",
    "check_options",
    "check_prompt_fits",
    "tool_output_chars",
    "valid_text",
]

TOOL_OUTPUT_CHARS = 30_000  # cap of one built-in tool result (characters) without a context budget
MIN_TOOL_OUTPUT_CHARS = 200  # the toolbox's smallest cap (toolbox.MIN_OUTPUT_CHARS)
MIN_CONTEXT_CHARS = 2 * MIN_TOOL_OUTPUT_CHARS  # a tool result may take half of the budget


class UsageProblem(Exception):
    """A usage problem found after parsing (exit 64); the message is the whole explanation."""


def check_options(options: Options) -> None:
    """Refuse option values and combinations that cannot work, before anything starts.

    Raises:
        UsageProblem: ``--base-url`` with the local provider or not an http(s) URL, a
            ``--context-max-chars`` below ``MIN_CONTEXT_CHARS``, a bad ``--mcp-config`` file.
    """
    if options.base_url is not None:
        check_base_url(options.base_url)
        if resolve_provider(options.provider, base_url=options.base_url) == "local":
            raise UsageProblem("--base-url does not apply to the local provider")
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


def check_base_url(url: str) -> None:
    """Refuse a base URL that is not ``http(s)://HOST...``.

    Raises:
        UsageProblem: no scheme, another scheme, no host, a bad port, or spaces; suggests the ``http://``
            form when the value looks like ``HOST:PORT/PATH`` without credentials.
    """
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (raises ValueError for a port that is not a number in 0..65535)
        valid = (
            parts.scheme in ("http", "https") and bool(parts.hostname) and not any(c.isspace() for c in url)
        )
    except ValueError:
        valid = False
    if valid:
        return
    text = "--base-url must be an http:// or https:// URL with a host, e.g. http://127.0.0.1:11434/v1"
    if "://" not in url and "@" not in url and "?" not in url and not any(c.isspace() for c in url):
        text += f" (did you mean http://{url} ?)"
    raise UsageProblem(text)


def tool_output_chars(context_max_chars: int | None) -> int:
    """The cap of one built-in tool result: ``TOOL_OUTPUT_CHARS``, or half of the context budget
    when that is smaller, so that a tool call and its result always fit in what is sent."""
    if context_max_chars is None:
        return TOOL_OUTPUT_CHARS
    return max(MIN_TOOL_OUTPUT_CHARS, min(TOOL_OUTPUT_CHARS, context_max_chars // 2))


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
