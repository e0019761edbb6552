"""The loop's semantics: the spec's Stage Acceptance, its stop and failure table, the four
checkpoints as deterministic races, the literal texts, and DESIGN.md's items beyond the spec."""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path
from typing import Any

import pytest

from miniagent import (
    Approval,
    DoneEvent,
    EmptyResponseError,
    Message,
    ModelRequest,
    SessionError,
    TextEvent,
    ToolCall,
    ToolCallEvent,
    ToolResult,
    exit_code_for_stop_reason,
    load_session,
    run_agent,
    tool,
)
from miniagent.messages import MISSING_RESULT
from miniagent.testing import ScriptedClient
from tests.helpers import assert_every_call_answered_once, recording_tool

SECRET = "sk-secret-do-not-record"


def call(call_id: str, name: str = "echo", **arguments: Any) -> ToolCall:
    return ToolCall(call_id, name, arguments)


def run(client: ScriptedClient, **options: Any):  # type: ignore[no-untyped-def]
    options.setdefault("tools", [recording_tool()])
    options.setdefault("max_turns", 8)
    options.setdefault("system", "sys")
    options.setdefault("user", "hi")
    return run_agent(client=client, **options)


# --- normal paths --------------------------------------------------------------------------------


def test_text_answer_completes_with_user_and_assistant_messages() -> None:
    client = ScriptedClient([["Hel", "lo"]])
    result = run(client)
    assert result.stop_reason == "complete"
    assert result.messages == [Message("user", "hi"), Message("assistant", "Hello")]
    assert client.requests[0].system == "sys"
    assert client.requests[0].messages == (Message("user", "hi"),)


def test_tool_call_result_is_fed_back_next_turn() -> None:
    log: list[dict[str, Any]] = []
    client = ScriptedClient([[call("c1", x=1)], ["done"]])
    result = run(client, tools=[recording_tool(log=log)])
    assert result.stop_reason == "complete"
    assert log == [{"x": 1}]
    assert result.messages[2] == Message("tool", "ran echo", tool_call_id="c1")
    assert client.requests[1].messages[-1] == Message("tool", "ran echo", tool_call_id="c1")
    assert [t.name for t in client.requests[0].tools] == ["echo"]


def test_tools_run_in_order_one_after_another() -> None:
    order: list[str] = []

    def make(name: str):  # type: ignore[no-untyped-def]
        return recording_tool(name, action=lambda a, c: (order.append(name), ToolResult(name))[1])

    client = ScriptedClient([[call("1", "a"), call("2", "b"), call("3", "a")], ["ok"]])
    result = run(client, tools=[make("a"), make("b")])
    assert order == ["a", "b", "a"]
    assert [m.tool_call_id for m in result.messages if m.role == "tool"] == ["1", "2", "3"]


def test_text_and_calls_in_one_turn_are_one_assistant_message() -> None:
    client = ScriptedClient([["Let me look.", call("c1")], ["Found it."]])
    result = run(client)
    assert result.messages[1] == Message("assistant", "Let me look.", (call("c1"),))


def test_done_event_is_a_no_op() -> None:
    client = ScriptedClient([lambda request: [DoneEvent("x"), TextEvent("a"), DoneEvent(), TextEvent("b")]])
    assert run(client).messages[-1] == Message("assistant", "ab")


# --- stop and failure table ----------------------------------------------------------------------


def test_max_turns_runs_the_last_turns_tools_and_sends_no_further_request() -> None:
    log: list[dict[str, Any]] = []
    client = ScriptedClient([[call("c1")], [call("c2")], ["never"]])
    result = run(client, tools=[recording_tool(log=log)], max_turns=2)
    assert result.stop_reason == "max_turns"
    assert len(client.requests) == 2
    assert len(log) == 2
    assert result.messages[-1] == Message("tool", "ran echo", tool_call_id="c2")


def test_max_turns_zero_records_the_user_message_only() -> None:
    client = ScriptedClient([])
    result = run(client, max_turns=0)
    assert result.stop_reason == "max_turns"
    assert result.messages == [Message("user", "hi")]


def test_max_turns_counts_this_run_only(tmp_path: Path) -> None:
    session = tmp_path / "s.jsonl"
    run(ScriptedClient([[call("a")], [call("b")], ["one"]]), session_path=session, max_turns=3)
    result = run(ScriptedClient([[call("c")], ["two"]]), session_path=session, max_turns=2)
    assert result.stop_reason == "complete"
    assert result.messages[-1].content == "two"


def test_empty_answer_raises_and_commits_nothing(tmp_path: Path) -> None:
    session = tmp_path / "s.jsonl"
    client = ScriptedClient([[DoneEvent()]])
    with pytest.raises(EmptyResponseError, match=r"^model completed without text or tool calls$"):
        run(client, session_path=session)
    assert load_session(session) == [Message("user", "hi")]


def test_stream_exception_propagates_as_the_original_object_and_commits_nothing(tmp_path: Path) -> None:
    session = tmp_path / "s.jsonl"
    error = ConnectionError("boom")
    client = ScriptedClient([["partial", error]])
    with pytest.raises(ConnectionError) as raised:
        run(client, session_path=session)
    assert raised.value is error
    assert load_session(session) == [Message("user", "hi")]


def test_stream_raising_while_cancelled_returns_aborted() -> None:
    cancel = threading.Event()

    def turn(request: ModelRequest):  # type: ignore[no-untyped-def]
        yield TextEvent("partial")
        cancel.set()
        raise ConnectionError("socket shut down by the cancel")

    result = run(ScriptedClient([turn]), cancel=cancel)
    assert result.stop_reason == "aborted"
    assert result.messages == [Message("user", "hi")]


def test_persistence_failure_raises(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(OSError):
        run(ScriptedClient([["x"]]), session_path=blocker / "s.jsonl")


def test_exit_codes() -> None:
    assert exit_code_for_stop_reason("complete") == 0
    assert exit_code_for_stop_reason("max_turns") == 2
    assert exit_code_for_stop_reason("aborted") == 130
    with pytest.raises(ValueError):
        exit_code_for_stop_reason("other")  # type: ignore[arg-type]


# --- the four checkpoints, each as a deterministic race ------------------------------------------


def test_checkpoint_1_pre_abort_returns_restored_history_and_writes_nothing(tmp_path: Path) -> None:
    session = tmp_path / "s.jsonl"
    run(ScriptedClient([["first"]]), session_path=session)
    before = session.read_bytes()
    cancel = threading.Event()
    cancel.set()
    client = ScriptedClient([])
    result = run(client, session_path=session, cancel=cancel, user="second")
    assert result.stop_reason == "aborted"
    assert result.messages == [Message("user", "hi"), Message("assistant", "first")]
    assert session.read_bytes() == before
    assert client.requests == []


def test_checkpoint_1_pre_abort_does_not_create_a_session_file(tmp_path: Path) -> None:
    cancel = threading.Event()
    cancel.set()
    session = tmp_path / "new" / "s.jsonl"
    result = run(ScriptedClient([]), session_path=session, cancel=cancel)
    assert result == type(result)([], "aborted")
    assert not session.exists()


def test_cancel_during_stream_discards_the_partial_turn_and_closes_the_stream() -> None:
    cancel = threading.Event()
    seen: list[str] = []

    def turn(request: ModelRequest):  # type: ignore[no-untyped-def]
        yield TextEvent("partial")
        cancel.set()
        seen.append("after cancel")
        yield ToolCallEvent(call("c1"))
        seen.append("never")
        yield TextEvent("more")

    client = ScriptedClient([turn])
    result = run(client, cancel=cancel)
    assert result.stop_reason == "aborted"
    assert result.messages == [Message("user", "hi")]
    assert seen == ["after cancel"]
    assert client.closed == 1


def test_checkpoint_2_abort_after_non_cooperative_stream_completes_prevents_commit(tmp_path: Path) -> None:
    cancel = threading.Event()

    def turn(request: ModelRequest):  # type: ignore[no-untyped-def]
        yield TextEvent("partial")
        cancel.set()  # the stream ignores the cancel and finishes normally

    session = tmp_path / "s.jsonl"
    result = run(ScriptedClient([turn]), cancel=cancel, session_path=session)
    assert result.stop_reason == "aborted"
    assert result.messages == [Message("user", "hi")]
    assert load_session(session) == [Message("user", "hi")]


def test_checkpoint_3_approval_race_does_not_execute_the_tool(tmp_path: Path) -> None:
    cancel = threading.Event()
    log: list[dict[str, Any]] = []

    def approve(c: ToolCall) -> Approval:
        cancel.set()
        return Approval(True)

    session = tmp_path / "s.jsonl"
    client = ScriptedClient([[call("c1"), call("c2")]])
    result = run(
        client, tools=[recording_tool(log=log)], cancel=cancel, before_tool_call=approve, session_path=session
    )
    assert result.stop_reason == "aborted"
    assert log == []
    assert result.messages[2:] == [
        Message("tool", "aborted before execution", tool_call_id="c1", is_error=True),
        Message("tool", "aborted before execution", tool_call_id="c2", is_error=True),
    ]
    assert load_session(session) == result.messages


def test_checkpoint_4_race_at_tool_return_preserves_the_real_result(tmp_path: Path) -> None:
    cancel = threading.Event()

    def action(arguments: dict[str, Any], event: threading.Event | None) -> ToolResult:
        assert event is cancel
        cancel.set()
        return ToolResult("real result")

    session = tmp_path / "s.jsonl"
    client = ScriptedClient([[call("c1"), call("c2"), call("c3")], ["never"]])
    result = run(client, tools=[recording_tool(action=action)], cancel=cancel, session_path=session)
    assert result.stop_reason == "aborted"
    assert result.messages[2:] == [
        Message("tool", "real result", tool_call_id="c1"),
        Message("tool", "aborted before execution", tool_call_id="c2", is_error=True),
        Message("tool", "aborted before execution", tool_call_id="c3", is_error=True),
    ]
    assert len(client.requests) == 1
    assert load_session(session) == result.messages


def test_checkpoint_4_after_a_refusal_stops_before_asking_again() -> None:
    cancel = threading.Event()
    asked: list[str] = []

    def refuse(c: ToolCall) -> Approval:
        asked.append(c.id)
        return Approval(False, "no")

    def cancel_after_the_refusal(message: Message) -> None:
        if message.content == "no":
            cancel.set()

    result = run(
        ScriptedClient([[call("c1"), call("c2")]]),
        cancel=cancel,
        before_tool_call=refuse,
        on_message=cancel_after_the_refusal,
    )
    assert asked == ["c1"]
    assert [m.content for m in result.messages[2:]] == ["no", "aborted before execution"]


def test_tool_raising_while_cancelled_records_aborted_during_execution_and_returns() -> None:
    cancel = threading.Event()

    def action(arguments: dict[str, Any], event: threading.Event | None) -> ToolResult:
        cancel.set()
        raise RuntimeError(SECRET)

    result = run(
        ScriptedClient([[call("c1"), call("c2")]]), tools=[recording_tool(action=action)], cancel=cancel
    )
    assert result.stop_reason == "aborted"
    assert result.messages[2:] == [
        Message("tool", "aborted during execution", tool_call_id="c1", is_error=True),
        Message("tool", "aborted before execution", tool_call_id="c2", is_error=True),
    ]


def test_approval_hook_raising_while_cancelled_returns_aborted() -> None:
    cancel = threading.Event()

    def hook(c: ToolCall) -> Approval:
        cancel.set()
        raise RuntimeError(SECRET)

    result = run(ScriptedClient([[call("c1")]]), cancel=cancel, before_tool_call=hook)
    assert result.stop_reason == "aborted"
    assert result.messages[2:] == [
        Message("tool", "aborted before execution", tool_call_id="c1", is_error=True)
    ]


# --- closing on failure --------------------------------------------------------------------------


def test_tool_failure_closes_calls_and_reraises_the_original_error(tmp_path: Path) -> None:
    error = RuntimeError(SECRET)

    def action(arguments: dict[str, Any], event: threading.Event | None) -> ToolResult:
        if arguments.get("n") == 2:
            raise error
        return ToolResult(f"ok {arguments['n']}")

    session = tmp_path / "s.jsonl"
    client = ScriptedClient([[call("c1", n=1), call("c2", n=2), call("c3", n=3), call("c4", n=4)]])
    with pytest.raises(RuntimeError) as raised:
        run(client, tools=[recording_tool(action=action)], session_path=session)
    assert raised.value is error
    reloaded = load_session(session)
    assert reloaded[2:] == [
        Message("tool", "ok 1", tool_call_id="c1"),
        Message("tool", "tool execution failed", tool_call_id="c2", is_error=True),
        Message("tool", "not executed after an earlier failure", tool_call_id="c3", is_error=True),
        Message("tool", "not executed after an earlier failure", tool_call_id="c4", is_error=True),
    ]
    assert_every_call_answered_once(reloaded)
    assert SECRET not in session.read_text()


def test_approval_failure_closes_calls_and_reraises_the_original_error(tmp_path: Path) -> None:
    error = ValueError(SECRET)
    log: list[dict[str, Any]] = []

    def hook(c: ToolCall) -> Approval:
        if c.id == "c2":
            raise error
        return Approval(True)

    session = tmp_path / "s.jsonl"
    client = ScriptedClient([[call("c1"), call("c2"), call("c3")]])
    with pytest.raises(ValueError) as raised:
        run(client, tools=[recording_tool(log=log)], before_tool_call=hook, session_path=session)
    assert raised.value is error
    assert len(log) == 1
    assert load_session(session)[2:] == [
        Message("tool", "ran echo", tool_call_id="c1"),
        Message("tool", "approval failed", tool_call_id="c2", is_error=True),
        Message("tool", "not executed after an earlier failure", tool_call_id="c3", is_error=True),
    ]
    assert SECRET not in session.read_text()


def test_keyboard_interrupt_in_a_tool_closes_the_calls_and_propagates(tmp_path: Path) -> None:
    def action(arguments: dict[str, Any], event: threading.Event | None) -> ToolResult:
        raise KeyboardInterrupt

    session = tmp_path / "s.jsonl"
    with pytest.raises(KeyboardInterrupt):
        run(
            ScriptedClient([[call("c1"), call("c2")]]),
            tools=[recording_tool(action=action)],
            session_path=session,
        )
    assert [m.content for m in load_session(session)[2:]] == [
        "aborted during execution",
        "aborted before execution",
    ]


def test_tool_returning_a_non_result_is_a_tool_failure() -> None:
    bad = recording_tool(action=lambda a, c: "plain string")  # type: ignore[arg-type,return-value]
    with pytest.raises(TypeError):
        run(ScriptedClient([[call("c1")]]), tools=[bad])


# --- refusals, unknown tools, bad input ------------------------------------------------------------


def test_refusal_records_the_reason_or_the_default_text() -> None:
    reasons = iter(["not today", ""])
    client = ScriptedClient([[call("c1"), call("c2")], ["ok"]])
    log: list[dict[str, Any]] = []
    result = run(
        client, tools=[recording_tool(log=log)], before_tool_call=lambda c: Approval(False, next(reasons))
    )
    assert log == []
    assert result.messages[2:4] == [
        Message("tool", "not today", tool_call_id="c1", is_error=True),
        Message("tool", "tool call not approved", tool_call_id="c2", is_error=True),
    ]


def test_unknown_tool_is_recorded_with_the_full_call_id_and_the_loop_continues() -> None:
    client = ScriptedClient([[ToolCall("call_unknown_123", "does_not_exist", {})], ["sorry"]])
    result = run(client)
    assert result.messages[2] == Message(
        "tool", "unknown tool: does_not_exist", tool_call_id="call_unknown_123", is_error=True
    )
    assert result.stop_reason == "complete"


def test_input_not_matching_the_schema_becomes_an_error_result_without_executing() -> None:
    ran: list[int] = []

    @tool
    def square(n: int) -> str:
        """Square a number."""
        ran.append(n)
        return str(n * n)

    client = ScriptedClient(
        [[call("c1", "square", n="three"), call("c2", "square"), call("c3", "square", n=3)], ["9"]]
    )
    result = run(client, tools=[square])
    assert ran == [3]
    assert result.messages[2:5] == [
        Message(
            "tool",
            "invalid input for square: input.n: expected integer, got string",
            tool_call_id="c1",
            is_error=True,
        ),
        Message(
            "tool",
            "invalid input for square: input: missing required property n",
            tool_call_id="c2",
            is_error=True,
        ),
        Message("tool", "9", tool_call_id="c3"),
    ]


def test_provider_marked_bad_arguments_are_answered_with_the_problem() -> None:
    log: list[dict[str, Any]] = []
    bad = ToolCall("c1", "echo", {}, input_error="arguments are not valid JSON: Expecting value")
    result = run(ScriptedClient([[bad], ["ok"]]), tools=[recording_tool(log=log)])
    assert log == []
    assert result.messages[2] == Message(
        "tool",
        "invalid input for echo: arguments are not valid JSON: Expecting value",
        tool_call_id="c1",
        is_error=True,
    )


def test_duplicate_tool_names_and_bad_arguments_are_rejected_before_anything_is_written(
    tmp_path: Path,
) -> None:
    session = tmp_path / "s.jsonl"
    with pytest.raises(ValueError, match="two tools"):
        run(ScriptedClient([]), tools=[recording_tool(), recording_tool()], session_path=session)
    with pytest.raises(ValueError):
        run(ScriptedClient([]), max_turns=-1, session_path=session)
    with pytest.raises(ValueError):
        run(ScriptedClient([]), context_max_chars=0, session_path=session)
    assert not session.exists()


# --- observers -------------------------------------------------------------------------------------


def test_on_event_sees_every_event_and_on_message_every_commit(tmp_path: Path) -> None:
    events: list[Any] = []
    committed: list[tuple[Message, list[Message]]] = []
    session = tmp_path / "s.jsonl"

    def on_message(message: Message) -> None:
        committed.append((message, load_session(session)))

    client = ScriptedClient([["a", call("c1")], ["b"]])
    result = run(client, on_event=events.append, on_message=on_message, session_path=session)
    assert [e.type for e in events] == ["text", "tool_call", "done", "text", "done"]
    assert [m for m, _ in committed] == result.messages
    for message, on_disk in committed:  # committed means: already in memory and on disk
        assert on_disk[-1] == message


# --- beyond the spec: sessions, resume repair, trimming ------------------------------------------


def test_session_round_trip_equals_the_returned_messages(tmp_path: Path) -> None:
    session = tmp_path / "deep" / "folder" / "s.jsonl"
    result = run(ScriptedClient([[call("c1", q="ü ☃ \u2028")], ["done"]]), session_path=session)
    assert load_session(session) == result.messages
    assert all(json.loads(line) for line in session.read_text(encoding="utf-8").split("\n")[:-1])


def test_restored_history_is_sent_before_the_new_user_message(tmp_path: Path) -> None:
    session = tmp_path / "s.jsonl"
    run(ScriptedClient([["first answer"]]), session_path=session, user="first")
    client = ScriptedClient([["second answer"]])
    run(client, session_path=session, user="second")
    assert [m.content for m in client.requests[0].messages] == ["first", "first answer", "second"]


def test_ctrl_c_during_a_tool_then_resume_sends_every_call_answered(tmp_path: Path) -> None:
    # A process killed during a tool leaves an assistant message with a call and no result.
    session = tmp_path / "s.jsonl"
    lines = [
        {"role": "user", "content": "list files"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "c1", "name": "echo", "input": {}},
                {"id": "c2", "name": "echo", "input": {}},
            ],
        },
        {"role": "tool", "content": "ran echo", "tool_call_id": "c1"},
    ]
    session.write_text("".join(json.dumps(line) + "\n" for line in lines))
    client = ScriptedClient([["resumed"]])
    result = run(client, session_path=session, user="go on")
    sent = list(client.requests[0].messages)
    assert_every_call_answered_once(sent)
    assert sent[3] == Message("tool", MISSING_RESULT, tool_call_id="c2", is_error=True)
    assert sent[4] == Message("user", "go on")
    assert load_session(session) == result.messages
    assert_every_call_answered_once(load_session(session))


def test_resume_repair_is_not_written_on_pre_abort(tmp_path: Path) -> None:
    session = tmp_path / "s.jsonl"
    session.write_text(
        '{"role":"user","content":"x"}\n'
        '{"role":"assistant","content":"","tool_calls":[{"id":"c1","name":"echo","input":{}}]}\n'
    )
    before = session.read_bytes()
    cancel = threading.Event()
    cancel.set()
    assert run(ScriptedClient([]), session_path=session, cancel=cancel).stop_reason == "aborted"
    assert session.read_bytes() == before


def test_torn_last_line_is_dropped_and_the_next_append_is_not_fused(tmp_path: Path) -> None:
    session = tmp_path / "s.jsonl"
    session.write_bytes(b'{"role":"user","content":"earlier"}\n{"role":"assistant","content":"hel')
    assert load_session(session) == [Message("user", "earlier")]
    result = run(ScriptedClient([["hello"]]), session_path=session, user="again")
    lines = session.read_text().split("\n")
    assert lines[-1] == ""
    assert [json.loads(line)["content"] for line in lines[:-1]] == ["earlier", "again", "hello"]
    assert load_session(session) == result.messages


def test_a_bad_line_raises_session_error_naming_file_and_line_and_leaves_the_file(tmp_path: Path) -> None:
    session = tmp_path / "s.jsonl"
    content = b'{"role":"user","content":"a"}\nnot json\n{"role":"user","content":"b"}\n'
    session.write_bytes(content)
    with pytest.raises(SessionError) as raised:
        run(ScriptedClient([["x"]]), session_path=session)
    assert raised.value.line == 2
    assert str(session) in str(raised.value) and ":2:" in str(raised.value)
    assert session.read_bytes() == content


def test_trimming_never_splits_a_call_from_its_result_and_keeps_the_record_whole(tmp_path: Path) -> None:
    session = tmp_path / "s.jsonl"
    # Sizes: user "hi" 2; assistant call echo{} 4+2=6; tool "ran echo" 8; answer "done" 4.
    client = ScriptedClient([[call("c1")], ["done"]])
    result = run(client, session_path=session, context_max_chars=14)
    # Turn 2 sends [user, call, result] = 16 > 14: the cut would fall between user and the call
    # unit; the call and its result stay together, the user message goes.
    assert [m.role for m in client.requests[1].messages] == ["assistant", "tool"]
    assert len(result.messages) == 4
    assert load_session(session) == result.messages


def test_budget_too_small_for_the_newest_unit_raises() -> None:
    with pytest.raises(ValueError, match="cannot hold"):
        run(ScriptedClient([["x"]]), user="a long user message", context_max_chars=5)


def test_a_user_message_the_budget_cannot_hold_is_refused_before_anything_is_written(
    tmp_path: Path,
) -> None:
    # Found by a new user: the ValueError came after the user message was already in the session.
    session = tmp_path / "s.jsonl"
    run(ScriptedClient([["first"]]), session_path=session)
    before = session.read_bytes()
    with pytest.raises(ValueError, match="cannot hold"):
        run(ScriptedClient([]), session_path=session, user="x" * 1000, context_max_chars=100)
    assert session.read_bytes() == before


@pytest.mark.parametrize("bad", [True, 1.5, "3"])
def test_max_turns_must_be_an_int(bad: object) -> None:
    with pytest.raises(ValueError, match="max_turns"):
        run(ScriptedClient([]), max_turns=bad)


def test_a_nan_budget_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        run(ScriptedClient([]), context_max_chars=float("nan"))


def test_the_loop_logs_requests_tools_and_the_stop_reason_when_an_application_listens(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The library configures nothing; an application that listens to `miniagent` gets the records.
    client = ScriptedClient([[ToolCall("c1", "echo", {"text": "hi"})], ["done"]])
    echo = recording_tool()
    with caplog.at_level(logging.INFO, logger="miniagent"):
        run_agent(client=client, system="", tools=[echo], user="go", max_turns=3)
    texts = [record.getMessage() for record in caplog.records if record.name == "miniagent.agent"]
    assert texts[0] == "request 1: 1 messages"
    assert texts[1].startswith("request 1 done in ") and texts[1].endswith(": 0 characters, 1 tool calls")
    assert texts[2] == "tool echo (c1) started"
    assert texts[3].startswith("tool echo (c1) done in ") and texts[3].endswith(": ok, 8 characters")
    assert texts[-1] == "stop reason: complete (4 messages in the record)"
