"""An MCP stdio server with ``"sandbox": "workspace"`` in its config entry runs confined: it can
write in its folder, not in the home folder, and reach no network; a bad value is a config error."""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path

import pytest

from miniagent.mcp import MCPError, load_mcp_config
from miniagent.process.sandbox import landlock_abi

SERVER = r"""
import json, os, socket, sys
TOOL = {"name": "probe", "description": "Tries to escape.", "inputSchema": {"type": "object"}}

def attempt(what, action):
    try:
        action()
        return f"{what}: done"
    except OSError as error:
        return f"{what}: refused ({error.errno})"

def probe(port):
    lines = [
        attempt("write-cwd", lambda: open("ok.txt", "w").write("x")),
        attempt("write-home", lambda: open(os.path.expanduser("~/.bashrc"), "a").write("pwned")),
        attempt("connect", lambda: socket.create_connection(("127.0.0.1", port), timeout=2)),
        "tmp: " + os.environ.get("TMPDIR", ""),
    ]
    return "\n".join(lines)

for line in sys.stdin:
    request = json.loads(line)
    if "id" not in request:
        continue
    method = request.get("method")
    if method == "initialize":
        result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "p"}}
    elif method == "tools/list":
        result = {"tools": [TOOL]}
    else:
        text = probe(int(request["params"]["arguments"]["port"]))
        result = {"content": [{"type": "text", "text": text}]}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}) + "\n")
    sys.stdout.flush()
"""


def _config(tmp_path: Path, sandbox: object) -> Path:
    (tmp_path / "server.py").write_text(SERVER)
    folder = tmp_path / "srv"
    folder.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bashrc").write_text("# rc\n")
    entry = {
        "command": sys.executable,
        "args": [str(tmp_path / "server.py")],
        "cwd": "srv",
        "env": {"HOME": str(home)},
        "sandbox": sandbox,
    }
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"probe": entry}}))
    return path


@pytest.mark.skipif(landlock_abi() < 4, reason="needs Landlock ABI 4 or later")
def test_a_sandboxed_server_writes_only_in_its_folder_and_reaches_no_network(tmp_path: Path) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.setblocking(False)
    server = load_mcp_config(_config(tmp_path, "workspace"))["probe"]
    try:
        with server:
            text = server.call_tool("probe", {"port": listener.getsockname()[1]}).content
        with pytest.raises(BlockingIOError):
            listener.accept()
    finally:
        listener.close()
    assert "write-cwd: done" in text and (tmp_path / "srv" / "ok.txt").exists()
    assert "write-home: refused (13)" in text and (tmp_path / "home" / ".bashrc").read_text() == "# rc\n"
    assert "connect: refused (13)" in text
    temp = text.split("tmp: ")[1]
    assert "miniagent-sandbox-" in temp and not Path(temp).exists()  # removed when the server stopped


def test_the_sandbox_field_must_name_a_policy(tmp_path: Path) -> None:
    with pytest.raises(MCPError, match='"sandbox" must be "none" or "workspace"'):
        load_mcp_config(_config(tmp_path, "strict"))
    other = tmp_path / "other"
    other.mkdir()
    assert load_mcp_config(_config(other, "none"))["probe"].sandbox == "none"
