"""Checks of the command line that come before anything costly (client start, model requests).

A failed check raises ``UsageProblem``: ``run_cli`` prints it as one ``miniagent: error:`` line
and exits 64 (``EXIT_USAGE``), with nothing on stdout.
"""

from __future__ import annotations

from .defaults import resolve_provider
from .options import Options

__all__ = ["UsageProblem", "check_mcp_configs", "check_options", "valid_text"]


class UsageProblem(Exception):
    """A usage problem found after parsing (exit 64); the message is the whole explanation."""


def check_options(options: Options) -> None:
    """Refuse option combinations that cannot work.

    Raises:
        UsageProblem: e.g. ``--base-url`` with the local provider.
    """
    if options.base_url and resolve_provider(options.provider, base_url=options.base_url) == "local":
        raise UsageProblem("--base-url does not apply to the local provider")
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


def valid_text(text: str) -> str:
    """Replace what was undecodable in argv or stdin (surrogate escapes) with U+FFFD."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
