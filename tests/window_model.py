"""A fake model with a context window that reports the usage of every request, for the
compaction tests: what a compacting run sends, counted as a provider would count it."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from miniagent import (
    DoneEvent,
    Message,
    ModelEvent,
    ModelRequest,
    TextEvent,
    ToolCall,
    ToolCallEvent,
    Usage,
    UsageEvent,
    message_chars,
)
from miniagent.compaction import SUMMARY_INSTRUCTION

CHARS_PER_TOKEN = 3  # not the loop's guess of 4: the loop must go by the reported usage
MESSAGE_TOKENS = 4  # what each message costs besides its text (role, separators)


def request_tokens(request: ModelRequest) -> int:
    """Input tokens of a request, as this fake counts them."""
    chars = len(request.system)
    for spec in request.tools:
        chars += len(spec.name) + len(spec.description) + len(json.dumps(spec.input_schema))
    chars += sum(message_chars(m) for m in request.messages)
    return chars // CHARS_PER_TOKEN + MESSAGE_TOKENS * len(request.messages) + 1


def is_summary_request(request: ModelRequest) -> bool:
    return (
        not request.tools
        and len(request.messages) == 1
        and SUMMARY_INSTRUCTION in request.messages[0].content
    )


@dataclass
class Sent:
    """One request as the fake saw it."""

    summary: bool
    messages: list[Message]
    tokens: int


Answer = Callable[[int, ModelRequest], list[object]]


@dataclass
class WindowModel:
    """A ``ModelClient`` with a context window of ``window`` tokens.

    Turn requests get ``answer(turn_index, request)`` (text, ``ToolCall``, events, exceptions
    to raise, or callables to call at that point of the stream); summary
    requests get ``summary(request)`` (default: a fixed text of ``summary_chars`` characters).
    Every request reports ``UsageEvent`` (unless ``report_usage`` is false); every request is
    recorded in ``sent`` with its token count.
    """

    window: int
    answer: Answer
    summary: Callable[[ModelRequest], list[object]] | None = None
    summary_chars: int = 1_500
    report_usage: bool = True
    sent: list[Sent] = field(default_factory=list)
    turns: int = 0

    def stream(self, request: ModelRequest) -> Iterator[ModelEvent]:
        tokens = request_tokens(request)
        summary = is_summary_request(request)
        self.sent.append(Sent(summary, list(request.messages), tokens))
        if summary:
            items = self.summary(request) if self.summary else ["S" * self.summary_chars]
        else:
            items = self.answer(self.turns, request)
            self.turns += 1
        return self._play(items, tokens)

    def _play(self, items: list[object], tokens: int) -> Iterator[ModelEvent]:
        if self.report_usage:
            yield UsageEvent(Usage(tokens, 10, requests=1))
        ended = False
        for item in items:
            if isinstance(item, str):
                yield TextEvent(item)
            elif isinstance(item, ToolCall):
                yield ToolCallEvent(item)
            elif isinstance(item, BaseException):
                raise item
            elif callable(item):  # something that happens at that point of the stream
                item()
            else:
                assert isinstance(item, (DoneEvent, TextEvent, ToolCallEvent, UsageEvent))
                ended = ended or isinstance(item, DoneEvent)
                yield item
        if not ended:
            yield DoneEvent("end_turn")

    @property
    def over_window(self) -> list[Sent]:
        return [s for s in self.sent if s.tokens > self.window]

    @property
    def summaries(self) -> list[Sent]:
        return [s for s in self.sent if s.summary]

    @property
    def turn_requests(self) -> list[Sent]:
        return [s for s in self.sent if not s.summary]
