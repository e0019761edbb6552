"""The MCP client against real servers over stdio: one written with the official ``mcp`` SDK
(``tests/mcp/sdk_server.py``) and plain processes that misbehave (never answer, exit at once,
stop reading, are not found). The published ``mcp-server-time`` runs in the CLI test
(``test_mcp_cli.py``) and the docs' example (docs/src/how-to/mcp.md)."""

from __future__ import annotations

import io
import json
import logging
import os
import pickle
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from miniagent import ToolCall, run_agent
from miniagent.approval import ask_on_terminal, read_only
from miniagent.mcp import MCPError, StdioMCPServer, mcp_tools
from miniagent.mcp._tools import exposed_names, result_text, safe_name
from miniagent.process.groups import group_alive, running_groups
from miniagent.testing import ScriptedClient

pytest.importorskip("mcp")
pytestmark = pytest.mark.timeout(60)

SDK_SERVER = str(Path(__file__).parent / "sdk_server.py")


class _Seen(logging.Handler):
    """Sets ``event`` when a ``miniagent.mcp`` log line contains ``text``."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text
        self.event = threading.Event()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        line = record.getMessage()
        self.lines.append(line)
        if self.text in line:
            self.event.set()


@pytest.fixture
def seen() -> Iterator[_Seen]:
    handler = _Seen("slow started")
    logger = logging.getLogger("miniagent.mcp")
    level = logger.level
    logger.setLevel(logging.INFO)
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


@pytest.fixture(scope="module")
def sdk() -> Iterator[StdioMCPServer]:
    """One SDK server for the module; it prints a banner (not JSON-RPC) on stdout first."""
    with StdioMCPServer(sys.executable, [SDK_SERVER, "stdio", "--banner"], name="sdk") as server:
        yield server


# --- lifecycle and listing -------------------------------------------------------------------


def test_handshake_and_listing_through_a_banner_on_stdout(sdk: StdioMCPServer) -> None:
    assert sdk.protocol_version == "2025-11-25"
    assert sdk.server_info["name"] == "sdk-test"
    assert sdk.instructions == "Test server for miniagent."
    tools = {t.name: t for t in sdk.tools()}
    assert {"add", "fail", "slow", "crash", "picture", "grow"} <= set(tools)
    assert tools["add"].description == "Add two integers."
    assert tools["add"].input_schema["required"] == ["a", "b"]
    assert tools["add"].read_only is True
    assert tools["fail"].read_only is False
    sdk.ping()


def test_a_call_and_results(sdk: StdioMCPServer) -> None:
    tools = {t.name: t for t in sdk.tools()}
    assert tools["add"].execute({"a": 2, "b": 3}, None).content == "5"
    picture = tools["picture"].execute({}, None)
    assert picture.content == "[image: image/png, 5 bytes]\na picture"
    assert picture.is_error is False


def test_an_error_result_and_an_unknown_tool(sdk: StdioMCPServer) -> None:
    failed = sdk.call_tool("fail", {"message": "the disk is full"})
    assert failed.is_error is True
    assert "the disk is full" in failed.content
    unknown = sdk.call_tool("no_such_tool", {})
    assert unknown.is_error is True
    assert "no_such_tool" in unknown.content


def test_list_changed_is_honoured_on_the_next_listing(sdk: StdioMCPServer) -> None:
    assert "extra" not in {t.name for t in sdk.tools()}
    assert sdk.call_tool("grow").content == "grown"
    tools = {t.name: t for t in sdk.tools()}
    assert tools["extra"].execute({}, None).content == "extra"


def test_pagination_follows_next_cursor() -> None:
    with StdioMCPServer(sys.executable, [SDK_SERVER, "paged"], name="paged") as server:
        assert [t.name for t in server.tools()] == ["first", "second", "third"]


def test_colliding_names_get_the_server_prefix(sdk: StdioMCPServer) -> None:
    names = {t.name for t in sdk.tools(reserved={"add", "read_file"})}
    assert "sdk__add" in names and "add" not in names and "fail" in names
    assert {t.name for t in mcp_tools([sdk], reserved={"fail"})} >= {"add", "sdk__fail"}


# --- cancel and timeouts ---------------------------------------------------------------------


def test_cancel_in_a_run_returns_within_200_ms_as_aborted_during_execution(
    sdk: StdioMCPServer, seen: _Seen
) -> None:
    cancel = threading.Event()
    stopped: list[float] = []

    def cancel_when_the_tool_runs() -> None:
        assert seen.event.wait(30)
        stopped.append(time.monotonic())
        cancel.set()

    helper = threading.Thread(target=cancel_when_the_tool_runs)
    helper.start()
    result = run_agent(
        client=ScriptedClient([[ToolCall("c1", "slow", {"seconds": 30})]]),
        system="",
        tools=sdk.tools(),
        user="wait",
        max_turns=4,
        cancel=cancel,
    )
    returned = time.monotonic()
    helper.join()
    assert result.stop_reason == "aborted"
    assert result.messages[-1].content == "aborted during execution"
    assert returned - stopped[0] < 0.2
    assert sdk.call_tool("add", {"a": 1, "b": 1}).content == "2"  # the server is still usable


def test_a_slow_call_times_out_with_an_error_result(sdk: StdioMCPServer) -> None:
    started = time.monotonic()
    with pytest.raises(MCPError) as caught:
        sdk.call_tool("slow", {"seconds": 30}, timeout=0.3)
    assert time.monotonic() - started < 5
    assert caught.value.kind == "timeout"
    assert "did not answer tools/call within 0.3 s" in str(caught.value)


# --- servers that fail -----------------------------------------------------------------------


def test_a_server_crashing_mid_call_gives_an_error_result_and_the_next_call_restarts_it() -> None:
    # The shell leaves a child (sleep) in the group that holds stdout open after the server
    # died: the crash must still be seen at once, and close() must stop the child too.
    command = ["-c", f"sleep 30 & exec {sys.executable} {SDK_SERVER}"]
    with StdioMCPServer("/bin/sh", command, name="crashy") as server:
        tools = {t.name: t for t in server.tools()}
        started = time.monotonic()
        crashed = tools["crash"].execute({}, None)
        assert time.monotonic() - started < 10
        assert crashed.is_error is True
        assert "exited with code 3" in crashed.content
        assert "crashing on purpose" in crashed.content
        assert tools["add"].execute({"a": 20, "b": 22}, None).content == "42"
        session = server._session
        assert session is not None
        pgid = session.transport.process.pgid  # type: ignore[attr-defined]
        assert group_alive(pgid)
        assert pgid in running_groups()  # the CLI's emergency exit reaches it
    assert not group_alive(pgid)
    assert pgid not in running_groups()


def test_a_server_that_never_answers_initialize_is_bounded_and_stopped_with_its_group(
    tmp_path: Path,
) -> None:
    pid_file = tmp_path / "child.pid"
    script = f"sleep 30 & echo $! > {pid_file}; exec cat > /dev/null"
    server = StdioMCPServer("/bin/sh", ["-c", script], name="mute", startup_timeout=0.5)
    started = time.monotonic()
    with pytest.raises(MCPError) as caught:
        server.start()
    assert time.monotonic() - started < 5
    assert caught.value.kind == "timeout"
    assert str(caught.value) == "MCP server 'mute' did not answer initialize within 0.5 s"
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while _pid_alive(child) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not _pid_alive(child)


def test_a_server_that_exits_at_once_names_its_exit_and_stderr() -> None:
    script = "import sys; sys.stderr.write('missing setting FOO\\n'); sys.exit(2)"
    with pytest.raises(MCPError) as caught:
        StdioMCPServer(sys.executable, ["-c", script], name="broken").start()
    assert caught.value.kind == "closed"
    assert "exited with code 2" in str(caught.value)
    assert "missing setting FOO" in str(caught.value)


def test_a_command_that_does_not_exist() -> None:
    with pytest.raises(MCPError) as caught:
        StdioMCPServer("no-such-mcp-server-command", name="ghost").start()
    assert caught.value.kind == "start"
    assert str(caught.value) == "MCP server 'ghost' cannot start: no-such-mcp-server-command not found"


def _pid_alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


# --- approval ----------------------------------------------------------------------------------


def test_ask_approval_asks_only_for_tools_not_marked_read_only(sdk: StdioMCPServer) -> None:
    tools = sdk.tools()
    prompts = io.StringIO()
    ask = ask_on_terminal(tools, input=io.StringIO("n not now\n"), output=prompts)
    assert ask(ToolCall("c1", "add", {"a": 1, "b": 2})).approved  # readOnlyHint: no question
    assert prompts.getvalue() == ""
    refused = ask(ToolCall("c2", "grow", {}))
    assert not refused.approved and refused.reason == "refused by the user: not now"
    assert "tool call: grow()" in prompts.getvalue()
    assert not read_only(tools)(ToolCall("c3", "grow", {})).approved


# --- mapping, names, errors (no server) ------------------------------------------------------


def test_result_text_describes_every_block() -> None:
    result = {
        "content": [
            {"type": "text", "text": "hello"},
            {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
            {"type": "resource_link", "uri": "file:///a.txt", "name": "a.txt", "mimeType": "text/plain"},
            {"type": "resource", "resource": {"uri": "file:///b.txt", "text": "inside b"}},
            {"type": "resource", "resource": {"uri": "file:///c.bin", "blob": "AAAA", "mimeType": "x/y"}},
        ],
        "isError": True,
    }
    text, is_error = result_text(result)
    assert is_error is True
    assert text.split("\n") == [
        "hello",
        "[audio: audio/wav, 3 bytes]",
        "[resource link: a.txt file:///a.txt (text/plain)]",
        "[resource file:///b.txt]",
        "inside b",
        "[resource file:///c.bin: x/y, 3 bytes]",
    ]
    assert result_text({"content": [], "structuredContent": {"temp": 21}}) == ('{"temp": 21}', False)
    assert result_text({"content": []}) == ("(no content)", False)


def test_names_every_provider_accepts() -> None:
    assert safe_name("files.read") == "files_read"
    long = safe_name("x" * 100)
    assert len(long) == 64 and long.startswith("x" * 55 + "_")
    assert exposed_names("srv", ["a.b", "a_b", "c"], {"c"}) == ["srv__a_b", "srv__a_b_2", "srv__c"]


def test_mcp_error_pickles_to_an_equal_error() -> None:
    error = MCPError("boom", server="s", kind="error", code=-32602)
    copy = pickle.loads(pickle.dumps(error))
    assert copy == error and copy.code == -32602 and copy.server == "s"


def test_the_client_imports_only_the_standard_library() -> None:
    code = "import sys, miniagent.mcp; print(sorted(m for m in ('requests', 'urllib3') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_child_gets_no_secret_variables_unless_given(tmp_path: Path) -> None:
    env = dict(os.environ, MINIAGENT_TEST_API_KEY="sk-not-for-servers")
    script = (
        "import os, sys; sys.stderr.write('key=%s given=%s\\n' % "
        "(os.environ.get('MINIAGENT_TEST_API_KEY'), os.environ.get('GIVEN_TOKEN'))); sys.exit(1)"
    )
    old = dict(os.environ)
    os.environ.update(env)
    try:
        with pytest.raises(MCPError) as caught:
            StdioMCPServer(sys.executable, ["-c", script], env={"GIVEN_TOKEN": "tok"}).start()
    finally:
        os.environ.clear()
        os.environ.update(old)
    assert "key=None given=tok" in str(caught.value)


def test_a_request_cut_off_by_a_full_pipe_breaks_the_stream_and_the_next_call_restarts() -> None:
    stuck = str(Path(__file__).parent / "stuck_server.py")
    with StdioMCPServer(sys.executable, [stuck], name="stuck", timeout=0.5) as server:
        assert server.protocol_version == "2025-06-18"  # an older version is accepted
        take = server.tools()[0]
        first = server._session
        assert first is not None
        small = take.execute({"text": "x"}, None)  # written whole; the server sleeps
        assert small.is_error and "did not answer tools/call within 0.5 s" in small.content
        assert first.transport.alive()  # the stream is intact: the server merely is slow
        big = take.execute({"text": "x" * 1_000_000}, None)  # cannot be written whole
        assert big.is_error and "within 0.5 s" in big.content
        assert not first.transport.alive()
        again = take.execute({"text": "x"}, None)  # a new process: initialize, then stuck again
        assert server._session is not first and "within 0.5 s" in again.content


def test_the_servers_own_requests_and_notifications_during_a_call(seen: _Seen) -> None:
    asking = str(Path(__file__).parent / "asking_server.py")
    with StdioMCPServer(sys.executable, [asking], name="asking") as server:
        assert [t.name for t in server.tools()] == ["talk"]
        answer = server.call_tool("talk")
        assert answer.content == "ping s1 {}; sampling s2 -32601"  # ping answered, sampling refused
        assert "[asking] careful" in seen.lines  # notifications/message went to the log
        assert [t.name for t in server.tools()] == ["talk", "later"]  # list_changed honoured


def test_cancel_and_timeout_send_notifications_cancelled_with_the_request_id() -> None:
    asking = str(Path(__file__).parent / "asking_server.py")
    with StdioMCPServer(sys.executable, [asking], name="asking") as server:
        cancel = threading.Event()
        cancel.set()  # already set: the request is written, then given up at the first wait
        with pytest.raises(MCPError) as cancelled:
            server.call_tool("hang", {}, cancel)
        assert cancelled.value.kind == "cancelled"
        with pytest.raises(MCPError) as timed_out:
            server.call_tool("hang", {}, timeout=0.05)
        assert timed_out.value.kind == "timeout"
        heard = json.loads(server.call_tool("heard").content)
    assert heard == [
        {"method": "notifications/initialized"},
        {"method": "notifications/cancelled", "requestId": 2, "reason": "cancelled by the caller"},
        {"method": "notifications/cancelled", "requestId": 3, "reason": "timed out"},
    ]
