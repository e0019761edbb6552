"""Regression tests: the exact failing inputs the stress tier found, one per bug class.

Each test names the bug it pins; each failed before its fix.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from raw_server import RawServer, head, openai_text, reply
from stress_support import jsonl_lines_ok, unanswered_calls

from miniagent import (
    DoneEvent,
    Message,
    ModelRequest,
    ProviderError,
    SessionError,
    TextEvent,
    Tool,
    ToolCall,
    ToolResult,
    load_session,
    run_agent,
    tool,
)
from miniagent.net.sse import SSEEvent, iter_sse_events
from miniagent.providers import OpenAIChatClient
from miniagent.providers._errors import in_stream_error
from miniagent.providers.anthropic import map_messages_stream
from miniagent.providers.openai import map_chat_stream
from miniagent.session import SessionFile
from miniagent.testing import ScriptedClient
from miniagent.toolbox import default_tools

KEY = "sk-stress-7f3a9c1e5b2d4f6a8c0e91d7"


def test_sse_retry_field_with_thousands_of_digits_is_not_an_error() -> None:
    """Found by fuzzing: ``int()`` refuses more than 4,300 digits (ValueError out of the decoder)."""
    body = b"retry: " + b"9" * 5000 + b"\ndata: x\n\n"
    events = list(iter_sse_events([body]))
    assert [e.data for e in events] == ["x"]


@pytest.mark.parametrize("choices", [1, True, None, "text", {"a": 1}])
def test_openai_chunk_whose_choices_is_not_a_list(choices: object) -> None:
    """Found by fuzzing: ``for choice in chunk.get("choices") or ()`` raised TypeError on 1/True."""
    chunks = [
        {"choices": choices},
        {"choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop"}]},
    ]
    events = list(map_chat_stream([SSEEvent("message", json.dumps(c)) for c in chunks]))
    assert events[0] == TextEvent("ok") and isinstance(events[-1], DoneEvent)


@pytest.mark.parametrize("kind", ["content_block_start", "content_block_delta", "content_block_stop"])
@pytest.mark.parametrize("index", [[0], {"": False}])
def test_anthropic_event_with_an_unhashable_index(kind: str, index: object) -> None:
    """Found by fuzzing: a list/dict ``index`` used as a dict key raised TypeError."""
    tool_start = {
        "type": "content_block_start",
        "index": 0,
        "content_block": {"type": "tool_use", "id": "a", "name": "f"},
    }
    odd = {
        "content_block_start": {
            "type": kind,
            "index": index,
            "content_block": {"type": "tool_use", "id": "b", "name": "g"},
        },
        "content_block_delta": {
            "type": kind,
            "index": index,
            "delta": {"type": "input_json_delta", "partial_json": "{"},
        },
        "content_block_stop": {"type": kind, "index": index},
    }[kind]
    payloads = [
        tool_start,
        odd,
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}},
        {"type": "message_stop"},
    ]
    try:
        events = list(map_messages_stream([SSEEvent(p["type"], json.dumps(p)) for p in payloads]))
    except ProviderError:
        return
    assert isinstance(events[-1], DoneEvent)


@pytest.mark.parametrize("mapper", [map_chat_stream, map_messages_stream])
def test_broken_event_data_is_redacted_in_the_error_text(mapper: object) -> None:
    """Found by the secrets test: the start of a non-JSON ``data:`` line went into the error text
    unredacted (a server echoing headers in a broken event leaked the key)."""
    event = SSEEvent("message", f'{{"echo": "{KEY}" broken')
    with pytest.raises(ProviderError) as raised:
        list(mapper([event], secrets=(KEY,)))  # type: ignore[operator]
    assert "7f3a9c1e" not in str(raised.value)


@pytest.mark.parametrize("pad", [466, 471, 490])
def test_a_key_cut_by_the_error_text_limit_is_still_redacted(pad: int) -> None:
    """Found by the secrets test: error texts were truncated BEFORE redaction, so a key crossing
    the 500-character cut lost its tail, no longer matched, and its head leaked."""
    data = {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": "x" * pad + f" key {KEY} bad"},
    }
    text = str(in_stream_error("Anthropic", data, (KEY,)))
    assert "7f3a9c1e" not in text


def test_lone_surrogates_in_committed_messages_are_persisted_exactly(tmp_path: Path) -> None:
    """Found by the stress review: a tool result with a lone surrogate (``os.listdir`` of a
    non-UTF-8 file name gives one) or a model's ``"\\ud800"`` escape made the session append raise
    ``UnicodeEncodeError`` after the tool had run, leaving its call unanswered in the file and the
    run dead. Now the line falls back to JSON escapes and loads back as the same message."""

    @tool
    def ls() -> str:
        """List the folder."""
        return "name\udcff.txt"

    session = tmp_path / "s.jsonl"
    client = ScriptedClient([[ToolCall("c\ud800", "ls", {})], ["done \ud800"]])
    result = run_agent(
        client=client, system="", tools=[ls], user="u\udcfe", max_turns=3, session_path=session
    )
    assert result.stop_reason == "complete"
    assert result.messages[2] == Message("tool", "name\udcff.txt", (), "c\ud800")
    assert load_session(session) == result.messages
    session.read_bytes().decode("utf-8")  # still valid UTF-8 JSON lines
    assert unanswered_calls(load_session(session)) == []


def test_provider_request_with_a_lone_surrogate_is_sent(tmp_path: Path) -> None:
    """Found by the stress review: the HTTP transport encodes the body with strict UTF-8, so a
    history holding a lone surrogate (see the test above) raised ``UnicodeEncodeError`` (not a
    ``ProviderError``) on every later request of the session."""
    with RawServer(reply(head() + openai_text("ok"))) as server:
        client = OpenAIChatClient("m", base_url=server.url + "/v1")
        request = ModelRequest("", [Message("user", "name\udcff.txt")], (), None)
        events = list(client.stream(request))
        assert events[0] == TextEvent("ok")
        assert server.requests[0].body["messages"][0]["content"] != ""


def test_a_failed_rollback_is_cut_before_the_next_append(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by the stress review: when the disk took part of a line and the rollback
    (``ftruncate``) failed too, the fragment stayed and the same ``SessionFile``'s next append was
    fused onto it. Now the fragment is cut before the next append."""
    session = tmp_path / "s.jsonl"
    real_write, real_truncate = os.write, os.ftruncate
    failures = {"write": 2, "truncate": 1}

    def short_write(fd: int, data: bytes) -> int:
        if failures["write"] == 2 and len(data) > 20:  # the disk takes 10 bytes, then is full
            failures["write"] -= 1
            return real_write(fd, bytes(data[:10]))
        if failures["write"] == 1:
            failures["write"] -= 1
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    def failing_truncate(fd: int, size: int) -> None:
        if failures["truncate"]:
            failures["truncate"] -= 1
            raise OSError(errno.EIO, "Input/output error")
        real_truncate(fd, size)

    with SessionFile(session) as writer:
        writer.append(Message("user", "first"))
        monkeypatch.setattr(os, "write", short_write)
        monkeypatch.setattr(os, "ftruncate", failing_truncate)
        with pytest.raises(OSError):
            writer.append(Message("assistant", "this line is torn by the disk"))
        writer.append(Message("assistant", "next"))
    assert jsonl_lines_ok(session)
    assert load_session(session) == [Message("user", "first"), Message("assistant", "next")]


def _list_dir_turns() -> list[bytes]:
    call = {
        "choices": [
            {
                "index": 0,
                "delta": {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "list_dir", "arguments": "{}"},
                        }
                    ]
                },
                "finish_reason": "tool_calls",
            }
        ]
    }
    return [
        head() + b"data: " + json.dumps(call).encode() + b"\n\ndata: [DONE]\n\n",
        head() + openai_text("listed"),
    ]


def _non_utf8_workspace(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with open(os.fsencode(workspace) + b"/bad\xff.txt", "w") as stream:
        stream.write("x")
    return workspace


def test_a_non_utf8_file_name_from_the_toolbox_through_session_and_provider(tmp_path: Path) -> None:
    """Found by the stress review: ``list_dir``/``grep`` return non-UTF-8 file names as lone
    surrogates; that crashed the session append (after the tool ran) and every later request."""
    workspace = _non_utf8_workspace(tmp_path)
    first, second = _list_dir_turns()
    with RawServer(reply(first), reply(second)) as server:
        session = tmp_path / "s.jsonl"
        result = run_agent(
            client=OpenAIChatClient("m", base_url=server.url + "/v1"),
            system="s",
            tools=default_tools(workspace),
            user="ls",
            max_turns=3,
            session_path=session,
        )
        assert result.stop_reason == "complete"
        assert "bad\udcff.txt" in result.messages[2].content
        assert load_session(session) == result.messages
        assert server.requests[1].body["messages"][-1]["content"] == result.messages[2].content.replace(
            "\udcff", "\ufffd"
        )


def test_cli_json_output_is_valid_utf8_with_a_non_utf8_file_name(tmp_path: Path) -> None:
    """Found by the stress review: ``--json`` wrote a lone surrogate as a raw byte (invalid UTF-8);
    fixed in the CLI by its owner."""
    workspace = _non_utf8_workspace(tmp_path)
    first, second = _list_dir_turns()
    with RawServer(reply(first), reply(second)) as server:
        env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")}
        command = [
            sys.executable, "-m", "miniagent.cli", "run", "ls", "--base-url", server.url + "/v1",
            "--model", "m", "--workspace", str(workspace), "--session", str(tmp_path / "s.jsonl"),
            "--json", "--approve", "all",
        ]  # fmt: skip
        done = subprocess.run(command, capture_output=True, env=env, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.decode("utf-8").splitlines()]
    assert lines[-1]["exit_code"] == 0


@pytest.mark.parametrize(
    "call",
    [
        ToolCall("c1", "echo", [1, 2]),  # type: ignore[arg-type]
        ToolCall("c1", "echo", None),  # type: ignore[arg-type]
        ToolCall(7, "echo", {}),  # type: ignore[arg-type]
        ToolCall("c1", None, {}),  # type: ignore[arg-type]
    ],
    ids=["list-input", "none-input", "int-id", "none-name"],
)
def test_a_malformed_call_from_a_client_never_makes_the_session_unloadable(
    tmp_path: Path, call: ToolCall
) -> None:
    """Found by the stress review: a client yielding a ``ToolCall`` whose input is not a dict (or
    whose id/name is not a string) ran to completion, but the line it wrote made every later
    ``load_session`` raise: the file was unloadable for good. Now the session refuses to write a
    line its loader would refuse: a clear ``SessionError``, and the file stays loadable."""
    session = tmp_path / "s.jsonl"
    with pytest.raises(SessionError, match="message not stored"):
        run_agent(
            client=ScriptedClient([[call], ["done"]]),
            system="",
            tools=[],
            user="u",
            max_turns=3,
            session_path=session,
        )
    assert load_session(session) == [Message("user", "u")]
    resumed = run_agent(
        client=ScriptedClient([["ok"]]), system="", tools=[], user="again", max_turns=1, session_path=session
    )
    assert resumed.stop_reason == "complete"


def test_a_tool_returning_non_text_content_is_a_tool_failure(tmp_path: Path) -> None:
    """Found with the test above: ``ToolResult(123)`` was recorded as is, a line the loader
    refuses. Now it is a tool failure: the call is answered ``tool execution failed`` and the
    ``TypeError`` reaches the caller; the session stays loadable."""
    bad = Tool("bad", "returns a number", {"type": "object"}, lambda arguments, cancel: ToolResult(123))  # type: ignore[arg-type]
    session = tmp_path / "s.jsonl"
    with pytest.raises(TypeError, match="content of type int"):
        run_agent(
            client=ScriptedClient([[ToolCall("c1", "bad", {})], ["done"]]),
            system="",
            tools=[bad],
            user="u",
            max_turns=3,
            session_path=session,
        )
    messages = load_session(session)
    assert messages[-1] == Message("tool", "tool execution failed", (), "c1", True)
