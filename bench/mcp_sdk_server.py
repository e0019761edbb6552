"""The benchmarks' MCP server written with the official ``mcp`` SDK (``MCPServer``): one tool,
``echo``, over stdio. Run: ``python bench/mcp_sdk_server.py``."""

from mcp.server.mcpserver import MCPServer

server = MCPServer("bench-sdk")


@server.tool()
def echo(text: str) -> str:
    """Return the text."""
    return text


if __name__ == "__main__":
    server.run()
