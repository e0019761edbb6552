"""A stdio MCP server (standard library only) that stops reading its stdin at the first
``tools/call``: it answers ``initialize`` and ``tools/list``, then sleeps. For the tests of a
request that cannot be written whole."""

import json
import sys
import time

TOOL = {"name": "take", "description": "Takes a text.", "inputSchema": {"type": "object"}}

for line in sys.stdin:
    request = json.loads(line)
    method = request.get("method")
    if method == "tools/call":
        time.sleep(30)
    if "id" not in request:
        continue
    if method == "initialize":
        result = {"protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "stuck"}}
    else:
        result = {"tools": [TOOL]}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}) + "\n")
    sys.stdout.flush()
