"""A synchronous Model Context Protocol (MCP) client: MCP servers' tools as ``Tool``s.

Usage::

    from miniagent.mcp import StdioMCPServer

    with StdioMCPServer("uvx", ["mcp-server-time"], name="time") as server:
        result = run_agent(client=client, system="", tools=server.tools(), user="What time is it?")

- ``StdioMCPServer(command, args=(), env=None, cwd=None)``: a child process spoken to over
  stdin/stdout (standard library only).
- ``HTTPMCPServer(url, headers=None, auth=None)``: the streamable HTTP transport (extra
  ``http``), with OAuth when ``auth`` is an ``auth.OAuth`` (interactive login, client
  credentials, enterprise-managed).
- ``load_mcp_config(path)``: the ``{"mcpServers": {...}}`` file of Claude Code / Claude Desktop.
- ``mcp_tools(servers, reserved=())``: the tools of several servers with unique names
  (``SERVER__TOOL`` where names collide).
- ``MCPError``: what a server's failure raises (tools turn it into an error result).
- Every server takes ``roots``, ``elicitation`` and ``sampling``: what the client offers the
  server's own requests (``_requests``).

Everything runs in the caller's thread; a tool call waits on the run's cancel event and, when it
is set, sends ``notifications/cancelled`` and returns within about 20 ms. Importing this package
imports only the standard library (``requests`` is imported by ``HTTPMCPServer.start``).
"""

from ._errors import MCPError
from .config import load_mcp_config
from .remote import HTTPMCPServer
from .servers import MCPServerBase, StdioMCPServer, mcp_tools

__all__ = [
    "HTTPMCPServer",
    "MCPError",
    "MCPServerBase",
    "StdioMCPServer",
    "load_mcp_config",
    "mcp_tools",
]
