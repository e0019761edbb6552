"""A stdio MCP server (standard library only) whose ``tools/call`` answer is as big as asked.

Run: ``python big_server.py SHAPE BYTES``. ``SHAPE``: ``text`` (one text block of that many
characters), ``blocks`` (many one-character text blocks: the message that costs the most memory
once decoded). ``BYTES`` is the size of the message's ``result``, roughly. The second call gets a
small answer, so a restarted server can be told from a stopped one.
"""

import json
import sys

shape, size = sys.argv[1], int(sys.argv[2])
calls = 0


def answer(request_id: object, result: dict) -> None:
    message = {"jsonrpc": "2.0", "id": request_id, "result": result}
    sys.stdout.write(json.dumps(message, separators=(",", ":")) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    request = json.loads(line)
    if "id" not in request:
        continue
    method = request.get("method")
    if method == "initialize":
        answer(request["id"], {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}})
    elif method == "tools/list":
        answer(request["id"], {"tools": [{"name": "big", "inputSchema": {"type": "object"}}]})
    else:
        calls += 1
        if calls > 1 or request["params"]["arguments"].get("small"):
            answer(request["id"], {"content": [{"type": "text", "text": "small"}]})
        elif shape == "text":
            answer(request["id"], {"content": [{"type": "text", "text": "x" * size}]})
        else:
            block = {"type": "text", "text": "x"}
            each = len(json.dumps(block, separators=(",", ":"))) + 1  # and its comma
            answer(request["id"], {"content": [block] * (size // each + 1)})
