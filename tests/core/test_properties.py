"""Property-based runs: random scripts of turns, calls, refusals, unknown names, raising tools,
a cancel at any step, session on or off and budgets; the loop's invariants hold after every run."""

from __future__ import annotations

import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from miniagent import (
    Approval,
    EmptyResponseError,
    Message,
    ModelRequest,
    TextEvent,
    Tool,
    ToolCall,
    ToolCallEvent,
    ToolResult,
    load_session,
    message_chars,
    run_agent,
)
from tests.helpers import assert_every_call_answered_once

SECRET = "SECRET-exception-text"


class ToolBoom(Exception):
    pass


class HookBoom(Exception):
    pass


class StreamBoom(Exception):
    pass


@dataclass
class Step:
    """One call the model makes: which tool, and how approval and the tool behave."""

    name: str  # "ok", "fail", or an unknown name
    refuse: bool


@dataclass
class World:
    cancel_at: int | None
    steps: int = 0
    cancel: threading.Event = field(default_factory=threading.Event)
    cancelled_at_commit: int | None = None

    def tick(self) -> None:
        self.steps += 1
        if self.cancel_at is not None and self.steps >= self.cancel_at:
            self.cancel.set()


turn_items = st.lists(
    st.one_of(
        st.text(max_size=5).map(lambda t: ("text", t)),
        st.builds(Step, st.sampled_from(["ok", "ok", "fail", "nope"]), st.booleans()).map(
            lambda s: ("call", s)
        ),
        st.just(("raise", None)),
    ),
    max_size=4,
)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    script=st.lists(turn_items, min_size=1, max_size=5),
    cancel_at=st.one_of(st.none(), st.integers(1, 30)),
    hook_fails_at=st.one_of(st.none(), st.integers(1, 6)),
    use_session=st.booleans(),
    budget=st.one_of(st.none(), st.integers(1, 80)),
    max_turns=st.integers(0, 6),
)
def test_invariants_hold_for_random_scripts(
    script: list[list[tuple[str, Any]]],
    cancel_at: int | None,
    hook_fails_at: int | None,
    use_session: bool,
    budget: int | None,
    max_turns: int,
) -> None:
    world = World(cancel_at)
    counter = iter(range(1_000_000))
    requests: list[list[Message]] = []

    def turn(items: list[tuple[str, Any]]):  # type: ignore[no-untyped-def]
        def play(request: ModelRequest):  # type: ignore[no-untyped-def]
            requests.append(list(request.messages))
            for kind, value in items:
                world.tick()
                if kind == "text":
                    yield TextEvent(value)
                elif kind == "call":
                    yield ToolCallEvent(ToolCall(f"c{next(counter)}", value.name, {"refuse": value.refuse}))
                else:
                    raise StreamBoom(SECRET)

        return play

    class Client:
        def __init__(self) -> None:
            self.turns = [turn(items) for items in script]

        def stream(self, request: ModelRequest):  # type: ignore[no-untyped-def]
            if not self.turns:
                return iter([TextEvent("the end")])
            return self.turns.pop(0)(request)

    def ok(arguments: dict[str, Any], cancel: threading.Event | None) -> ToolResult:
        world.tick()
        return ToolResult("fine")

    def fail(arguments: dict[str, Any], cancel: threading.Event | None) -> ToolResult:
        world.tick()
        raise ToolBoom(SECRET)

    hook_calls = iter(range(1, 1_000_000))

    def hook(call: ToolCall) -> Approval:
        world.tick()
        if hook_fails_at is not None and next(hook_calls) == hook_fails_at:
            raise HookBoom(SECRET)
        return Approval(not call.input.get("refuse"), "refused by policy")

    committed: list[Message] = []

    def on_message(message: Message) -> None:
        if message.role == "assistant" and world.cancel.is_set():
            raise AssertionError("an assistant message was committed after the cancel")
        committed.append(message)

    tools = [
        Tool("ok", "", {"type": "object"}, ok),
        Tool("fail", "", {"type": "object"}, fail),
    ]
    with tempfile.TemporaryDirectory() as folder:
        session = Path(folder) / "s.jsonl" if use_session else None
        result = None
        try:
            result = run_agent(
                client=Client(),
                system="s",
                tools=tools,
                user="go",
                max_turns=max_turns,
                cancel=world.cancel,
                before_tool_call=hook,
                session_path=session,
                context_max_chars=budget,
                on_message=on_message,
            )
        except (ToolBoom, HookBoom, StreamBoom, EmptyResponseError):
            assert not world.cancel.is_set()  # once cancelled, failures end as aborted
        except ValueError as error:
            assert budget is not None and "cannot hold" in str(error)

        record = result.messages if result is not None else committed
        if result is not None:
            assert result.messages == committed
            assert result.stop_reason in ("complete", "max_turns", "aborted")
            assert (result.stop_reason == "aborted") <= world.cancel.is_set()
        assert_every_call_answered_once(record)
        assert all(m.role != "assistant" or m.content or m.tool_calls for m in record)
        assert all(SECRET not in m.content for m in record)
        if session is not None:
            assert load_session(session) == record
            assert SECRET not in (session.read_text() if session.exists() else "")
        for sent in requests:
            if budget is not None:
                assert sum(map(message_chars, sent)) <= budget
                assert not sent or sent[0].role != "tool"
            assert_every_call_answered_once(sent)
