"""``miniagent session pop PATH``: drop the last user message of a session and what followed it;
``session pending PATH``, ``session approve PATH CALL_ID`` and ``session deny PATH CALL_ID``:
the calls a ``--approve defer`` run left waiting, and the decisions on them; ``session list``
and ``session show PATH``: the sessions the CLI worked on (``session_log``) and one record as text.

A run whose first request the server refuses (say, a prompt over the model's context size) leaves
its user message in the session, so every later run on it would fail the same way. ``pop``
removes the last exchange: the last user message and every message after it. The file stays a
valid session (only whole lines at its end are cut, under the session's lock, so no run can write
meanwhile; lines are counted by the loader's own ``session_lines``, so a ``\\r`` inside a line is
never taken for a line break); a corrupt or locked session is refused untouched.

A decision is one note appended under the session's lock (``pending.decide``): it fails while a
run holds the session, and once the command has exited 0 the note is in the file, so the next
``run --continue`` answers the call with it (DESIGN.md "Unattended runs").
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import SessionError
from ..messages import Message, Summary, ToolCall
from ..pending import decide, decisions, open_calls
from ..session import JSONLSession, holds_record, session_lines

__all__ = [
    "PendingCall",
    "list_pending",
    "list_text",
    "pop_last_exchange",
    "record_decision",
    "record_text",
]


@dataclass(frozen=True)
class PendingCall:
    """A call that waits for a decision, and the decision recorded so far.

    Args:
        call: the tool call (id, name, input).
        decision: ``None`` (undecided), ``"approved"`` or ``"denied"``.
        reason: the denial's reason, or why the run deferred it (undecided).
    """

    call: ToolCall
    decision: str | None
    reason: str


def list_pending(path: Path) -> list[PendingCall]:
    """The pending calls of the session at ``path``, in order, with their decisions.

    Raises:
        SessionError: no such file, a bad line, or a run holds the session's lock.
        OSError: the file cannot be read.
    """
    if not path.is_file():
        raise SessionError(path, "no such session file")
    with JSONLSession(path) as store:
        opened = open_calls(store.load())
    listed = []
    for call in opened.pending:
        state, reason = opened.decisions.get(call.id, (None, opened.reason))
        listed.append(PendingCall(call, state, reason))
    return listed


def record_decision(path: Path, call_id: str, approved: bool, reason: str = "") -> str | None:
    """Record that the pending call ``call_id`` of the session at ``path`` may run (``approved``)
    or is refused (with ``reason``); a later decision for a call replaces its earlier one.

    Returns:
        The call's earlier decision that this one replaces (``"approved"`` or ``"denied"``), or
        ``None``.

    Raises:
        ValueError: ``call_id`` is not a pending call of the session (the text lists them).
        SessionError: no such file, a bad line, or a run holds the session's lock.
        OSError: the file cannot be read or written.
    """
    if not path.is_file():
        raise SessionError(path, "no such session file")
    with JSONLSession(path) as store:
        earlier = decisions(store.load()).get(call_id)
        decide(store, call_id, approved, reason)
    return None if earlier is None else "approved" if earlier.approved else "denied"


def pop_last_exchange(path: Path) -> list[Message]:
    """Remove the last user message of the session at ``path`` and every message after it (a
    compaction's ``Summary`` is not one: the message before it and the summary go).

    Returns:
        The removed messages, oldest first.

    Raises:
        SessionError: the file has a bad line, is locked by a run, or holds no user message.
        OSError: the file cannot be read or cut.
    """
    if not path.is_file():
        raise SessionError(path, "no such session file")
    with JSONLSession(path) as store:
        messages = store.load()  # takes the lock; a bad line raises, nothing is changed
        last_user = next((i for i in range(len(messages) - 1, -1, -1) if _said_by_user(messages[i])), None)
        if last_user is None:
            raise SessionError(path, "has no user message to drop")
        os.truncate(path, _line_start(path.read_bytes(), last_user))
    return messages[last_user:]


def _said_by_user(message: Message) -> bool:
    """A user message that is not a compaction summary (which the loop wrote)."""
    return message.role == "user" and not isinstance(message, Summary)


def _line_start(data: bytes, index: int) -> int:
    """Byte offset of the line holding message number ``index``, counted as the loader counts
    (``session_lines``: a line ends at ``\\n`` only; blank lines hold none)."""
    number = 0
    for offset, line in session_lines(data):
        if holds_record(line):
            if number == index:
                return offset
            number += 1
    raise AssertionError("the session changed under its lock")


def record_text(messages: list[Message]) -> str:
    """The record as text for a person: one block per message (its number, its role, a call's
    name and arguments, a result's call id), the text indented by four spaces; notes about calls
    (``pending``) and compaction summaries are named as such. Control characters are shown as
    escapes (``terminal.neutralise``)."""
    from ..approval import show_call
    from .terminal import neutralise

    blocks = []
    for number, message in enumerate(messages, 1):
        if isinstance(message, Summary):
            head = "summary (compaction: what the model saw in place of the messages before)"
        elif message.state is not None:
            head = f"note on {message.tool_call_id}: {message.state}"
        elif message.role == "tool":
            head = f"tool result of {message.tool_call_id}" + (" (error)" if message.is_error else "")
        else:
            head = message.role
        lines = [f"[{number}] {head}"]
        lines += [f"    {line}" for line in message.content.splitlines()]
        lines += [f"    -> {call.id}: {show_call(call)}" for call in message.tool_calls]
        blocks.append(neutralise("\n".join(lines)))
    return "\n".join(blocks) + ("\n" if blocks else "")


def list_text(known: list[Any]) -> str:
    """``session list``'s lines: when (local time), turns, last stop reason, cost, path."""
    import time

    from .terminal import neutralise

    lines = []
    for item in known:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(item.when))
        cost = "-" if item.cost_usd is None else f"${item.cost_usd:.4f}"
        turns = f"{item.turns} turn{'' if item.turns == 1 else 's'}"
        lines.append(f"{when}  {turns:>9}  {item.stop_reason:<11}  {cost:>9}  {neutralise(str(item.path))}")
    return "".join(line + "\n" for line in lines)
