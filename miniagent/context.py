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
history. It trims with slack (several units at once, at cut points that depend only on the
messages), so the prefix of what is sent stays byte-stable for many requests and prompt caches
keep hitting; its window keeps every promise above except being the longest suffix.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import overload

from .messages import Message

__all__ = ["SLACK", "message_chars", "trim_context", "Trimmer", "MessageWindow"]

SLACK = 4
"""``Trimmer`` trims with slack: once the budget is exceeded it drops about ``1 / SLACK`` of the
budget at once, so the next requests keep the same prefix."""


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
    """Incremental, cache-friendly trimming of a growing list of messages to a budget.

    Call ``window()`` before each request; it looks only at messages appended since the last call.
    The window is a suffix of whole units within the budget that holds the newest unit, like
    ``trim_context``'s, but trimmed with slack: its start moves only when the budget is exceeded,
    and then to the next cut point. Cut points are unit starts at least ``max_chars // SLACK``
    characters apart, counted from the first message, so

    - between two moves the window only grows at its end: the request prefix stays byte-stable
      and a provider's prompt cache keeps hitting, for about a ``1 / SLACK`` share of the budget
      of new messages, instead of missing on every request once the budget is full;
    - the start depends only on the messages (a resumed run cuts where the first one did);
    - a move goes to the earliest cut point that fits, so the window then holds more than
      ``max_chars - max_chars // SLACK`` characters less one unit (the cost of the slack) when
      it moved one cut point, as it does while messages are small against the budget.

    When no cut point leaves a window that fits (a large newest unit), the start is the earliest
    unit start after the last cut point that does (``trim_context``'s rule).

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
        self._step = max(1, max_chars // SLACK)
        self._seen = 0
        # Running total of message_chars for messages[0:seen]; unit starts with the total before them.
        self._total = 0
        self._unit_starts: list[int] = []
        self._totals_before: list[int] = []
        self._cuts: list[int] = []  # indexes into _unit_starts of the cut points
        self._first = 0  # index into _cuts of the current window's cut point

    def _absorb(self) -> None:
        messages = self._messages
        starts, befores, cuts = self._unit_starts, self._totals_before, self._cuts
        for index in range(self._seen, len(messages)):
            message = messages[index]
            if message.role != "tool" or not starts:
                if not cuts or self._total - befores[cuts[-1]] >= self._step:
                    cuts.append(len(starts))
                starts.append(index)
                befores.append(self._total)
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
        """Return the trimmed view (see the class docstring for where it starts)."""
        self._absorb()
        starts, befores, cuts, total = self._unit_starts, self._totals_before, self._cuts, self._total
        if not starts:
            return MessageWindow(self._messages, len(self._messages))
        last = len(starts) - 1
        newest = total - befores[last]
        if newest > self._max_chars:
            raise _too_small(newest, self._max_chars)
        first = self._first
        while first + 1 < len(cuts) and total - befores[cuts[first]] > self._max_chars:
            first += 1
        self._first = first
        unit = cuts[first]
        while total - befores[unit] > self._max_chars:  # only past the last cut point
            unit += 1
        return MessageWindow(self._messages, starts[unit])
