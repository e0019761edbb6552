"""``load_mcp_config``: the Claude Code / Claude Desktop ``mcpServers`` file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from miniagent.mcp import HTTPMCPServer, MCPError, StdioMCPServer, load_mcp_config


def _write(tmp_path: Path, document: Any) -> Path:
    path = tmp_path / "servers.json"
    path.write_text(json.dumps(document) if not isinstance(document, str) else document)
    return path


def test_stdio_and_http_servers_with_variables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_TOKEN", "secret-value-123")
    monkeypatch.setenv("ZONE", "UTC")
    monkeypatch.delenv("UNSET_THING", raising=False)
    path = _write(
        tmp_path,
        {
            "mcpServers": {
                "time": {
                    "command": "uvx",
                    "args": ["mcp-server-time", "--local-timezone=${ZONE}"],
                    "env": {"TZ": "${ZONE}", "MODE": "${UNSET_THING:-fast}"},
                    "cwd": "sub",
                },
                "remote": {
                    "type": "http",
                    "url": "http://127.0.0.1:9/mcp",
                    "headers": {"Authorization": "Bearer ${MY_TOKEN}"},
                },
                "off": {"command": "x", "disabled": True},
            }
        },
    )
    servers = load_mcp_config(path)
    assert list(servers) == ["time", "remote"]
    time_server, remote = servers["time"], servers["remote"]
    assert isinstance(time_server, StdioMCPServer) and isinstance(remote, HTTPMCPServer)
    assert time_server.command == "uvx"
    assert time_server.args == ("mcp-server-time", "--local-timezone=UTC")
    assert time_server.env == {"TZ": "UTC", "MODE": "fast"}
    assert time_server.cwd == str(tmp_path.resolve() / "sub")
    assert time_server.name == "time"
    assert remote.headers == {"Authorization": "Bearer secret-value-123"}
    assert "secret-value-123" not in repr(remote)


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ("{not json", "not JSON"),
        ({"servers": {}}, 'expected an object with "mcpServers"'),
        ({"mcpServers": {"a": {"args": []}}}, "server 'a': 'command' must be a non-empty string"),
        ({"mcpServers": {"a": {"command": "x", "args": "y"}}}, '"args" must be a list of strings'),
        ({"mcpServers": {"a": {"type": "sse", "url": "http://h/sse"}}}, 'type "sse"'),
        ({"mcpServers": {"a": {"type": "http", "url": "ftp://h"}}}, "http:// or https://"),
        ({"mcpServers": {"a": {"command": "x", "env": {"K": "${NOPE_NOT_SET}"}}}}, "${NOPE_NOT_SET}"),
    ],
)
def test_bad_files_name_the_file_server_and_field(tmp_path: Path, document: Any, message: str) -> None:
    path = _write(tmp_path, document)
    with pytest.raises(MCPError) as caught:
        load_mcp_config(path)
    assert caught.value.kind == "config"
    assert str(caught.value).startswith(str(path))
    assert message in str(caught.value)


def test_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(MCPError, match="cannot read"):
        load_mcp_config(tmp_path / "none.json")
