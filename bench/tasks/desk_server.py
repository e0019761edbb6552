"""An MCP server for the task suite's MCP set: five desk tools, standard library only.

Newline-delimited JSON-RPC on stdin/stdout (the MCP stdio transport): ``initialize``,
``tools/list``, ``tools/call`` (a fixed answer per tool, the arguments echoed in it) and ``ping``.
Each call is also appended as one JSON line to the file named by ``DESK_LOG`` (when set), so the
suite can check which tool was called with which arguments.

Run: ``python -S bench/tasks/desk_server.py``.
"""

import json
import os
import sys

TOOLS = [
    {
        "name": "get_time",
        "description": "Get the current local time in a city or time zone.",
        "inputSchema": {
            "type": "object",
            "properties": {"timezone": {"type": "string", "description": "A city or IANA time zone."}},
            "required": ["timezone"],
        },
        "annotations": {"readOnlyHint": True},
    },
    {
        "name": "roll_dice",
        "description": "Roll dice and return the numbers rolled.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "sides": {"type": "integer", "description": "Sides of each die."},
                "count": {"type": "integer", "description": "How many dice (default 1)."},
            },
            "required": ["sides"],
        },
    },
    {
        "name": "define_word",
        "description": "Look up the dictionary definition of an English word.",
        "inputSchema": {
            "type": "object",
            "properties": {"word": {"type": "string"}},
            "required": ["word"],
        },
        "annotations": {"readOnlyHint": True},
    },
    {
        "name": "add_todo",
        "description": "Add an item to the to-do list.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "title": {"type": "string", "description": "What to do."},
                "priority": {"type": "string", "enum": ["low", "normal", "high"]},
            },
            "required": ["title"],
        },
    },
    {
        "name": "search_issues",
        "description": "Search the issue tracker and return matching issues.",
        "inputSchema": {
            "type": "object",
            "properties": {"query": {"type": "string", "description": "Words to search for."}},
            "required": ["query"],
        },
        "annotations": {"readOnlyHint": True},
    },
]


def result(name: str, arguments: dict) -> str:
    if name == "get_time":
        return f"It is 14:05 in {arguments.get('timezone', '?')}."
    if name == "roll_dice":
        return f"Rolled {arguments.get('count', 1)} d{arguments.get('sides', '?')}: 4"
    if name == "define_word":
        return f"{arguments.get('word', '?')}: a word with a meaning (noun)."
    if name == "add_todo":
        return f"Added to-do #7: {arguments.get('title', '?')} ({arguments.get('priority', 'normal')})"
    if name == "search_issues":
        return f"#12 open: problem matching '{arguments.get('query', '')}'"
    return "unknown tool"


def answer(request: dict) -> dict:
    method = request.get("method")
    params = request.get("params") or {}
    if method == "initialize":
        return {
            "protocolVersion": params.get("protocolVersion", "2025-11-25"),
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": "desk", "version": "1"},
        }
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        name = params.get("name", "")
        arguments = params.get("arguments") or {}
        log = os.environ.get("DESK_LOG")
        if log:
            with open(log, "a", encoding="utf-8") as handle:
                handle.write(json.dumps({"name": name, "arguments": arguments}) + "\n")
        return {"content": [{"type": "text", "text": result(name, arguments)}], "isError": False}
    return {}


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        if "id" not in request:
            continue
        reply = {"jsonrpc": "2.0", "id": request["id"], "result": answer(request)}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
