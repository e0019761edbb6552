"""``SQLiteSession``: many sessions in one SQLite file (standard-library ``sqlite3``).

Invariants (the JSONL file's promises, DESIGN.md "Session stores"):

- Table ``miniagent_messages(session_id, seq, record)``: ``seq`` counts a session's messages from
  1; ``record`` is the session line's JSON text (``encode_record``). Rows are only inserted, never
  updated or deleted.
- One transaction per message (``INSERT`` then ``COMMIT``), in WAL mode: a crash of the process
  keeps every committed message and nothing of the one being written; readers never block the
  writer. ``fsync=True`` (``synchronous=FULL``) makes each commit survive power loss too; the
  default ``synchronous=NORMAL`` is what WAL recommends against process crashes.
- One writer per session: an exclusive ``flock`` on a lock file beside the database
  (``<file>.locks/<sha256 of the session id>``), taken by the first ``load()`` or ``append()`` and
  held until ``close()``. A second writer fails at once with ``SessionError``; the kernel drops the
  lock of a process that dies, so a killed writer never holds it.
- The path must be a regular file (or not exist yet): a FIFO or a device is refused without
  blocking, a file that is not an SQLite database (its first 16 bytes) is refused before anything
  is created or locked, and left untouched.
- The first ``load()`` reads the rows; later ones return the history kept in memory.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from typing import Any

from ..errors import SessionError
from ..messages import Message
from ..session import PathLike, StoreContext, decode_record, encode_record

__all__ = ["SQLiteSession"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS miniagent_messages (
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    record TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID
"""


class SQLiteSession(StoreContext):
    """One session of an SQLite file, open for one writer: a ``SessionStore``.

    Args:
        path: the database file; created (with its folders) at the first ``append`` when missing.
        session_id: the session's name inside the file (any string).
        fsync: each commit reaches the disk before ``append`` returns (``synchronous=FULL``).
        timeout: seconds to wait for another session's write transaction in the same file.

    Raises (from ``load`` and ``append``):
        SessionError: another writer holds this session, a stored record is unreadable, the path
            is not a regular file or not an SQLite database, or (``append``) a message the loader
            would refuse.
        OSError: the lock file or folder cannot be created.
        sqlite3.Error: the database failed otherwise (disk full, I/O error).
    """

    def __init__(
        self, path: PathLike, session_id: str, *, fsync: bool = False, timeout: float = 30.0
    ) -> None:
        if not isinstance(session_id, str):
            raise TypeError(f"session_id must be a str, not {type(session_id).__name__}")
        self.path = path
        self.session_id = session_id
        self.fsync = fsync
        self.timeout = timeout
        self._where = f"{os.fspath(path)} [session {session_id!r}]"
        self._db: sqlite3.Connection | None = None
        self._lock_fd: int | None = None
        self._history: list[Message] | None = None
        self._count = 0  # messages stored in this session

    # --- the SessionStore protocol -----------------------------------------------------------------

    def load(self) -> list[Message]:
        """Lock the session and return its messages, oldest first (read once, then from memory)."""
        if self._history is not None:
            return list(self._history)
        db = self._open(create=False)
        if db is None:
            self._history = []
            return []
        rows = self._query(db, "SELECT record FROM miniagent_messages WHERE session_id = ? ORDER BY seq")
        messages = [decode_record(self._where, row[0], number) for number, row in enumerate(rows, 1)]
        self._count = len(messages)
        self._history = list(messages)
        return messages

    def append(self, message: Message) -> None:
        """Store one message after the others, in its own transaction."""
        record = encode_record(self._where, message).decode("utf-8")
        first = self._db is None
        db = self._open(create=True)
        assert db is not None
        if first:  # the lock is new: learn (or check) where this session ends
            rows = self._query(db, "SELECT count(*) FROM miniagent_messages WHERE session_id = ?")
            if self._history is None:
                self._count = int(rows[0][0])
            elif int(rows[0][0]) != self._count:
                self.close()
                raise SessionError(self._where, "session was written by another run meanwhile")
        with db:  # one transaction: committed as a whole, or rolled back
            db.execute(
                "INSERT INTO miniagent_messages (session_id, seq, record) VALUES (?, ?, ?)",
                (self.session_id, self._count + 1, record),
            )
        self._count += 1
        if self._history is not None:
            self._history.append(message)

    def close(self) -> None:
        """Close the database and release the session's lock (idempotent)."""
        db, self._db = self._db, None
        if db is not None:
            db.close()
        fd, self._lock_fd = self._lock_fd, None
        if fd is not None:
            os.close(fd)  # releases the flock

    # --- named steps ---------------------------------------------------------------------------

    def _open(self, *, create: bool) -> sqlite3.Connection | None:
        """The locked connection; ``None`` when the file is missing and ``create`` is false."""
        if self._db is not None:
            return self._db
        if not _check_regular(self.path, self._where) and not create:
            return None
        self._lock()
        try:
            if create:
                _make_folder(self.path)
            db = sqlite3.connect(os.fspath(self.path), timeout=self.timeout, check_same_thread=False)
            try:
                db.execute("PRAGMA journal_mode=WAL")
                db.execute(f"PRAGMA synchronous={'FULL' if self.fsync else 'NORMAL'}")
                with db:
                    db.execute(_SCHEMA)
            except sqlite3.DatabaseError as error:
                db.close()
                raise SessionError(self._where, f"not a miniagent SQLite session file ({error})") from None
        except BaseException:
            self.close()
            raise
        self._db = db
        return db

    def _query(self, db: sqlite3.Connection, sql: str) -> list[Any]:
        try:
            return db.execute(sql, (self.session_id,)).fetchall()
        except sqlite3.DatabaseError as error:
            raise SessionError(self._where, f"cannot read the session ({error})") from None

    def _lock(self) -> None:
        """Take this session's lock file (beside the database) without waiting."""
        try:
            import fcntl  # POSIX; imported here like the JSONL store's
        except ImportError:
            raise SessionError(self._where, "session locks need fcntl (POSIX), not available here") from None
        folder = os.fspath(self.path) + ".locks"
        os.makedirs(folder, exist_ok=True)
        name = hashlib.sha256(self.session_id.encode("utf-8", "surrogatepass")).hexdigest()
        fd = os.open(os.path.join(folder, name), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise SessionError(self._where, "session is in use by another run (locked)") from None
        self._lock_fd = fd


_HEADER = b"SQLite format 3\x00"


def _check_regular(path: PathLike, where: str) -> bool:
    """Whether the database file exists; ``SessionError`` for a FIFO, device or folder (checked
    on a non-blocking descriptor, so a FIFO cannot block) or a file that is not SQLite's."""
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    except IsADirectoryError:
        raise SessionError(where, "not a regular file (a folder): refused") from None
    try:
        regular = stat.S_ISREG(os.fstat(fd).st_mode)
        header = os.read(fd, len(_HEADER)) if regular else b""
    finally:
        os.close(fd)
    if not regular:
        raise SessionError(where, "not a regular file: refused")
    if header and header != _HEADER:
        raise SessionError(where, "not an SQLite database: refused")
    return True


def _make_folder(path: PathLike) -> None:
    folder = os.path.dirname(os.fspath(path))
    if folder:
        os.makedirs(folder, exist_ok=True)
