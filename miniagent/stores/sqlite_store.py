"""``SQLiteSession``: many sessions in one SQLite file (standard-library ``sqlite3``).

Invariants (the JSONL file's promises, DESIGN.md "Session stores"):

- Table ``miniagent_messages(session_id, seq, record)``: ``seq`` counts a session's messages from
  1; ``record`` is the session line's JSON text (``encode_record``). Rows are only inserted, never
  updated or deleted.
- One transaction per message (``INSERT`` then ``COMMIT``), in WAL mode: a crash of the process
  keeps every committed message and nothing of the one being written; readers never block the
  writer. ``fsync=True`` (``synchronous=FULL``) makes each commit survive power loss too; the
  default ``synchronous=NORMAL`` is what WAL recommends against process crashes.
- One database, one name: the path is resolved (``os.path.realpath``) before anything is opened,
  so every symlink to a database reaches the one file, its one WAL and its one lock folder. A
  database with more than one hard link is refused (SQLite keeps its WAL and shared-memory
  files beside the name it was opened by, so two names of one file are two journals: two writers
  through them corrupt it).
- One writer per session: an exclusive ``flock`` on a lock file beside the resolved database
  (``<file>.locks/<sha256 of the session id>``), taken by the first ``load()`` or ``append()`` and
  held until ``close()``. A second writer fails at once with ``SessionError``, through whatever
  alias it came; the kernel drops the lock of a process that dies, so a killed writer never holds
  it. A row of this session that another writer inserted anyway (one that does not take these
  locks) makes ``append`` raise ``SessionError``, never ``sqlite3.IntegrityError``.
- The path must be a regular file (or not exist yet): a FIFO or a device is refused without
  blocking, a file that is not an SQLite database (its first 16 bytes) is refused before anything
  is created or locked, and left untouched.
- Private: a new database is created ``0600`` (SQLite gives its WAL and shared-memory files the
  database's mode), the lock folder ``0700`` and the lock files ``0600``; folders created for the
  file are ``0700``.
- The first ``load()`` reads the rows; later ones return the history kept in memory.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from typing import Any

from .._folders import private_folder
from .._regular import NotRegularFileError, open_regular
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
        try:
            with db:  # one transaction: committed as a whole, or rolled back
                db.execute(
                    "INSERT INTO miniagent_messages (session_id, seq, record) VALUES (?, ?, ?)",
                    (self.session_id, self._count + 1, record),
                )
        except sqlite3.IntegrityError:  # that row exists: a writer that did not take the lock
            problem = "session was written by another run meanwhile; not stored"
            raise SessionError(self._where, problem) from None
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
        real = os.path.realpath(self.path)  # every symlink to the file: one WAL, one lock folder
        if not _check_regular(real, self._where) and not create:
            return None
        self._lock(real)
        try:
            if create:
                _create_private(real, self._where)
            db = sqlite3.connect(real, timeout=self.timeout, check_same_thread=False)
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

    def _lock(self, real: str) -> None:
        """Take this session's lock file (beside the resolved database ``real``) without waiting."""
        try:
            import fcntl  # POSIX; imported here like the JSONL store's
        except ImportError:
            raise SessionError(self._where, "session locks need fcntl (POSIX), not available here") from None
        folder = real + ".locks"
        private_folder(folder)
        name = hashlib.sha256(self.session_id.encode("utf-8", "surrogatepass")).hexdigest()
        fd = os.open(os.path.join(folder, name), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise SessionError(self._where, "session is in use by another run (locked)") from None
        self._lock_fd = fd


_HEADER = b"SQLite format 3\x00"


def _check_regular(path: str, where: str) -> bool:
    """Whether the database file exists; ``SessionError`` for a FIFO, device or folder (checked
    on a non-blocking descriptor, so a FIFO cannot block: ``_regular``), a file with more than
    one hard link, or a file that is not SQLite's."""
    try:
        fd = open_regular(path)
    except FileNotFoundError:
        return False
    except NotRegularFileError as error:
        raise SessionError(where, f"not a regular file ({error.kind}): refused") from None
    try:
        links = os.fstat(fd).st_nlink
        header = os.read(fd, len(_HEADER))
    finally:
        os.close(fd)
    if links > 1:
        raise SessionError(
            where,
            f"the database has {links} hard links: SQLite keeps a journal beside each name, "
            "so writers through two names would corrupt it; refused (copy it, or use one name)",
        )
    if header and header != _HEADER:
        raise SessionError(where, "not an SQLite database: refused")
    return True


def _create_private(path: str, where: str) -> None:
    """Create the database file ``0600`` when it is missing (its folders ``0700``), so SQLite,
    which gives its WAL and shared-memory files the database's mode, keeps them private too."""
    folder = os.path.dirname(path)
    if folder:
        private_folder(folder)
    try:
        os.close(open_regular(path, os.O_RDWR | os.O_CREAT, 0o600))
    except NotRegularFileError as error:
        raise SessionError(where, f"not a regular file ({error.kind}): refused") from None
