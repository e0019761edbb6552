"""The state of one ``check_value`` call: the root schema (``$ref`` targets), and when to stop.

Work is counted as it goes (``spend``: items, properties, sub-schemas; a pattern search by its
bound on backtracking); every ``POLL_EVERY`` units the cancel event and the clock are read, and
``Stop`` is raised when the event is set or the time is up. The clock starts at the first such
look, so a check too small to reach one never reads it (the usual tool input: no cost). A
pattern search that might backtrack for long runs in a child process that is killed when the
check must stop (``bounded_search``).

``resolve`` follows local references only (``#``, ``#/$defs/Name``, any JSON pointer into the
root schema, percent-encoding decoded); ``on_a_fresh_stack`` reruns a check that ran out of
stack in a new thread, so the verdict on a deep value does not depend on the caller's own depth.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from . import bounded_search

if TYPE_CHECKING:
    import threading

    from .ecma_regex import Translated

__all__ = ["POLL_EVERY", "Stop", "Context", "usable_pattern", "resolve", "on_a_fresh_stack"]

POLL_EVERY = 4096  # units of work between two looks at the cancel event and the clock
_STEPS_PER_UNIT = 4096  # a pattern search's bound on backtracking steps, per unit of work


class Stop(Exception):
    """The check was cancelled or ran out of time; ``str`` is the text for the problem."""


class Context:
    """One check's root schema and limits (see the module docstring).

    Args:
        root: the schema given to ``check_value``.
        cancel: stops the check when set.
        timeout: seconds the check may take, or ``None``.
    """

    __slots__ = ("budget", "cancel", "deadline", "root", "timeout")

    def __init__(self, root: Any, cancel: threading.Event | None, timeout: float | None) -> None:
        self.root = root
        self.cancel = cancel
        self.timeout = timeout
        self.deadline: float | None = None  # set at the first look at the clock
        self.budget = POLL_EVERY

    def stop_reason(self) -> str | None:
        """Why the check must stop now (the text of its problem), or ``None``."""
        if self.cancel is not None and self.cancel.is_set():
            return "the check was cancelled"
        if self.timeout is not None:
            now = time.monotonic()
            if self.deadline is None:
                self.deadline = now + self.timeout
            elif now > self.deadline:
                return f"the check took longer than {self.timeout:g} s and was stopped"
        return None

    def spend(self, amount: int) -> None:
        """Count ``amount`` units of work; past the budget, look at the cancel event and clock.

        Raises:
            Stop: the check must stop.
        """
        self.budget -= amount
        if self.budget < 0:
            self.budget = POLL_EVERY
            reason = self.stop_reason()
            if reason is not None:
                raise Stop(reason)

    def check(self, schema: Any, value: Any, where: str) -> str | None:
        """The problem of ``value`` against ``schema`` (the validator's subclass runs it)."""
        raise NotImplementedError

    def resolve(self, reference: Any) -> Any:
        """The target of the ``$ref`` value ``reference``, or ``None`` when it cannot be followed."""
        target = resolve(reference, self.root)
        return None if target is UNRESOLVED else target

    def search(self, pattern: Any, text: str) -> bool | None:
        """Whether the ECMA-262 ``pattern`` matches in ``text``; ``None`` for a pattern that
        cannot run (not checked). A search whose bound on backtracking passes
        ``bounded_search.IN_PROCESS_STEPS`` runs in the child process.

        Raises:
            Stop: stopped meanwhile, or the search could not finish (its child died).
        """
        translated = _USABLE.get(pattern, _UNKNOWN) if type(pattern) is str else None
        if translated is _UNKNOWN:
            translated = usable_pattern(pattern)
        if translated is None:
            return None
        steps = translated.steps(len(text))
        if steps > _STEPS_PER_UNIT:
            self.spend(steps // _STEPS_PER_UNIT)
        if steps <= bounded_search.IN_PROCESS_STEPS:
            return translated.compiled.search(text) is not None
        try:
            return bounded_search.search_in_child(translated, text, self.stop_reason)
        except bounded_search.Stopped as stopped:
            raise Stop(stopped.reason) from None
        except bounded_search.SearchFailed as failed:
            raise Stop(f"the pattern {pattern!r} could not be checked ({failed})") from None


_UNKNOWN: Any = object()  # not looked up yet
_USABLE: dict[str, Translated | None] = {}  # pattern text -> translation (None: cannot run)
_USABLE_MAX = 512


def usable_pattern(pattern: Any) -> Translated | None:
    """``pattern`` translated to ``re`` (``ecma_regex.translate``, imported on the first pattern
    of the process), or ``None`` when it is not a pattern miniagent can run; remembered per text."""
    from .ecma_regex import PatternError, translate

    try:
        translated: Translated | None = translate(pattern)
    except (PatternError, TypeError):
        translated = None
    if isinstance(pattern, str):
        if len(_USABLE) >= _USABLE_MAX:
            _USABLE.clear()
        _USABLE[pattern] = translated
    return translated


UNRESOLVED = object()


def resolve(reference: Any, root: Any) -> Any:
    """Follow a local ``$ref`` (``#``, ``#/$defs/Name``, any JSON pointer into the root schema);
    anything else is ``UNRESOLVED`` (not checked)."""
    if not isinstance(reference, str) or not reference.startswith("#"):
        return UNRESOLVED
    node = root
    pointer = reference[1:]
    if "%" in pointer:  # a URI fragment may be percent-encoded
        from urllib.parse import unquote

        pointer = unquote(pointer)
    if not pointer:
        return node
    if not pointer.startswith("/"):
        return UNRESOLVED  # an anchor name: not supported
    for part in pointer[1:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return UNRESOLVED
    return node


def on_a_fresh_stack(function: Callable[..., str | None], *args: Any) -> str | None:
    """``function(*args)`` in a new thread, whose stack starts empty: the verdict on a deep value
    then does not depend on how deep the caller's own stack is. Re-raises what it raised."""
    import threading

    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(function(*args))
        except BaseException as error:
            outcome.append(error)

    thread = threading.Thread(target=run, name="miniagent-check", daemon=True)
    thread.start()
    thread.join()
    if isinstance(outcome[0], BaseException):
        raise outcome[0]
    result: str | None = outcome[0]
    return result
