"""A stdio MCP server (standard library only) that talks back during ``tools/call``: before it
answers, it sends the client a ``ping`` request, a ``sampling/createMessage`` request (which this
client does not offer), a log message and ``notifications/tools/list_changed``, and reports the
client's answers in the result. Its second tools/list adds a tool. Two unlisted tools:
``hang`` never answers; ``heard`` returns the notifications received so far (JSON)."""

import json
import sys

listed = 0
heard: list[dict] = []


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def ask(request_id: str, method: str) -> dict:
    send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": {}})
    return json.loads(sys.stdin.readline())


result: dict
for line in sys.stdin:
    request = json.loads(line)
    method = request.get("method")
    if "id" not in request:
        heard.append({"method": method, **(request.get("params") or {})})
        continue
    name = (request.get("params") or {}).get("name")
    if name == "hang":
        continue
    if name == "heard":
        result = {"content": [{"type": "text", "text": json.dumps(heard)}]}
    elif method == "initialize":
        result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {"listChanged": True}}}
    elif method == "tools/list":
        listed += 1
        names = ["talk"] if listed == 1 else ["talk", "later"]
        result = {"tools": [{"name": n, "inputSchema": {"type": "object"}} for n in names]}
    else:
        ping = ask("s1", "ping")
        sampling = ask("s2", "sampling/createMessage")
        send(
            {
                "jsonrpc": "2.0",
                "method": "notifications/message",
                "params": {"level": "warning", "data": "careful"},
            }
        )
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        refused = sampling["error"]["code"]
        text = f"ping {ping.get('id')} {ping.get('result')}; sampling {sampling.get('id')} {refused}"
        result = {"content": [{"type": "text", "text": text}]}
    send({"jsonrpc": "2.0", "id": request["id"], "result": result})
