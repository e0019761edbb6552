"""Calls that wait for a decision, as the record notes them (DESIGN.md "Unattended runs").

A hook that answers ``Approval.defer()`` stops the run before that call; the call and the later
calls of its turn get no result yet. The record says so with notes: ``tool`` messages whose
``state`` is set (``Message.is_note``). A note is one more message, so every store (JSONL,
SQLite, Redis, any ``SessionStore``) keeps it as it keeps the others; the loop never sends a note
to a model, and a note never counts as a call's answer.

Notes, each about the call ``tool_call_id``:

- ``pending`` (content: the deferral's reason): the run stopped before this call. It and every
  later call of the same assistant message that has no result are pending. One note per
  deferral, written with one append, so a kill leaves it whole or absent.
- ``approved`` / ``denied`` (content: the reason of a denial): a decision recorded for a pending
  call while no run holds the session (``decide``); the last one for a call counts.
  ``decided(messages, otherwise)`` is a ``before_tool_call`` hook that answers them.
- ``started``: a pending call is about to execute (written by the loop right before the tool
  runs, after its approval and input check).

How a later run reads the calls of the record's last assistant message that have no result
(``open_calls``):

- after a ``started`` note: the previous process ended while the tool ran (or right after it,
  before its result was stored). It may have run; it is answered ``INTERRUPTED_AFTER_START``
  (an error result) and never run again.
- covered by a ``pending`` note and not started: pending; ``run_agent`` asks its hook again.
- otherwise: the call was cut off by a crash between the commit and its result; resume repair
  answers it ``MISSING_RESULT``. A call without a ``pending`` note is never taken for one.

At most once: a pending call executes only after its ``started`` note was appended, and an
append returns only once the store holds the message against the death of this process (JSONL:
the ``write`` is in the kernel; SQLite: the transaction committed; Redis: the server answered).
Against power loss, use ``JSONLSession(fsync=True)``, ``SQLiteSession(fsync=True)`` or a Redis
that fsyncs its AOF. It is not exactly once: a process killed after the ``started`` note and
before the tool's effect leaves a call that never ran, reported as one that may have.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from .messages import MISSING_RESULT, CallState, Message, ToolCall
from .session import SessionStore
from .tools import Approval, BeforeToolCall

__all__ = [
    "INTERRUPTED_AFTER_START",
    "MISSING_RESULT",
    "OpenCalls",
    "can_continue",
    "decide",
    "decided",
    "decisions",
    "note",
    "open_calls",
    "pending_calls",
]

INTERRUPTED_AFTER_START = (
    "interrupted after it started: the previous run ended before its result was stored, so it may "
    "have run; it is not run again"
)
"""The error result of a pending call whose ``started`` note has no result after it."""


def note(call_id: str, state: CallState, reason: str = "") -> Message:
    """The note ``state`` about the call ``call_id``: ``Message("tool", reason,
    tool_call_id=call_id, state=state)``."""
    return Message("tool", reason, tool_call_id=call_id, state=state)


@dataclass(frozen=True, slots=True)
class OpenCalls:
    """The calls of the record's last assistant message that have no result, by what the notes
    say (each tuple in the message's call order; see the module docstring).

    Attributes:
        interrupted: no note: cut off by a crash before a result; answered ``MISSING_RESULT``.
        started: a ``started`` note and no result: may have run; answered
            ``INTERRUPTED_AFTER_START``, never run again.
        pending: waiting for a decision (a ``pending`` note covers them).
        reason: the ``pending`` note's reason (``""`` without one).
        decisions: the last decision note of each pending call: call id -> ``approved`` /
            ``denied`` and its reason.
    """

    interrupted: tuple[ToolCall, ...] = ()
    started: tuple[ToolCall, ...] = ()
    pending: tuple[ToolCall, ...] = ()
    reason: str = ""
    decisions: dict[str, tuple[CallState, str]] = field(default_factory=dict)

    @property
    def any_open(self) -> bool:
        """Whether some call of the last assistant message has no result."""
        return bool(self.interrupted or self.started or self.pending)


_NONE = OpenCalls()


def open_calls(messages: Sequence[Message]) -> OpenCalls:
    """Read the calls without a result of the last assistant message of ``messages``.

    Only the tool messages after that assistant message count (results and notes); a record
    whose last message that is not a tool message is a user message has no open calls.

    Args:
        messages: a record, oldest first (e.g. ``SessionStore.load()``).

    Returns:
        An ``OpenCalls`` (empty tuples when every call has a result).
    """
    end = len(messages)
    start = end
    while start > 0 and messages[start - 1].role == "tool":
        start -= 1
    if start == 0 or messages[start - 1].role != "assistant" or not messages[start - 1].tool_calls:
        return _NONE
    calls = messages[start - 1].tool_calls
    answered: set[str] = set()
    started: set[str] = set()
    pending_from: str | None = None
    reason = ""
    decided: dict[str, tuple[CallState, str]] = {}
    for message in messages[start:end]:
        call_id = message.tool_call_id or ""
        if message.state is None:
            answered.add(call_id)
        elif message.state == "started":
            started.add(call_id)
        elif message.state == "pending":
            if pending_from is None:
                pending_from, reason = call_id, message.content
        else:
            decided[call_id] = (message.state, message.content)
    return _classify(calls, answered, started, pending_from, reason, decided)


def _classify(
    calls: tuple[ToolCall, ...],
    answered: set[str],
    started: set[str],
    pending_from: str | None,
    reason: str,
    decided: dict[str, tuple[CallState, str]],
) -> OpenCalls:
    """Sort the calls without a result into interrupted, started and pending."""
    interrupted: list[ToolCall] = []
    was_started: list[ToolCall] = []
    pending: list[ToolCall] = []
    covered = False
    for call in calls:
        covered = covered or call.id == pending_from
        if call.id in answered:
            continue
        if call.id in started:
            was_started.append(call)
        elif covered:
            pending.append(call)
        else:
            interrupted.append(call)
    if not (interrupted or was_started or pending):
        return _NONE
    ids = {call.id for call in pending}
    decisions = {call_id: decision for call_id, decision in decided.items() if call_id in ids}
    return OpenCalls(tuple(interrupted), tuple(was_started), tuple(pending), reason, decisions)


def pending_calls(messages: Sequence[Message]) -> tuple[ToolCall, ...]:
    """The calls of ``messages`` that wait for a decision, in order (``open_calls(...).pending``)."""
    return open_calls(messages).pending


def decisions(messages: Sequence[Message]) -> dict[str, Approval]:
    """The decisions recorded for the pending calls of ``messages``: call id -> ``Approval``.

    ``approved`` -> ``Approval(True)``; ``denied`` -> ``Approval(False, "refused by the user:
    REASON")`` (``"refused by the user"`` without a reason), the wording of
    ``approval.TerminalApproval``. Pending calls without a decision are left out.
    """
    found = open_calls(messages).decisions
    return {call_id: _approval(state, reason) for call_id, (state, reason) in found.items()}


def _approval(state: CallState, reason: str) -> Approval:
    if state == "approved":
        return Approval(True)
    return Approval(False, f"refused by the user: {reason}" if reason else "refused by the user")


def decided(messages: Sequence[Message], otherwise: BeforeToolCall) -> BeforeToolCall:
    """A ``before_tool_call`` hook that answers the decisions recorded in ``messages`` and asks
    ``otherwise`` about every other call.

    Args:
        messages: the record the run will go on from (read now: its ``decisions``).
        otherwise: the hook for calls without a recorded decision (its exceptions propagate).
    """
    known = decisions(messages)

    def hook(call: ToolCall) -> Approval:
        approval = known.get(call.id)
        return approval if approval is not None else otherwise(call)

    return hook


def decide(store: SessionStore, call_id: str, approved: bool, reason: str = "") -> Message:
    """Record a decision for the pending call ``call_id`` of ``store``'s session.

    Takes the store's lock (through ``load``), so it fails while a run holds the session. The
    decision is one appended note; when ``decide`` returns, the store holds it (see the module
    docstring for what that means per store). A later decision for the same call replaces it.

    Args:
        store: the open session (the caller closes it).
        call_id: the id of a pending call (``pending_calls``).
        approved: run it (``True``) or refuse it (``False``).
        reason: why it is refused (recorded for the model as ``refused by the user: REASON``).

    Returns:
        The note appended.

    Raises:
        ValueError: ``call_id`` is not a pending call of the session (the text lists those).
        SessionError: another run holds the session, or a stored record is unreadable.
        OSError: the store could not write.
    """
    pending = pending_calls(store.load())
    if all(call.id != call_id for call in pending):
        listed = ", ".join(repr(call.id) for call in pending) or "none"
        raise ValueError(f"{call_id!r} is not a pending call of this session (pending: {listed})")
    message = note(call_id, "approved" if approved else "denied", "" if approved else reason)
    store.append(message)
    return message


def can_continue(messages: Sequence[Message]) -> str | None:
    """Why a run without a new user message (``run_agent(user=None)``) cannot go on from
    ``messages``, or ``None`` when it can.

    It can when there is something to go on from: pending or unanswered calls, or a last
    message of the conversation that is a user message or a tool result. It cannot when the
    record is empty or ends with the model's answer (an assistant message without calls).
    """
    conversation = [message for message in messages if message.state is None]
    if not conversation:
        return "the session is empty: there is nothing to continue"
    last = conversation[-1]
    if last.role == "assistant" and not last.tool_calls:
        return "the session ends with the model's answer: there is nothing to continue (give a new prompt)"
    return None
