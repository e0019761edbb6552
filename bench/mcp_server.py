"""A minimal MCP server for the benchmarks: standard library only, answers every request at once.

Newline-delimited JSON-RPC on stdin/stdout (the MCP stdio transport). It answers ``initialize``
(with the version asked for), ``tools/list`` (one tool, ``echo``), ``tools/call`` (the ``text``
argument back as a text block) and ``ping``; notifications are read and ignored. Its own cost per
call is a ``json.loads``, a ``json.dumps`` and two pipe operations, so a client's overhead shows.

Run: ``python -S bench/mcp_server.py``.
"""

import json
import sys

ECHO = {
    "name": "echo",
    "description": "Return the text.",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    "annotations": {"readOnlyHint": True},
}


def answer(request: dict) -> dict:
    method = request.get("method")
    params = request.get("params") or {}
    if method == "initialize":
        return {
            "protocolVersion": params.get("protocolVersion", "2025-11-25"),
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": "bench-minimal", "version": "1"},
        }
    if method == "tools/list":
        return {"tools": [ECHO]}
    if method == "tools/call":
        text = (params.get("arguments") or {}).get("text", "")
        return {"content": [{"type": "text", "text": text}], "isError": False}
    return {}


def main() -> None:
    read = sys.stdin.buffer.readline
    write = sys.stdout.buffer.write
    flush = sys.stdout.buffer.flush
    while True:
        line = read()
        if not line:
            return
        request = json.loads(line)
        if "id" not in request:
            continue
        response = {"jsonrpc": "2.0", "id": request["id"], "result": answer(request)}
        write(json.dumps(response).encode() + b"\n")
        flush()


if __name__ == "__main__":
    main()
