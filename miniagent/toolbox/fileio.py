"""Opening workspace files for the file tools: regular files only, never blocking.

Invariants:

- A file is opened with ``O_NONBLOCK`` and checked on the open descriptor (``fstat``): a FIFO,
  socket or device is refused with ``SpecialFileError`` before a single byte is read or written,
  so a named pipe in the workspace cannot hang a tool (cancel could not reach a blocked
  ``open``). The check is on the descriptor, so a swap between a check and the open does not help.
- Writing never truncates before the check: the target is opened without ``O_TRUNC``, checked,
  then truncated through the descriptor. The last component is never followed (``O_NOFOLLOW``).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

__all__ = ["SpecialFileError", "describe_mode", "open_for_reading", "write_bytes"]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_COMMON = getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0) | os.O_NONBLOCK


class SpecialFileError(OSError):
    """The path is not a regular file (a FIFO, socket, device or folder); the text says which."""


def describe_mode(mode: int) -> str:
    """What a file of ``st_mode`` ``mode`` is, for messages: ``a named pipe (FIFO)``, ..."""
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "not a regular file"


def _refuse_special(path: Path) -> None:
    """Refuse an existing non-regular file before opening it (opening a device may already act;
    a FIFO opened for writing without a reader fails with an unclear ``ENXIO``)."""
    try:
        info = os.stat(path)
    except OSError:
        return  # missing (or unreadable): the open says so
    if not stat.S_ISREG(info.st_mode):
        raise SpecialFileError(f"{describe_mode(info.st_mode)}, not a regular file; refused")


def _check_regular(fd: int) -> os.stat_result:
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise SpecialFileError(f"{describe_mode(info.st_mode)}, not a regular file; refused")
    os.set_blocking(fd, True)
    return info


def open_for_reading(path: Path) -> tuple[BinaryIO, int]:
    """Open a regular file for reading without blocking on a special file.

    Args:
        path: the resolved path (symlinks already followed and confined by ``Workspace``).

    Returns:
        ``(handle, size)``: a binary file object (the caller closes it) and the size in bytes.

    Raises:
        SpecialFileError: ``path`` is a FIFO, socket, device or folder.
        OSError: it cannot be opened (missing, permission denied).
    """
    _refuse_special(path)
    fd = os.open(path, os.O_RDONLY | _COMMON)
    try:
        info = _check_regular(fd)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb"), info.st_size


def write_bytes(path: Path, data: bytes) -> None:
    """Create or overwrite the regular file ``path`` with ``data``.

    Raises:
        SpecialFileError: ``path`` exists and is not a regular file (nothing was written).
        OSError: it cannot be written (a symlink at the last component: ``ELOOP``; permission).
    """
    _refuse_special(path)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | _NOFOLLOW | _COMMON, 0o666)
    try:
        _check_regular(fd)
        os.ftruncate(fd, 0)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)
