"""Approval that waits (DESIGN.md "Unattended runs"): ``Approval.defer``, the ``pending`` notes of
the record, ``run_agent(user=None)`` settling pending calls, and a pending call that runs at most
once (its ``started`` note)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from miniagent import (
    Approval,
    JSONLSession,
    Message,
    RunResult,
    SessionError,
    Tool,
    ToolCall,
    ToolResult,
    exit_code_for_stop_reason,
    load_session,
    run_agent,
)
from miniagent.agent import APPROVAL_FAILED, NOT_EXECUTED_AFTER_FAILURE
from miniagent.approval import defer_changes, policy_for
from miniagent.messages import MISSING_RESULT, message_from_json, message_to_json
from miniagent.pending import (
    INTERRUPTED_AFTER_START,
    can_continue,
    decide,
    decided,
    decisions,
    note,
    open_calls,
    pending_calls,
)
from miniagent.providers._history import pair_tool_messages
from miniagent.testing import ScriptedClient
from tests.helpers import assert_every_call_answered_once

READ = ToolCall("c0", "read", {"path": "a.txt"})
WRITE_1 = ToolCall("c1", "write", {"path": "a.txt", "text": "one"})
WRITE_2 = ToolCall("c2", "write", {"path": "b.txt", "text": "two"})
TURN = [READ, WRITE_1, WRITE_2]


class Effects:
    """The tools of these tests: ``read`` (read-only) and ``write``, whose runs are counted."""

    def __init__(self) -> None:
        self.writes: list[dict[str, Any]] = []

    def tools(self) -> list[Tool]:
        def write(arguments: dict[str, Any], cancel: threading.Event | None) -> ToolResult:
            self.writes.append(arguments)
            return ToolResult(f"wrote {arguments['path']}")

        def read(arguments: dict[str, Any], cancel: threading.Event | None) -> ToolResult:
            return ToolResult("the text")

        return [
            Tool("read", "read a file", {"type": "object"}, read, read_only=True),
            Tool("write", "write a file", {"type": "object"}, write),
        ]


def _deferred_session(path: Path, effects: Effects) -> RunResult:
    """A run that stops deferred at ``WRITE_1`` (``READ`` ran), recorded in ``path``."""
    tools = effects.tools()
    return run_agent(
        client=ScriptedClient([TURN]),
        system="",
        tools=tools,
        user="edit the files",
        max_turns=4,
        session_path=path,
        before_tool_call=defer_changes(tools, reason="a person decides"),
    )


def test_defer_is_a_classmethod_whose_approval_is_not_approved() -> None:
    approval = Approval.defer("ask the owner")
    assert approval == Approval(False, "ask the owner", True)
    assert approval.deferred and not approval.approved
    assert Approval.defer().reason == "" and not Approval(True).deferred


def test_exit_codes_of_all_six_stop_reasons() -> None:
    codes = {
        reason: exit_code_for_stop_reason(reason)
        for reason in ("complete", "max_turns", "max_budget", "deferred", "no_progress", "aborted")
    }
    assert codes == {
        "complete": 0,
        "max_turns": 2,
        "max_budget": 3,
        "deferred": 4,
        "no_progress": 5,
        "aborted": 130,
    }
    with pytest.raises(ValueError, match="unknown stop reason"):
        exit_code_for_stop_reason("paused")  # type: ignore[arg-type]


def test_a_deferred_call_stops_the_run_before_it_and_its_turn_waits(tmp_path: Path) -> None:
    effects = Effects()
    path = tmp_path / "s.jsonl"
    result = _deferred_session(path, effects)
    assert result.stop_reason == "deferred"
    assert result.pending == (WRITE_1, WRITE_2)
    assert effects.writes == []
    roles = [(m.role, m.tool_call_id, m.state) for m in result.messages]
    assert roles == [
        ("user", None, None),
        ("assistant", None, None),
        ("tool", "c0", None),  # the call before it ran as usual
        ("tool", "c1", "pending"),  # one note: c1 and the later calls wait, with no result
    ]
    assert result.messages[-1].content == "a person decides"
    assert load_session(path) == result.messages  # the file holds the note as any message
    assert pending_calls(load_session(path)) == (WRITE_1, WRITE_2)


def test_resume_asks_again_runs_the_approved_call_once_and_goes_on_without_a_user_message(
    tmp_path: Path,
) -> None:
    effects = Effects()
    path = tmp_path / "s.jsonl"
    _deferred_session(path, effects)
    asked: list[str] = []

    def hook(call: ToolCall) -> Approval:
        asked.append(call.id)
        return Approval(True) if call.id == "c1" else Approval(False, "not that one")

    client = ScriptedClient([["Both done."]])
    result = run_agent(
        client=client,
        system="",
        tools=effects.tools(),
        user=None,
        max_turns=2,
        session_path=path,
        before_tool_call=hook,
    )
    assert result.stop_reason == "complete" and result.pending == ()
    assert asked == ["c1", "c2"]  # in order, each pending call once
    assert effects.writes == [WRITE_1.input]
    tail = [(m.role, m.tool_call_id, m.state, m.content) for m in result.messages[4:]]
    assert tail == [
        ("tool", "c1", "started", ""),  # committed before the tool ran
        ("tool", "c1", None, "wrote a.txt"),
        ("tool", "c2", None, "not that one"),
        ("assistant", None, None, "Both done."),
    ]
    sent = client.requests[0].messages
    assert [m.role for m in sent] == ["user", "assistant", "tool", "tool", "tool"]  # no new user message
    assert all(m.state is None for m in sent)  # notes never reach the model
    assert_every_call_answered_once(result.messages)


def test_deferred_again_stops_again_writing_nothing(tmp_path: Path) -> None:
    effects = Effects()
    path = tmp_path / "s.jsonl"
    _deferred_session(path, effects)
    before = path.read_bytes()
    client = ScriptedClient([])
    tools = effects.tools()
    result = run_agent(
        client=client,
        system="",
        tools=tools,
        user=None,
        max_turns=2,
        session_path=path,
        before_tool_call=defer_changes(tools),
    )
    assert result.stop_reason == "deferred" and result.pending == (WRITE_1, WRITE_2)
    assert path.read_bytes() == before and client.requests == [] and effects.writes == []


def test_a_call_deferred_after_an_approved_one_keeps_its_place(tmp_path: Path) -> None:
    effects = Effects()
    path = tmp_path / "s.jsonl"
    _deferred_session(path, effects)
    tools = effects.tools()
    only_c1 = decided([*load_session(path), note("c1", "approved")], defer_changes(tools))
    first = run_agent(
        client=ScriptedClient([]),
        system="",
        tools=tools,
        user=None,
        max_turns=2,
        session_path=path,
        before_tool_call=only_c1,
    )
    assert first.stop_reason == "deferred" and first.pending == (WRITE_2,)
    assert pending_calls(load_session(path)) == (WRITE_2,)
    second = run_agent(
        client=ScriptedClient([["done"]]),
        system="",
        tools=tools,
        user=None,
        max_turns=2,
        session_path=path,
        before_tool_call=lambda call: Approval(True),
    )
    assert second.stop_reason == "complete"
    assert effects.writes == [WRITE_1.input, WRITE_2.input]  # each once


def test_a_new_user_message_comes_after_the_pending_calls_are_settled(tmp_path: Path) -> None:
    effects = Effects()
    path = tmp_path / "s.jsonl"
    _deferred_session(path, effects)
    result = run_agent(
        client=ScriptedClient([["ok"]]),
        system="",
        tools=effects.tools(),
        user="and then?",
        max_turns=2,
        session_path=path,
        before_tool_call=lambda call: Approval(False, "no"),
    )
    conversation = [m for m in result.messages if m.state is None]
    assert [(m.role, m.content) for m in conversation[-4:]] == [
        ("tool", "no"),
        ("tool", "no"),
        ("user", "and then?"),
        ("assistant", "ok"),
    ]
    assert_every_call_answered_once(result.messages)


def test_with_a_user_message_a_call_deferred_again_writes_nothing(tmp_path: Path) -> None:
    effects = Effects()
    path = tmp_path / "s.jsonl"
    _deferred_session(path, effects)
    before = path.read_bytes()
    result = run_agent(
        client=ScriptedClient([]),
        system="",
        tools=effects.tools(),
        user="hello?",
        max_turns=2,
        session_path=path,
        before_tool_call=lambda call: Approval.defer(),
    )
    assert result.stop_reason == "deferred" and path.read_bytes() == before


def test_resume_repair_never_answers_a_pending_call_and_never_takes_a_cut_call_for_one() -> None:
    cut = [
        Message("user", "go"),
        Message("assistant", "", tuple(TURN)),
        Message("tool", "the text", (), "c0"),
    ]
    assert open_calls(cut).interrupted == (WRITE_1, WRITE_2) and open_calls(cut).pending == ()
    waiting = [*cut, note("c1", "pending", "why")]
    assert open_calls(waiting).pending == (WRITE_1, WRITE_2) and open_calls(waiting).interrupted == ()
    asked: list[str] = []
    result = run_agent(
        client=ScriptedClient([["done"]]),
        system="",
        tools=Effects().tools(),
        user=None,
        max_turns=1,
        session=_MemoryStore(cut),
        before_tool_call=lambda call: asked.append(call.id) or Approval(True),
    )
    assert asked == []  # a call cut off by a crash is answered, never asked about nor run
    assert [m.content for m in result.messages[3:5]] == [MISSING_RESULT, MISSING_RESULT]


def test_a_started_call_without_a_result_is_never_run_again() -> None:
    effects = Effects()
    record = [
        Message("user", "go"),
        Message("assistant", "", tuple(TURN)),
        Message("tool", "the text", (), "c0"),
        note("c1", "pending"),
        note("c1", "approved"),
        note("c1", "started"),  # the process died while c1 ran
    ]
    asked: list[str] = []
    result = run_agent(
        client=ScriptedClient([["done"]]),
        system="",
        tools=effects.tools(),
        user=None,
        max_turns=1,
        session=_MemoryStore(record),
        before_tool_call=lambda call: asked.append(call.id) or Approval(True),
    )
    assert asked == ["c2"] and effects.writes == [WRITE_2.input]
    c1 = [m for m in result.messages if m.tool_call_id == "c1" and m.state is None]
    assert [(m.content, m.is_error) for m in c1] == [(INTERRUPTED_AFTER_START, True)]
    assert_every_call_answered_once(result.messages)


def test_user_none_needs_something_to_go_on_from(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    with pytest.raises(ValueError, match="empty"):
        run_agent(client=ScriptedClient([]), system="", tools=[], user=None, max_turns=1, session_path=path)
    run_agent(
        client=ScriptedClient([["hi"]]), system="", tools=[], user="hello", max_turns=1, session_path=path
    )
    before = path.read_bytes()
    with pytest.raises(ValueError, match="model's answer"):
        run_agent(client=ScriptedClient([]), system="", tools=[], user=None, max_turns=1, session_path=path)
    assert path.read_bytes() == before
    assert can_continue([Message("user", "hi")]) is None  # a crash before the answer: go on
    ended = [Message("user", "x"), Message("assistant", "", (READ,)), Message("tool", "t", (), "c0")]
    assert can_continue(ended) is None  # e.g. stopped max_turns after its calls
    client = ScriptedClient([["more"]])
    result = run_agent(
        client=client, system="", tools=[], user=None, max_turns=1, session=_MemoryStore(ended)
    )
    assert result.stop_reason == "complete" and len(client.requests[0].messages) == 3


def test_a_cancel_before_the_run_leaves_the_pending_calls_waiting(tmp_path: Path) -> None:
    effects = Effects()
    path = tmp_path / "s.jsonl"
    _deferred_session(path, effects)
    before = path.read_bytes()
    cancel = threading.Event()
    cancel.set()
    result = run_agent(
        client=ScriptedClient([]),
        system="",
        tools=effects.tools(),
        user=None,
        max_turns=1,
        session_path=path,
        cancel=cancel,
    )
    assert result.stop_reason == "aborted" and path.read_bytes() == before
    assert pending_calls(load_session(path)) == (WRITE_1, WRITE_2)


def test_a_cancel_while_settling_closes_the_rest_as_the_spec_closes_calls(tmp_path: Path) -> None:
    effects = Effects()
    path = tmp_path / "s.jsonl"
    _deferred_session(path, effects)
    cancel = threading.Event()

    def hook(call: ToolCall) -> Approval:
        cancel.set()  # a Ctrl-C while the hook decides
        return Approval(True)

    result = run_agent(
        client=ScriptedClient([]),
        system="",
        tools=effects.tools(),
        user=None,
        max_turns=1,
        session_path=path,
        cancel=cancel,
        before_tool_call=hook,
    )
    assert result.stop_reason == "aborted" and effects.writes == []
    closing = [m.content for m in result.messages if m.role == "tool" and m.state is None][1:]
    assert closing == ["aborted before execution", "aborted before execution"]
    assert_every_call_answered_once(load_session(path))


def test_a_hook_that_raises_while_settling_closes_the_calls_and_reraises(tmp_path: Path) -> None:
    effects = Effects()
    path = tmp_path / "s.jsonl"
    _deferred_session(path, effects)
    boom = RuntimeError("secret detail")

    def hook(call: ToolCall) -> Approval:
        raise boom

    with pytest.raises(RuntimeError) as raised:
        run_agent(
            client=ScriptedClient([]),
            system="",
            tools=effects.tools(),
            user=None,
            max_turns=1,
            session_path=path,
            before_tool_call=hook,
        )
    assert raised.value is boom
    stored = load_session(path)
    assert [m.content for m in stored[-2:]] == [APPROVAL_FAILED, NOT_EXECUTED_AFTER_FAILURE]
    assert "secret" not in path.read_text()
    assert_every_call_answered_once(stored)


def test_decisions_are_notes_any_store_keeps_and_the_last_one_counts(tmp_path: Path) -> None:
    effects = Effects()
    path = tmp_path / "s.jsonl"
    _deferred_session(path, effects)
    with JSONLSession(path) as store:
        decide(store, "c1", False, "first thought")
        decide(store, "c1", True)
        decide(store, "c2", False, "too risky")
        with pytest.raises(ValueError, match=r"'c0' is not a pending call .*pending: 'c1', 'c2'"):
            decide(store, "c0", True)
    found = decisions(load_session(path))
    assert found == {"c1": Approval(True), "c2": Approval(False, "refused by the user: too risky")}
    tools = effects.tools()
    result = run_agent(
        client=ScriptedClient([["done"]]),
        system="",
        tools=tools,
        user=None,
        max_turns=1,
        session_path=path,
        before_tool_call=decided(load_session(path), defer_changes(tools)),
    )
    assert result.stop_reason == "complete" and effects.writes == [WRITE_1.input]


def test_a_decision_cannot_be_recorded_while_a_run_holds_the_session(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    _deferred_session(path, Effects())
    with JSONLSession(path) as running:
        running.load()
        with JSONLSession(path) as other, pytest.raises(SessionError, match="in use"):
            decide(other, "c1", True)


def test_notes_are_messages_in_json_and_a_bad_state_is_refused() -> None:
    pending = note("c1", "pending", "why")
    assert message_to_json(pending) == {
        "role": "tool",
        "content": "why",
        "tool_call_id": "c1",
        "state": "pending",
    }
    assert message_from_json(message_to_json(pending)) == pending and pending.is_note
    assert not Message("tool", "x", (), "c1").is_note
    with pytest.raises(ValueError, match="bad tool message state"):
        message_from_json({"role": "tool", "content": "", "tool_call_id": "c1", "state": "paused"})


def test_providers_never_get_a_note() -> None:
    record = [
        Message("user", "go"),
        Message("assistant", "", (WRITE_1,)),
        note("c1", "pending"),
        note("c1", "started"),
        Message("tool", "wrote", (), "c1"),
    ]
    assert pair_tool_messages(record) == [record[0], record[1], record[4]]


def test_run_result_json_carries_the_pending_calls(tmp_path: Path) -> None:
    result = _deferred_session(tmp_path / "s.jsonl", Effects())
    data = result.to_json()
    assert data["pending"] == [
        {"id": "c1", "name": "write", "input": WRITE_1.input},
        {"id": "c2", "name": "write", "input": WRITE_2.input},
    ]
    back = RunResult.from_json(data)
    assert (
        back.pending == result.pending and back.stop_reason == "deferred" and back.messages == result.messages
    )
    assert RunResult.from_json({"messages": [], "stop_reason": "complete"}).pending == ()


def test_the_defer_mode_defers_only_tools_that_may_change_something() -> None:
    tools = Effects().tools()
    policy = policy_for("defer", tools)
    assert policy(READ) == Approval(True) and policy(WRITE_1).deferred and not policy.will_ask(WRITE_1)
    assert policy(ToolCall("x", "no_such_tool", {})) == Approval(True)  # the loop answers unknown tools


class _MemoryStore:
    """A ``SessionStore`` over a list (what a custom store does: keep the messages it is given)."""

    def __init__(self, messages: list[Message]) -> None:
        self.messages = list(messages)

    def load(self) -> list[Message]:
        return list(self.messages)

    def append(self, message: Message) -> None:
        self.messages.append(message)

    def close(self) -> None:
        pass

    def __enter__(self) -> _MemoryStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
