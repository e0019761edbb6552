"""``miniagent session pop PATH``: drop the last user message of a session and what followed it.

A run whose first request the server refuses (say, a prompt over the model's context size) leaves
its user message in the session, so every later run on it would fail the same way. ``pop``
removes the last exchange: the last user message and every message after it. The file stays a
valid session (only whole lines at its end are cut, under the session's lock, so no run can write
meanwhile; lines are counted by the loader's own ``session_lines``, so a ``\\r`` inside a line is
never taken for a line break); a corrupt or locked session is refused untouched.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import SessionError
from ..messages import Message, Summary
from ..session import JSONLSession, holds_record, session_lines

__all__ = ["pop_last_exchange"]


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
