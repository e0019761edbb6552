"""``miniagent run --mcp-config FILE``: the CLI with real MCP servers (the published
``mcp-server-time`` and a small standard-library server whose tool is not read-only) and a
scripted model (a loopback OpenAI-compatible server)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.cli_helpers import FakeOpenAI, model_args, run_cli, text_turn, tool_turn

pytest.importorskip("mcp")
pytest.importorskip("mcp_server_time")
pytestmark = pytest.mark.timeout(90)

ASKING_SERVER = str(Path(__file__).parent / "asking_server.py")  # stdlib: starts at once
HOSTILE_SERVER = str(Path(__file__).parent / "hostile_server.py")


def _config(tmp_path: Path, servers: dict[str, Any], name: str = "servers.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def test_what_time_is_it_in_utc_with_a_published_server(tmp_path: Path) -> None:
    workspace = tmp_path / "work"
    workspace.mkdir()
    config = _config(
        tmp_path,
        {
            "time": {"command": sys.executable, "args": ["-m", "mcp_server_time"]},
            "talker": {"command": sys.executable, "args": [ASKING_SERVER]},
        },
    )
    turns = [
        tool_turn("get_current_time", {"timezone": "UTC"}, "call_1"),
        tool_turn("talk", {}, "call_2"),  # not marked read-only: refused under --approve read-only
        text_turn("It is noon in UTC."),
    ]
    with FakeOpenAI(turns) as server:
        args = ["run", "--mcp-config", str(config), "--approve", "read-only", *model_args(server, workspace)]
        result = run_cli([*args, "what time is it in UTC?"], tmp_path, timeout=80)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "It is noon in UTC.\n"
    offered = {tool["function"]["name"] for tool in server.requests[0]["tools"]}
    assert {"get_current_time", "convert_time", "talk", "read_file"} <= offered
    time_result = server.requests[1]["messages"][-1]
    assert time_result["role"] == "tool" and '"timezone": "UTC"' in time_result["content"]
    refused = server.requests[2]["messages"][-1]["content"]
    assert refused.startswith("refused: talk may change files")


def test_a_bad_config_file_is_a_usage_error(tmp_path: Path) -> None:
    config = _config(tmp_path, {"x": {"type": "sse", "url": "http://127.0.0.1:9/sse"}})
    result = run_cli(["run", "--mcp-config", str(config), "hi"], tmp_path)
    assert result.returncode == 64
    assert f"--mcp-config {config}: server 'x': type \"sse\"" in result.stderr
    assert result.stdout == ""


def test_a_server_that_cannot_start_exits_1_naming_it(tmp_path: Path) -> None:
    workspace = tmp_path / "work"
    workspace.mkdir()
    config = _config(tmp_path, {"ghost": {"command": "no-such-mcp-server-command"}})
    with FakeOpenAI([]) as server:
        args = ["run", "--mcp-config", str(config), *model_args(server, workspace), "hi"]
        result = run_cli(args, tmp_path)
    assert result.returncode == 1
    assert "MCP server 'ghost' cannot start: no-such-mcp-server-command not found" in result.stderr
    assert server.requests == []


def test_a_key_the_server_prints_reaches_no_output_no_log_and_no_json(tmp_path: Path) -> None:
    workspace = tmp_path / "work"
    workspace.mkdir()
    secret = "tok-0c4e8a2f6b1d9357"
    env = {"LEAK_NAME": "SERVICE_TOKEN", "SERVICE_TOKEN": secret}
    config = _config(tmp_path, {"leaky": {"command": sys.executable, "args": [HOSTILE_SERVER], "env": env}})
    log_file = tmp_path / "run.log"
    turns = [tool_turn("leak", {}, "call_1"), text_turn("Done.")]
    with FakeOpenAI(turns) as server:
        args = ["run", "-v", "--json", "--log-file", str(log_file), "--mcp-config", str(config)]
        args += ["--approve", "all", *model_args(server, workspace), "leak it"]
        result = run_cli(args, tmp_path, timeout=80)
    assert result.returncode == 0, result.stderr
    sent = json.dumps(server.requests)
    assert "key ***" in sent  # the tool result the model saw
    for text in (result.stdout, result.stderr, log_file.read_text(), sent):
        assert secret not in text
    assert "my key is ***" in log_file.read_text()
    assert "\x1b]0;pwned" not in result.stderr  # the server's escape is shown, not executed
    assert "\\x1b]0;pwned" in result.stderr  # -v shows the stderr line


def test_the_workspace_is_the_one_root_the_servers_are_offered(tmp_path: Path) -> None:
    workspace = tmp_path / "work"
    workspace.mkdir()
    config = _config(tmp_path, {"asker": {"command": sys.executable, "args": [HOSTILE_SERVER]}})
    with FakeOpenAI([tool_turn("ask", {}, "call_1"), text_turn("Done.")]) as server:
        args = ["run", "--mcp-config", str(config), "--approve", "all", *model_args(server, workspace), "ask"]
        result = run_cli(args, tmp_path, timeout=80)
    assert result.returncode == 0, result.stderr
    answers = json.loads(server.requests[1]["messages"][-1]["content"])
    assert answers["roots"]["result"]["roots"] == [{"uri": workspace.resolve().as_uri(), "name": "work"}]
    assert answers["elicitation"]["result"] == {"action": "decline"}
