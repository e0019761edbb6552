"""A test MCP server written with the official ``mcp`` SDK (``MCPServer``, formerly FastMCP).

Run: ``python sdk_server.py [stdio | http PORT | http-json PORT | paged] [--banner]``;
``--banner`` writes a line that is not JSON-RPC to stdout before the server starts.

Tools: ``add`` (read-only), ``fail`` (an error result), ``slow`` (sends the log message "slow
started" and creates the file named by ``MCP_TEST_MARKER``, then sleeps), ``crash`` (the process
exits mid-call), ``picture`` (an image block), ``grow`` (adds a tool and sends
``tools/list_changed``). ``paged`` runs a low-level SDK server whose ``tools/list`` returns one
tool per page.
"""

from __future__ import annotations

import os
import sys
import time

import anyio
import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ImageContent, ToolAnnotations

server = MCPServer("sdk-test", instructions="Test server for miniagent.")


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def fail(message: str) -> str:
    """Fail with the message."""
    raise ToolError(message)


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
async def slow(seconds: float, ctx: Context) -> str:
    """Sleep, then answer."""
    await ctx.info("slow started")
    marker = os.environ.get("MCP_TEST_MARKER")
    if marker:
        open(marker, "w").close()
    await anyio.sleep(seconds)
    return f"slept {seconds}"


@server.tool()
def crash() -> str:
    """Exit the process in the middle of the call."""
    sys.stderr.write("crashing on purpose\n")
    sys.stderr.flush()
    os._exit(3)


@server.tool()
def picture() -> list[object]:
    """An image and a text."""
    return [ImageContent(type="image", data="aGVsbG8=", mimeType="image/png"), "a picture"]


@server.tool()
async def grow(ctx: Context) -> str:
    """Add the tool ``extra`` and tell the client."""

    def extra() -> str:
        """An extra tool."""
        return "extra"

    server.add_tool(extra)
    await ctx.session.send_tool_list_changed()
    return "grown"


def paged() -> None:
    """A low-level SDK server whose tool list comes one tool per page."""
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server

    names = ["first", "second", "third"]

    async def list_tools(ctx: object, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        index = int(params.cursor) if params is not None and params.cursor else 0
        tool = types.Tool(name=names[index], description=f"tool {index}", input_schema={"type": "object"})
        following = str(index + 1) if index + 1 < len(names) else None
        return types.ListToolsResult(tools=[tool], next_cursor=following)

    low = Server("paged", on_list_tools=list_tools)

    async def main() -> None:
        async with stdio_server() as (read, write):
            await low.run(read, write, low.create_initialization_options())

    anyio.run(main)


if __name__ == "__main__":
    if "--banner" in sys.argv:
        os.write(1, b"Starting the server... (a banner on stdout)\n")
        time.sleep(0.01)
    mode = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if mode in ("http", "http-json"):
        json_response = mode == "http-json"  # answers as application/json instead of SSE
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]), json_response=json_response)
    elif mode == "paged":
        paged()
    else:
        server.run()
