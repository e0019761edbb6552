"""The MCP client against hostile or broken stdio servers (``tests/mcp/hostile_server.py``, a
real child process), and what reaches the model from them: one regression input per kind."""

from __future__ import annotations

import json
import logging
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from miniagent.mcp import MCPError, StdioMCPServer
from miniagent.mcp._tools import exposed_names
from miniagent.mcp._wire import outline
from miniagent.testing import ScriptedClient

pytestmark = pytest.mark.timeout(60)

HOSTILE = str(Path(__file__).parent / "hostile_server.py")
SECRET = "tok-5f3c9a1e7b2d4068"


class _Lines(logging.Handler):
    """Keeps every ``miniagent.mcp`` log line."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.fixture
def lines() -> Iterator[_Lines]:
    handler = _Lines()
    logger = logging.getLogger("miniagent.mcp")
    level = logger.level
    logger.setLevel(logging.DEBUG)
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def _server(*args: str, **kwargs: object) -> StdioMCPServer:
    return StdioMCPServer(sys.executable, [HOSTILE, *args], name="hostile", **kwargs)  # type: ignore[arg-type]


# --- a hostile or broken server ----------------------------------------------------------------


def test_a_flood_of_server_requests_with_stdin_unread_ends_at_the_timeout() -> None:
    # 20,000 pings, then the server stops reading: our replies fill the pipe. Every write has
    # the request's deadline (this blocked forever, past every timeout and cancel).
    with _server(timeout=2) as server:
        with pytest.raises(MCPError) as caught:
            server.call_tool("flood")
        assert caught.value.kind == "timeout"
        assert str(caught.value) == "MCP server 'hostile' did not answer tools/call within 2 s"


def test_a_flood_of_server_requests_with_stdin_unread_ends_at_the_cancel() -> None:
    cancel = threading.Event()
    with _server() as server:
        timer = threading.Timer(0.5, cancel.set)  # whenever it comes, the call must end with it
        timer.start()
        with pytest.raises(MCPError) as caught:
            server.call_tool("flood", cancel=cancel)
        timer.join()
        assert caught.value.kind == "cancelled"


def test_a_reply_nested_100000_deep_is_a_protocol_error_not_a_crash() -> None:
    with _server() as server:
        tools = {t.name: t for t in server.tools()}
        result = tools["deep"].execute({}, None)
        assert result.is_error
        assert result.content == "MCP server 'hostile' sent a message nested too deeply to read"
        assert server.call_tool("other").content == "ok"  # the stream is still in step


def test_deep_lines_that_are_not_the_response_are_skipped_and_the_call_answered(lines: _Lines) -> None:
    """A deep notification and a deep response to another id are not the awaited response
    (``_wire.outline`` tells without decoding them): skipped like any other line."""
    with _server() as server:
        assert server.call_tool("noise").content == "ok after noise"
        assert server.call_tool("other").content == "ok"
    skipped = [line for line in lines.lines if "ignored a line on stdout that is not JSON-RPC" in line]
    assert len(skipped) == 2


_SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=10,
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.text(), _VALUES, max_size=6), st.sampled_from([None, 0, 2]), st.booleans())
def test_outline_reads_an_object_as_json_does_with_nested_values_left_unread(
    value: dict[str, object], indent: int | None, ascii_only: bool
) -> None:
    text = json.dumps(value, indent=indent, ensure_ascii=ascii_only)
    expected = {key: None if isinstance(item, (dict, list)) else item for key, item in value.items()}
    assert outline(f" {text}\n") == expected


@pytest.mark.parametrize(
    "text", ["", "[]", '"id"', "{", '{"id":1', '{"id":1}}', '{"id":[1}', '{"a":1} 2', "{1:2}", '{"a" 1}']
)
def test_outline_of_what_is_not_one_object_is_none(text: str) -> None:
    assert outline(text) is None


def test_a_listing_of_25000_tools_is_named_in_linear_time() -> None:
    with _server("many") as server:
        tools = server.tools(reserved={"tool_1"})
    names = [t.name for t in tools]
    assert len(names) == len(set(names)) == 25_000
    assert "hostile__tool_1" in names and "tool_3" in names
    assert "tool_5" not in names and {"hostile__tool_5", "hostile__tool_5_2"} <= set(names)


def test_naming_does_not_grow_quadratically() -> None:
    # 200,000 distinct names: a count() per name (the old rule) would take minutes.
    names = [f"t{i}" for i in range(200_000)]
    assert exposed_names("s", names, ()) == names


def test_secrets_of_the_env_never_reach_errors_logs_or_results(lines: _Lines) -> None:
    env = {"LEAK_NAME": "MY_SERVICE_TOKEN", "MY_SERVICE_TOKEN": SECRET}
    with _server(env=env, timeout=0.3) as server:
        result = server.call_tool("leak")
        assert result.content == "key ***"
        with pytest.raises(MCPError) as caught:  # a timeout quotes the last stderr lines
            server.call_tool("progress")
    assert "my key is ***" in str(caught.value)
    logged = "\n".join(lines.lines)
    assert "using key ***" in logged and "my key is ***" in logged
    assert SECRET not in logged + str(caught.value)


def test_terminal_escapes_of_the_server_are_shown_as_escapes_in_log_lines(lines: _Lines) -> None:
    env = {"LEAK_NAME": "MY_SERVICE_TOKEN", "MY_SERVICE_TOKEN": SECRET}
    with _server(env=env) as server:
        server.call_tool("leak")
    logged = "\n".join(lines.lines)
    assert "\x1b" not in logged and "\x07" not in logged
    assert "\\x1b]0;pwned\\x07" in logged  # stderr
    assert "\\x1b[2J" in logged  # the log notification


# --- what reaches the model --------------------------------------------------------------------


def test_an_image_repeated_in_structured_content_never_reaches_the_model_as_base64() -> None:
    with _server() as server:
        text = server.call_tool("picture").content
    assert "iVBORw0KGgo" not in text
    assert text.startswith("[image: image/png, 825 bytes]\n")
    assert json.loads(text.split("\n", 1)[1]) == {
        "result": "[image: image/png, 825 bytes]",
        "raw": "[base64 data, 825 bytes]",
    }


def test_list_changed_sent_while_idle_is_seen_by_the_next_listing(tmp_path: Path) -> None:
    marker = tmp_path / "sent"
    with _server(env={"MCP_TEST_MARKER": str(marker)}) as server:
        assert "later" not in {t.name for t in server.tools()}
        assert server.call_tool("idle").content == "ok"
        deadline = time.monotonic() + 30
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.005)  # polls a fact: the server wrote the notification
        assert "later" in {t.name for t in server.tools()}


# --- the server's own requests -----------------------------------------------------------------


def test_roots_are_the_workspace_elicitation_is_declined_sampling_refused(tmp_path: Path) -> None:
    with _server(roots=[tmp_path]) as server:
        answers = json.loads(server.call_tool("ask").content)
    root = {"uri": tmp_path.resolve().as_uri(), "name": tmp_path.name}
    assert answers["roots"]["result"] == {"roots": [root]}
    assert answers["elicitation"]["result"] == {"action": "decline"}
    assert answers["sampling"]["error"]["code"] == -32601


def test_elicitation_and_sampling_when_the_application_offers_them() -> None:
    asked: list[dict[str, object]] = []

    def elicit(params: dict[str, object]) -> dict[str, object]:
        asked.append(params)
        return {"action": "accept", "content": {}}

    model = ScriptedClient([["Hi there."]])
    with _server(elicitation=elicit, sampling=model) as server:
        answers = json.loads(server.call_tool("ask").content)
    assert asked[0]["message"] == "Name?"
    assert answers["elicitation"]["result"] == {"action": "accept", "content": {"name": "Ada"}}
    sampled = answers["sampling"]["result"]
    assert sampled["content"] == {"type": "text", "text": "Hi there."}
    assert sampled["role"] == "assistant"
    assert model.requests[0].system == "Be brief."
    assert [m.content for m in model.requests[0].messages] == ["Say hi"]


def test_progress_notifications_start_the_timeout_again_when_asked_for(tmp_path: Path) -> None:
    seen: list[object] = []
    with _server(timeout=1.0) as server:
        done = server.call_tool("progress", progress=lambda params: seen.append(params["progress"]))
        with pytest.raises(MCPError) as caught:
            server.call_tool("progress")  # 2 s of work without progress: the timeout ends it
        assert caught.value.kind == "timeout"
    assert done.content == "done"
    assert seen == [1, 2, 3, 4, 5, 6, 7, 8]
