"""Deterministic fakes for testing agents without a model: ``ScriptedClient``.

A ``ScriptedClient`` plays a script: one entry per model turn. Use it to test your own tools,
approval hooks and session handling against the real loop::

    from miniagent import ToolCall, run_agent
    from miniagent.testing import ScriptedClient

    client = ScriptedClient([
        [ToolCall("call_1", "add", {"a": 2, "b": 3})],   # turn 1: the model asks for a tool
        ["The sum is 5."],                               # turn 2: it answers in text
    ])
    result = run_agent(client=client, system="", tools=[add], user="2+3?", max_turns=4)
    assert client.requests[1].messages[-1].content == "5"

Each turn is either a list of items, or a callable ``(request) -> iterable of items`` for turns that
depend on what the loop sent (or that want to set a cancel event mid-stream). Items: a ``str``
(a text delta), a ``ToolCall`` (a whole tool call), a ``Reasoning`` (a whole reasoning block), a
``Usage`` (what the request used, e.g. ``Usage(input_tokens=100, output_tokens=20, requests=1)``),
or any ``ModelEvent`` as is. Items that are exceptions are raised at that point of the stream. A
``DoneEvent`` is appended to list turns; script one yourself to end a turn unnaturally, e.g.
``["The answer is", DoneEvent("length", "max_output_tokens")]`` (the loop then raises
``IncompleteResponseError``). A turn without a ``Usage`` item counts as a request whose usage
was not reported (``Usage.unreported_requests``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .messages import Message, Reasoning, ToolCall
from .model import (
    DoneEvent,
    ModelEvent,
    ModelRequest,
    ReasoningEvent,
    TextEvent,
    ToolCallEvent,
    ToolSpec,
    UsageEvent,
)
from .usage import Usage

if TYPE_CHECKING:  # annotations only: the core never starts a thread
    import threading

__all__ = ["ScriptedClient", "RecordedRequest", "ScriptItem", "Turn"]

ScriptItem = str | ToolCall | Reasoning | Usage | ModelEvent | BaseException
Turn = Sequence[ScriptItem] | Callable[[ModelRequest], Iterable[ScriptItem]]


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """A copy of one request the loop sent (``messages`` copied, so it stays valid)."""

    system: str
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...]
    cancel: threading.Event | None
    output_schema: dict[str, Any] | None = None


class ScriptedClient:
    """A ``ModelClient`` that plays scripted turns in order and records every request.

    Args:
        turns: one entry per model turn (see the module docstring).
        record_messages: copy each request's messages into ``requests`` (set ``False`` for very
            long runs, where copying the history every turn costs O(n) per turn).

    Attributes:
        requests: one ``RecordedRequest`` per ``stream()`` call, in order.
        closed: how many streams were closed before they were exhausted.

    ``stream()`` raises ``AssertionError`` when the script has no turn left (the loop then
    propagates it, failing the test with a clear message).
    """

    def __init__(self, turns: Iterable[Turn], *, record_messages: bool = True) -> None:
        self._turns = list(turns)
        self._record_messages = record_messages
        self.requests: list[RecordedRequest] = []
        self.closed = 0

    @property
    def remaining(self) -> int:
        """How many scripted turns have not been played yet."""
        return len(self._turns) - len(self.requests)

    def stream(self, request: ModelRequest) -> Iterator[ModelEvent]:
        """Record ``request`` and return the next turn's events (a generator)."""
        index = len(self.requests)
        messages = tuple(request.messages) if self._record_messages else ()
        self.requests.append(RecordedRequest(
                request.system, messages, request.tools, request.cancel, request.output_schema
            ))
        if index >= len(self._turns):
            raise AssertionError(
                f"ScriptedClient: the loop asked for turn {index + 1}, "
                f"but only {len(self._turns)} turn{'' if len(self._turns) == 1 else 's'} "
                f"{'is' if len(self._turns) == 1 else 'are'} scripted"
            )
        return self._play(self._turns[index], request)

    def _play(self, turn: Turn, request: ModelRequest) -> Iterator[ModelEvent]:
        items = turn(request) if callable(turn) else [*turn, DoneEvent()]
        finished = False
        try:
            for item in items:
                yield _to_event(item)
            finished = True
        finally:
            if not finished:
                self.closed += 1


def _to_event(item: ScriptItem) -> ModelEvent:
    if isinstance(item, BaseException):
        raise item
    if isinstance(item, str):
        return TextEvent(item)
    if isinstance(item, ToolCall):
        return ToolCallEvent(item)
    if isinstance(item, Usage):
        return UsageEvent(item)
    if isinstance(item, Reasoning):
        return ReasoningEvent(item)
    return item
