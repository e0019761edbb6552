"""The benchmarks' MCP server written with the official ``mcp`` SDK (``MCPServer``): one tool,
``echo``, over stdio, or over streamable HTTP on 127.0.0.1. Run: ``python
bench/mcp_sdk_server.py [http PORT]``."""

import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("bench-sdk")


@server.tool()
def echo(text: str) -> str:
    """Return the text."""
    return text


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
