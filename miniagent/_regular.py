"""Files that must be regular files, opened without ever blocking on a special one (standard
library only).

A FIFO opened for reading waits for a writer (and for writing, for a reader) before ``open``
returns; a device such as ``/dev/zero`` never ends. So every file miniagent is told to read or
append to by name (a session, a log file, a schema, an MCP server file) goes through here:

- ``open_regular`` opens with ``O_NONBLOCK`` (a FIFO opens at once) and checks the descriptor with
  ``fstat`` before anything is read or written: a FIFO, socket, device or folder raises
  ``NotRegularFileError`` (an ``OSError``) and the descriptor is closed. The check is on what was
  opened, so a path swapped for a FIFO after an earlier look is refused too. The descriptor is
  made blocking again before it is returned (a regular file never blocks on it anyway).
- ``regular_file_problem`` says what a path is when it exists and is not a regular file, from
  ``os.stat`` (which never blocks): for checks made before anything is opened.
"""

from __future__ import annotations

import errno
import os
import stat

__all__ = ["NotRegularFileError", "file_kind", "open_regular", "read_regular", "regular_file_problem"]

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)  # POSIX only
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


class NotRegularFileError(OSError):
    """The path is a FIFO, socket, device or folder; ``kind`` says which (``"a FIFO"``...)."""

    def __init__(self, path: str | os.PathLike[str], kind: str) -> None:
        """Name the path (``filename``) and what it is (``kind``; ``strerror`` says both)."""
        super().__init__(f"{kind}, not a regular file")
        self.filename = os.fspath(path)
        self.kind = kind
        self.strerror = f"{kind}, not a regular file"


def file_kind(mode: int) -> str:
    """What a file of ``st_mode`` ``mode`` is, for messages: ``"a FIFO"``, ``"a folder"``..."""
    for test, name in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISREG, "a regular file"),
    ):
        if test(mode):
            return name
    return "not a file"


def open_regular(path: str | os.PathLike[str], flags: int = os.O_RDONLY, mode: int = 0o600) -> int:
    """``os.open(path, flags, mode)`` that never blocks and refuses what is not a regular file.

    Args:
        path: the file (a symlink is followed).
        flags: ``os.open`` flags (``O_NONBLOCK`` and ``O_CLOEXEC`` are added).
        mode: the mode of a file ``O_CREAT`` creates (less the umask).

    Returns:
        A blocking descriptor of the regular file; the caller closes it.

    Raises:
        NotRegularFileError: a FIFO, socket, device or folder (nothing was read or written).
        OSError: the open itself failed (``FileNotFoundError`` included).
    """
    try:
        fd = os.open(path, flags | _NONBLOCK | _CLOEXEC, mode)
    except IsADirectoryError:
        raise NotRegularFileError(path, "a folder") from None
    except OSError as error:
        if error.errno == errno.ENXIO:  # a FIFO opened to write while nobody reads it, a socket
            raise NotRegularFileError(path, regular_file_problem(path) or "a special file") from None
        raise
    try:
        kind = os.fstat(fd).st_mode
        if not stat.S_ISREG(kind):
            raise NotRegularFileError(path, file_kind(kind))
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular(path: str | os.PathLike[str]) -> bytes:
    """The whole content of the regular file ``path`` (``open_regular``'s checks first).

    Raises:
        NotRegularFileError: a FIFO, socket, device or folder.
        OSError: it cannot be opened or read.
    """
    with open(open_regular(path), "rb") as stream:
        return stream.read()


def regular_file_problem(path: str | os.PathLike[str]) -> str | None:
    """What ``path`` is when it exists and is not a regular file (``"a FIFO"``...), else ``None``
    (a regular file, a missing one, or one that cannot be looked at: its open will say why).
    Uses ``os.stat``, which follows symlinks and never blocks."""
    try:
        kind = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    return None if stat.S_ISREG(kind) else file_kind(kind)
