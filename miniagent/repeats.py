"""The stop for loops: ``run_agent(max_repeats=N)`` (DESIGN.md "Unattended runs").

A model that makes the same call again and again and gets the same result every time is not
getting anywhere. ``Repeats`` watches this run's answered calls in the order they were answered:

- Two calls are the same when their tool names are equal and their arguments are equal as JSON
  (``canonical_arguments``: keys sorted, compact; so key order does not matter, ``1`` and ``1.0``
  differ as JSON texts do); the call id never matters.
- Two results are the same when their content and ``is_error`` are equal (refusals, unknown
  tools and bad-input errors are results too: a model stuck on a refused call is stuck).
- The streak counts the same call with the same result in a row; any other answered call ends
  it. A call of a tool marked ``Tool.repeatable`` (a poll) never counts and also ends a streak.
- Only this run's calls count (as ``max_turns`` counts this run's requests); the loop asks
  ``stalled`` before each model request, so the last turn's calls are all answered when the run
  stops ``no_progress``.
"""

from __future__ import annotations

import json
from collections.abc import Container

from .messages import ToolCall

__all__ = ["Repeats", "canonical_arguments", "check_max_repeats"]


def canonical_arguments(call: ToolCall) -> str:
    """The arguments of ``call`` as one JSON text in which equal objects are equal texts: keys
    sorted, compact separators, characters as they are (a call whose arguments could not be
    decoded adds its ``input_error``)."""
    text = json.dumps(call.input, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=repr)
    return text if call.input_error is None else f"{text} {call.input_error}"


def check_max_repeats(max_repeats: object) -> None:
    """Refuse a ``max_repeats`` that is neither ``None`` nor an int >= 2.

    Raises:
        ValueError: it is a bool, not an int, or below 2 (one answered call is always "the same
            call once": a limit of 1 would stop every run that calls a tool).
    """
    if max_repeats is None:
        return
    if isinstance(max_repeats, bool) or not isinstance(max_repeats, int) or max_repeats < 2:
        raise ValueError(f"max_repeats must be None or an int >= 2, got {max_repeats!r}")


class Repeats:
    """The streak of the same call with the same result, over this run's answered calls.

    Args:
        limit: the streak that stops the run (an int >= 2, ``check_max_repeats``).
        repeatable: the names of the tools whose calls never count (``Tool.repeatable``).
    """

    __slots__ = ("_count", "_key", "_repeatable", "limit")

    def __init__(self, limit: int, repeatable: Container[str]) -> None:
        self.limit = limit
        self._repeatable = repeatable
        self._key: tuple[str, str, str, bool] | None = None
        self._count = 0

    def answered(self, call: ToolCall, content: str, is_error: bool) -> None:
        """Count one answered call (in the order the loop answered them)."""
        if call.name in self._repeatable:
            self._key, self._count = None, 0
            return
        key = (call.name, canonical_arguments(call), content, is_error)
        if key == self._key:
            self._count += 1
        else:
            self._key, self._count = key, 1

    @property
    def streak(self) -> int:
        """How many times in a row the last counted call got the same result."""
        return self._count

    @property
    def stalled(self) -> bool:
        """Whether the streak has reached ``limit``."""
        return self._count >= self.limit
