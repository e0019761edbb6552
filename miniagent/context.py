"""Context trimming to a character budget (DESIGN.md, "Trimming").

Invariants:

- Trimming applies to the copy sent to the model, never to the record or the session: "trimming
  is visible to the model and invisible to the session" (spec).
- The history is cut into self-contained units: a user message; an assistant message without
  calls; an assistant message with calls together with the tool messages after it. A unit is
  never split, so a trimmed request never separates a call from its result.
- The result is the longest suffix of whole units whose total ``message_chars`` is at most the
  budget. A budget below 1, or a newest unit larger than the budget, raises ``ValueError``: a
  budget that cannot trim without breaking things is an error, never an empty context.

``Trimmer`` is the incremental form the loop uses: it keeps unit boundaries and running sizes as
messages are recorded, so each request costs O(1) amortised instead of a scan of the whole
history; its window is always identical to ``trim_context`` of the same messages.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import overload

from .messages import Message

__all__ = ["message_chars", "trim_context", "Trimmer", "MessageWindow"]


def message_chars(message: Message) -> int:
    """Size of a message in characters.

    ``len(content)`` plus, for each tool call, ``len(name)`` and the length of its input as
    compact JSON (``json.dumps(input, ensure_ascii=False, separators=(",", ":"))``), plus
    ``len(text)`` of each reasoning block.
    """
    size = len(message.content)
    for call in message.tool_calls:
        size += len(call.name) + len(json.dumps(call.input, ensure_ascii=False, separators=(",", ":")))
    for block in message.reasoning:
        size += len(block.text)
    return size


def _check_budget(max_chars: int) -> None:
    if isinstance(max_chars, bool) or not max_chars >= 1:  # also refuses NaN
        raise ValueError(f"context budget must be at least 1 character, got {max_chars}")


def _too_small(size: int, max_chars: int) -> ValueError:
    return ValueError(
        f"context budget of {max_chars} characters cannot hold the newest message unit ({size} characters)"
    )


def trim_context(messages: Sequence[Message], max_chars: int) -> list[Message]:
    """Return the longest suffix of whole units of ``messages`` that fits in ``max_chars``.

    Args:
        messages: the history, oldest first (not modified).
        max_chars: the budget in characters (``message_chars`` summed).

    Returns:
        A new list (empty only when ``messages`` is empty).

    Raises:
        ValueError: ``max_chars < 1``, or the newest unit alone is larger than ``max_chars``.
    """
    _check_budget(max_chars)
    unit_starts = [i for i, m in enumerate(messages) if i == 0 or m.role != "tool"]
    start = end = len(messages)
    total = 0
    for unit_start in reversed(unit_starts):
        unit = sum(message_chars(m) for m in messages[unit_start:end])
        if total + unit > max_chars:
            if end == len(messages):
                raise _too_small(unit, max_chars)
            break
        total += unit
        start = end = unit_start
    return list(messages[start:])


class MessageWindow(Sequence[Message]):
    """A read-only view of ``messages[start:]`` that copies nothing.

    Valid as long as the underlying list is only appended to; its length is fixed when created.
    """

    __slots__ = ("_messages", "_start", "_stop")

    def __init__(self, messages: list[Message], start: int = 0) -> None:
        self._messages = messages
        self._start = start
        self._stop = len(messages)

    def __len__(self) -> int:
        return self._stop - self._start

    @overload
    def __getitem__(self, index: int) -> Message: ...

    @overload
    def __getitem__(self, index: slice) -> list[Message]: ...

    def __getitem__(self, index: int | slice) -> Message | list[Message]:
        if isinstance(index, slice):
            return self._messages[self._start : self._stop][index]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError("message window index out of range")
        return self._messages[self._start + index]

    def __iter__(self) -> Iterator[Message]:
        messages = self._messages
        for index in range(self._start, self._stop):
            yield messages[index]

    def __repr__(self) -> str:
        return f"MessageWindow({list(self)!r})"


class Trimmer:
    """Incremental ``trim_context`` over a growing list of messages.

    Call ``window()`` before each request; it looks only at messages appended since the last call.

    Args:
        messages: the record; must only be appended to while the trimmer is used.
        max_chars: the budget in characters.

    Raises:
        ValueError: ``max_chars < 1`` (at construction) or, from ``window()``, the newest unit
            alone is larger than the budget.
    """

    def __init__(self, messages: list[Message], max_chars: int) -> None:
        _check_budget(max_chars)
        self._messages = messages
        self._max_chars = max_chars
        self._seen = 0
        # Running total of message_chars for messages[0:seen]; unit starts with the total before them.
        self._total = 0
        self._unit_starts: list[int] = []
        self._totals_before: list[int] = []
        self._first = 0  # index into _unit_starts of the current window's first unit

    def _absorb(self) -> None:
        messages = self._messages
        for index in range(self._seen, len(messages)):
            message = messages[index]
            if message.role != "tool" or not self._unit_starts:
                self._unit_starts.append(index)
                self._totals_before.append(self._total)
            self._total += message_chars(message)
        self._seen = len(messages)

    def check_fits(self, message: Message) -> None:
        """Raise the ``window()`` error now if ``message`` alone, as the next unit, will not fit.

        Lets a caller refuse a new user message before recording it.
        """
        size = message_chars(message)
        if size > self._max_chars:
            raise _too_small(size, self._max_chars)

    def window(self) -> MessageWindow:
        """Return the trimmed view: identical in content to ``trim_context(messages, max_chars)``."""
        self._absorb()
        starts, befores, total = self._unit_starts, self._totals_before, self._total
        if not starts:
            return MessageWindow(self._messages, len(self._messages))
        last = len(starts) - 1
        newest = total - befores[last]
        if newest > self._max_chars:
            raise _too_small(newest, self._max_chars)
        first = self._first
        while total - befores[first] > self._max_chars:
            first += 1
        self._first = first
        return MessageWindow(self._messages, starts[first])
