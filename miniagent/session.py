"""Session stores: the ``SessionStore`` protocol, and JSONL session files (``JSONLSession``).

A store is the durable copy of one conversation's record. ``run_agent(session=store)`` loads it at
the start of a run and appends every committed message to it; it does not close a store it was
given, so one open store serves many runs (``chat`` keeps one for the whole conversation).
``run_agent(session_path=...)`` opens a ``JSONLSession`` for the run and closes it afterwards.

JSONL files: one committed message per line, appended, never rewritten.

Invariants (spec "Record the message first", DESIGN.md "Beyond the seed"):

- A line is written with a single ``os.write`` of the JSON text plus ``\\n`` on a file opened with
  ``O_APPEND``; the message is already in memory when it is written (memory first, then disk).
- Loading never modifies the file. A torn last line (no newline, and provably a prefix of a line
  this module writes, see ``_torn``: a line cut short by a crash in the middle of a write) is
  dropped; any other bad line, however deeply nested, raises ``SessionError`` naming the file and
  line. So a file that is not a session (settings, notes, a binary) is refused, never cut; the
  first line must be a session record (or a cut one) before anything is appended.
- A session is a regular file. It is opened with ``O_NONBLOCK`` and checked with ``fstat`` before
  anything is read, so a FIFO, a device (``/dev/zero``) or a folder is refused at once with
  ``SessionError``, never waited on or read.
- The torn tail is cut off (``ftruncate``) before the next append, so a new line is never fused
  onto a fragment. A last line that is a whole message but lacks its newline gets one first.
- A failed write is rolled back to the previous size (best effort), so the file keeps only whole
  lines, and the original ``OSError`` propagates.
- Only lines the loader accepts are written: a message it would refuse (e.g. a tool call whose
  input is not a dict, from a faulty model client) raises ``SessionError`` instead.
- Writers hold an exclusive ``flock`` on the file. A second writer does not wait: it fails at
  once with ``SessionError`` naming the file. An open ``JSONLSession`` holds the lock until closed.
  ``fcntl`` is imported only when a file is locked, so ``import miniagent`` and in-memory runs work
  where it does not exist (Windows); there a session file raises ``SessionError``.
- An open ``JSONLSession`` reads its file once: the first ``load()`` parses it, later ones return
  that history plus what this store appended since (the file is not read again).
- Private: a new session file is created ``0600`` and each folder created for it ``0700``
  (``_folders.private_folder``); an existing file or folder keeps its mode.
- With ``fsync=True`` every append is followed by ``os.fsync`` of the file, and creating the file
  by an ``fsync`` of its folder (and of the parent of each folder created for it), so a committed
  message survives power loss.
"""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import Any, Protocol, TypeVar, Union, runtime_checkable

from ._json import MAY_NEST_TOO_DEEP, JSONDepthError, check_nesting, loads
from ._regular import NotRegularFileError, open_regular
from ._torn import is_cut_session_line
from .errors import SessionError
from .messages import Message, json_utf8, message_from_json, message_to_json

__all__ = [
    "SessionStore",
    "JSONLSession",
    "load_session",
    "append_session",
    "encode_record",
    "decode_record",
    "SessionFile",
    "PathLike",
    "session_lines",
    "holds_record",
]

PathLike = Union[str, "os.PathLike[str]"]
_Store = TypeVar("_Store", bound="SessionStore")
_Context = TypeVar("_Context", bound="StoreContext")
_BAD_DATA = (ValueError, RecursionError)  # bad JSON, bad UTF-8, bad message; nesting too deep
SESSION_FILE_MODE = 0o600  # a new session file: a conversation is readable by its owner only


@runtime_checkable
class SessionStore(Protocol):
    """Where a conversation's committed messages live between runs (DESIGN.md "Session stores").

    Every store keeps the promises of the JSONL file: messages are appended in commit order and
    never rewritten; a store locks its session while it is open, and a second writer fails at once
    with ``SessionError``; a crash loses at most the message being written. Use it as a context
    manager (or call ``close()``); ``run_agent(session=store)`` never closes it.
    """

    def load(self) -> list[Message]:
        """Return the committed messages, oldest first (a new list the caller may keep).

        Takes the session's lock if it is not held yet. Raises ``SessionError`` when another
        writer holds it or a stored message is unreadable (the stored data is left untouched).
        """
        ...

    def append(self, message: Message) -> None:
        """Store one committed message after the others; raises ``SessionError`` or ``OSError``
        (and then stores nothing of it)."""
        ...

    def close(self) -> None:
        """Release the lock and the resources; idempotent."""
        ...

    def __enter__(self: _Store) -> _Store: ...

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> bool | None: ...


class StoreContext:
    """What every store shares: ``with store:`` hands the store back and closes it on the way out.

    A subclass defines ``close()`` (idempotent); the protocol above asks for the rest.
    """

    def close(self) -> None:
        """Release the lock and the resources (each store says how); idempotent."""
        raise NotImplementedError

    def __enter__(self: _Context) -> _Context:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()


def _encode(path: PathLike, message: Message) -> bytes:
    """The line of ``message`` (``encode_record`` plus the newline)."""
    return encode_record(path, message) + b"\n"


def encode_record(where: object, message: Message) -> bytes:
    """The compact JSON (UTF-8) every store keeps for ``message``: one session line's text.

    Raises:
        SessionError: (naming ``where``) a message the loader would refuse (a tool call whose
            input is not a dict, a non-string content or id, nesting too deep, ...): such a
            record would make the whole session unloadable, so it is never stored.
    """
    data = message_to_json(message)
    try:
        message_from_json(data)  # the loader's own rules, on the JSON object about to be written
        # json_utf8 escapes a lone surrogate (a file name decoded with surrogateescape), which has
        # no UTF-8 form; it loads back as the same message (except that a high surrogate right
        # before a low one loads back as the character the pair encodes: JSON cannot tell them
        # apart). Data nested too deep to encode raises RecursionError: it could not load either.
        return json_utf8(data)
    except _BAD_DATA as error:
        problem = "nested too deep" if isinstance(error, RecursionError) else str(error)
        raise SessionError(where, f"message not stored: it could not be loaded back ({problem})") from None


def decode_record(where: object, record: bytes | str, number: int) -> Message:
    """The message of one stored record (``encode_record``'s text).

    Raises:
        SessionError: naming ``where`` and the record's 1-based ``number``: not JSON, nested too
            deep, or not a well-formed message.
    """
    try:
        return message_from_json(loads(record))
    except _BAD_DATA as error:
        raise SessionError(where, _problem(error), line=number) from None


_raw_decode = json.JSONDecoder().raw_decode  # the decoder json.loads uses, without its wrapper


def _decode(line: bytes) -> Message:
    return message_from_json(loads(line))


def _problem(error: BaseException) -> str:
    """What was wrong with a line, for ``SessionError``."""
    if isinstance(error, (RecursionError, JSONDepthError)):
        return "line is nested too deep"
    return f"line is not a valid message ({error})"


def _decode_tail(path: PathLike, tail: bytes, number: int | Callable[[], int]) -> Message | None:
    """Decode a last line that has no newline: ``None`` when it is torn.

    Torn means a strict prefix of a line this module writes, cut short by a crash
    (``is_cut_session_line``). Any other text that is not a message raises, so a file that is not
    a session (settings, notes, a binary) is refused, never cut. ``number`` is the line's number,
    or a function that counts it (only called for the error).
    """
    try:
        data = loads(tail)
    except _BAD_DATA as error:
        if is_cut_session_line(tail):
            return None
        line = number if isinstance(number, int) else number()
        if isinstance(error, (RecursionError, JSONDepthError)):
            raise SessionError(path, _problem(error), line=line) from None
        raise SessionError(path, "line is not JSON: not a session file?", line=line) from None
    try:
        return message_from_json(data)
    except ValueError as error:
        line = number if isinstance(number, int) else number()
        raise SessionError(path, _problem(error), line=line) from None


def _parse_clean(head: bytes) -> list[Message] | None:
    """Fast path of ``_parse`` for the usual file: every line one JSON document and nothing else.

    Decodes the whole text once and walks it with ``raw_decode`` (the scanner ``json.loads`` runs,
    without its per-call checks), requiring each document to end exactly at its line's newline.
    Returns ``None`` at the first thing that is not so (blank or padded line, invalid UTF-8, bad
    JSON, not a message); ``_parse_lines`` then reads the file line by line and reports the line.
    """
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        return None
    messages: list[Message] = []
    append = messages.append
    decode = _raw_decode
    pos, size = 0, len(text)
    try:
        while pos < size:
            data, end = decode(text, pos)
            if text[end] != "\n":
                return None
            if end - pos > MAY_NEST_TOO_DEEP:
                check_nesting(data)  # too deep: the line-by-line path reports the line
            append(message_from_json(data))
            pos = end + 1
    except (ValueError, IndexError, RecursionError):
        return None
    return messages


def session_lines(data: bytes) -> Iterator[tuple[int, bytes]]:
    """Each line of a session file's bytes as the loader reads it, in order.

    A line ends at ``\\n`` only: a ``\\r`` (alone or before ``\\n``) is JSON whitespace inside its
    line, never a line break (``bytes.splitlines`` would split there). The text after the last
    newline, when there is any, comes last (a last line without its newline, or a torn one).

    Args:
        data: the file's bytes (or a prefix that ends at a line's start).

    Yields:
        (offset of the line's first byte, the line without its ``\\n``).
    """
    start, size = 0, len(data)
    while start < size:
        end = data.find(b"\n", start)
        if end < 0:
            yield start, data[start:]
            return
        yield start, data[start:end]
        start = end + 1


def holds_record(line: bytes) -> bool:
    """Whether a line of ``session_lines`` holds a record: the loader skips a blank line (only
    whitespace), and every other line is a message or an error."""
    return bool(line.strip())


def _parse_lines(path: PathLike, head: bytes) -> list[Message]:
    """Decode the complete lines of ``head`` one by one; blank lines are skipped, any other bad
    line raises."""
    messages: list[Message] = []
    append = messages.append
    for number, (_offset, line) in enumerate(session_lines(head), 1):
        try:
            append(_decode(line))
        except _BAD_DATA as error:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
            if not holds_record(line):
                continue
            raise SessionError(path, _problem(error), line=number) from None
    return messages


def _parse(path: PathLike, data: bytes) -> tuple[list[Message], int, bool]:
    """Parse a whole session file.

    Returns (messages, valid_end, needs_newline): the byte offset where the kept content ends (a
    torn tail starts there) and whether the kept content lacks its final newline.

    Raises:
        SessionError: a line other than the last one is not a message.
    """
    cut = data.rfind(b"\n") + 1
    tail = data[cut:]  # what follows the last newline: b"" in a clean file
    messages = _parse_clean(data[:cut])
    if messages is None:
        messages = _parse_lines(path, data[:cut])
    valid_end, needs_newline = len(data), False
    if holds_record(tail):
        message = _decode_tail(path, tail, data.count(b"\n", 0, cut) + 1)
        if message is None:
            valid_end = len(data) - len(tail)  # torn last line: dropped
        else:
            messages.append(message)
            needs_newline = True
    return messages, valid_end, needs_newline


def load_session(path: PathLike) -> list[Message]:
    """Read the messages of a session file, oldest first.

    Args:
        path: the JSONL file. A missing file is an empty session.

    Returns:
        The committed messages (a torn last line is left out). The file is not modified.

    Raises:
        SessionError: a bad line other than a torn last line (names the file and the line), or
            the path is not a regular file (a FIFO, a device, a folder).
        OSError: the file exists but cannot be read.
    """
    try:
        fd = _open_regular(path, os.O_RDONLY)
    except FileNotFoundError:
        return []
    with open(fd, "rb") as stream:
        data = stream.read()
    return _parse(path, data)[0]


def _open_regular(path: PathLike, flags: int, mode: int = SESSION_FILE_MODE) -> int:
    """``os.open`` without blocking, then refuse what is not a regular file (``_regular``).

    Raises:
        SessionError: a FIFO, a device, a socket or a folder (the descriptor is closed).
        OSError: the open itself failed (``FileNotFoundError`` included).
    """
    try:
        return open_regular(path, flags, mode)
    except NotRegularFileError as error:
        raise SessionError(path, f"not a regular file ({error.kind}): refused") from None


class JSONLSession(StoreContext):
    """A JSONL session file open for one writer: a ``SessionStore``, today's file format.

    Use as a context manager, or call ``close()``. ``load()`` takes the lock when the file exists;
    when it does not, the first ``append()`` creates it (and its parent folders) and takes the lock
    then, so loading a session that does not exist writes nothing. The first ``load()`` reads the
    file; later ones return the history kept in memory (what was loaded plus what was appended).

    Args:
        path: the JSONL file.
        fsync: fsync the file after each append (and its folder after creating it).

    Raises (from ``load`` and ``append``):
        SessionError: another process holds the lock, a bad line, the file appeared while
            this writer believed it missing, or (``append``) a message the loader would refuse.
        OSError: the disk refused a read or write (after ``append`` rolled back a partial line).
    """

    def __init__(self, path: PathLike, *, fsync: bool = False) -> None:
        self.path = path
        self.fsync = fsync
        self._fd: int | None = None
        self._size = 0  # bytes of whole content: where the next line goes after any cut
        self._cut_to: int | None = None  # a torn tail starts here: truncate before appending
        self._needs_newline = False
        self._history: list[Message] | None = None  # after the first load: the whole record

    def load(self) -> list[Message]:
        """Lock the file if it exists and return its messages (``load_session`` semantics).

        Only the first call reads the file; later calls return a copy of the history in memory.
        """
        if self._history is not None:
            return list(self._history)
        fd = self._fd
        if fd is None:
            try:
                fd = _open_regular(self.path, os.O_RDWR | os.O_APPEND)
            except FileNotFoundError:
                self._history = []
                return []
            self._lock(fd)
        try:
            with open(fd, "rb", closefd=False) as stream:
                stream.seek(0)
                data = stream.read()
            messages, valid_end, self._needs_newline = _parse(self.path, data)
        except BaseException:
            self.close()  # a session that cannot be loaded is not kept locked
            raise
        self._size = valid_end
        self._cut_to = valid_end if valid_end < len(data) else None
        self._history = list(messages)
        return messages

    def load_tail(self) -> None:
        """Lock the file if it exists and find its tail state without reading the whole file
        (only its first line, to refuse a file that is not a session, and its last one)."""
        try:
            fd = _open_regular(self.path, os.O_RDWR | os.O_APPEND)
        except FileNotFoundError:
            return
        self._lock(fd)
        try:
            _check_first_line(self.path, fd)
            size = os.fstat(fd).st_size
            last = _last_line(fd, size)
            self._size, self._needs_newline = size, False
            if holds_record(last):
                if _decode_tail(self.path, last, lambda: _count_lines(fd, size)) is None:
                    self._size = self._cut_to = size - len(last)
                else:
                    self._needs_newline = True
        except BaseException:
            self.close()  # a session that cannot be appended to is not kept locked
            raise

    def append(self, message: Message) -> None:
        """Append one message as one line (see the module invariants)."""
        line = _encode(self.path, message)
        if self._fd is None and self._history is None:
            self.load_tail()  # appending without a load: lock an existing file, find its tail
        if self._fd is None:
            self._create()
        fd = self._fd
        assert fd is not None
        if self._needs_newline:
            line = b"\n" + line
        if self._cut_to is not None:
            os.ftruncate(fd, self._cut_to)
            self._cut_to = None
        written = 0
        try:
            while written < len(line):  # one write, unless the disk takes only part of it
                written += os.write(fd, line[written:])
        except BaseException:
            if written:
                self._rollback(fd)  # never leave part of a line behind
            raise
        self._size += len(line)
        self._needs_newline = False
        if self._history is not None:
            self._history.append(message)
        if self.fsync:
            os.fsync(fd)

    def close(self) -> None:
        """Release the lock and close the file (idempotent)."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)  # closing releases the flock

    def _locking(self) -> Any:
        """The ``fcntl`` module, imported here: POSIX only, and an in-memory run never needs it."""
        try:
            import fcntl
        except ImportError:
            problem = "session files need fcntl locks (POSIX), not available here"
            raise SessionError(self.path, problem) from None
        return fcntl

    def _lock(self, fd: int) -> None:
        try:
            fcntl = self._locking()
        except SessionError:
            os.close(fd)
            raise
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:
            os.close(fd)
            if error.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise SessionError(self.path, "session file is in use by another run (locked)") from None
            raise
        self._fd = fd

    def _create(self) -> None:
        from ._folders import private_folder  # here, not at the top: it imports pathlib (ms)

        folder = os.path.dirname(os.path.abspath(self.path))
        created = private_folder(folder)  # the folders made for the file, outermost first
        self._locking()  # no file is created where it could not be locked
        fd = _open_regular(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, SESSION_FILE_MODE)
        self._lock(fd)
        if os.fstat(fd).st_size != 0:
            self.close()
            raise SessionError(self.path, "session file was created by another run meanwhile")
        if self.fsync:
            # The new file's entry lives in its folder, and each new folder's entry in its parent.
            for entry_folder in [folder, *(os.path.dirname(new) for new in reversed(created))]:
                dir_fd = os.open(entry_folder, os.O_RDONLY | os.O_DIRECTORY)
                try:
                    os.fsync(dir_fd)
                finally:
                    os.close(dir_fd)

    def _rollback(self, fd: int) -> None:
        try:
            os.ftruncate(fd, self._size)
        except OSError:
            self._cut_to = self._size  # the part is still there: cut it before the next append


def _last_line(fd: int, size: int) -> bytes:
    """What follows the file's last newline (reads backwards in growing chunks)."""
    start, chunk, tail = size, 4096, b""
    while start > 0 and b"\n" not in tail:
        start = max(0, start - chunk)
        tail = os.pread(fd, size - start, start)
        chunk *= 2
    return tail[tail.rfind(b"\n") + 1 :]


def _count_lines(fd: int, size: int) -> int:
    """The 1-based number of the file's last line (only for an error message: reads it all)."""
    count, offset = 1, 0
    while offset < size:
        chunk = os.pread(fd, min(1 << 20, size - offset), offset)
        if not chunk:
            break
        count += chunk.count(b"\n")
        offset += len(chunk)
    return count


def _check_first_line(path: PathLike, fd: int) -> None:
    """Refuse a file whose first non-blank line is not a message (a last line without newline is
    left to the tail check). Reads only up to the end of that line."""
    buffer, offset, number = b"", 0, 1
    while True:
        chunk = os.pread(fd, 65536, offset)
        if not chunk:
            return  # no complete line: the tail check decides
        offset += len(chunk)
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            if holds_record(line):
                try:
                    _decode(line)
                except _BAD_DATA as error:
                    raise SessionError(path, _problem(error), line=number) from None
                return
            number += 1


def append_session(path: PathLike, message: Message, *, fsync: bool = False) -> None:
    """Append one message to a session file, creating it (and its folders) if needed.

    Takes the file's lock for the duration of the append, repairs a torn tail first, and writes
    the line with one ``write()``. ``run_agent`` keeps one ``JSONLSession`` open for its whole run
    instead of calling this per message.

    Args:
        path: the JSONL file.
        message: the committed message.
        fsync: force the line to disk before returning (durability against power loss).

    Raises:
        SessionError: another run holds the file's lock, or the message could not be loaded back
            (nothing is written).
        OSError: the write failed (the file is left with whole lines only).
    """
    with JSONLSession(path, fsync=fsync) as session:
        session.load_tail()
        session.append(message)


SessionFile = JSONLSession  # the round-1 name, kept for existing callers
