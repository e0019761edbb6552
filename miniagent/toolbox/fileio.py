"""Opening workspace files for the file tools: confined even against a race, regular files only,
never blocking, and writes that replace the file.

``Workspace.resolve`` decides where a path leads (symlinks followed, the result inside the root).
This module then reaches that resolved path *from the root, one component at a time*: each folder
is opened relative to the previous one (``dir_fd``) with ``O_NOFOLLOW | O_DIRECTORY``, and the
file itself with ``O_NOFOLLOW``. The resolved path holds no symlink, so a component that is a
symlink now was swapped in after the check (a race): the open fails (``ConfinementRace``) instead
of following it out of the workspace.

Invariants:

- A file is checked before it is opened (``fstatat`` without following) and again on the open
  descriptor (``fstat``): a FIFO, socket or device is refused with ``SpecialFileError`` before a
  byte is read or written; reads open with ``O_NONBLOCK``, so a named pipe cannot hang a tool.
- Writes never change an existing file in place: the new content goes to a temporary file in
  the same folder (``O_CREAT | O_EXCL``, the old file's permission bits), which then replaces the
  target by ``rename``. Other processes see the old or the new content, never a mix, and a hard
  link elsewhere keeps the old content. A target with more than one hard link is refused
  (``HardLinkError``): writing it would surprise whoever owns the other link.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

__all__ = [
    "SpecialFileError",
    "HardLinkError",
    "ConfinementRace",
    "describe_mode",
    "open_folder",
    "open_for_reading",
    "write_bytes",
]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_READ = os.O_RDONLY | os.O_NONBLOCK | _NOFOLLOW | _CLOEXEC | getattr(os, "O_NOCTTY", 0)
_FOLDER = os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC


class SpecialFileError(OSError):
    """The path is not a regular file (a FIFO, socket, device or folder); the text says which."""


class HardLinkError(OSError):
    """The file to write has more than one hard link; the text says how many."""


class ConfinementRace(OSError):
    """A component of an already checked path became a symlink (or vanished) before it was
    opened: refused rather than followed."""


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
    if stat.S_ISLNK(mode):
        return "a symlink"
    return "not a regular file"


def _special(mode: int) -> SpecialFileError:
    return SpecialFileError(f"{describe_mode(mode)}, not a regular file; refused")


def _race(error: OSError) -> OSError:
    """``ConfinementRace`` for the errors a swapped-in symlink gives, else ``error`` itself."""
    if error.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
        return ConfinementRace(
            error.errno, "a folder on the path was replaced by a symlink while the tool ran; refused"
        )
    return error


def _open_folder(root: Path, parts: tuple[str, ...], create: bool) -> int:
    """The descriptor of the folder ``root/parts...``, each part opened relative to the previous
    one without following symlinks; missing folders are made when ``create``."""
    fd = os.open(root, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    try:
        for part in parts:
            try:
                inner = os.open(part, _FOLDER, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o777, dir_fd=fd)
                inner = os.open(part, _FOLDER, dir_fd=fd)
            os.close(fd)
            fd = inner
    except OSError as error:
        os.close(fd)
        raise _race(error) from None
    return fd


def _parent(root: Path, resolved: Path, create: bool = False) -> tuple[int, str]:
    """``(descriptor of the parent folder, file name)`` of ``resolved`` (inside ``root``)."""
    parts = resolved.relative_to(root).parts
    if not parts:
        raise SpecialFileError("the workspace folder itself, not a file; refused")
    return _open_folder(root, parts[:-1], create), parts[-1]


def open_folder(root: Path, resolved: Path) -> int:
    """A descriptor of the folder ``resolved`` (inside ``root``), reached from the root one
    component at a time without following symlinks; the caller closes it.

    Raises:
        ConfinementRace: a component was swapped for a symlink after the path was checked.
        OSError: it cannot be opened (missing, not a folder, permission denied).
    """
    return _open_folder(root, resolved.relative_to(root).parts, create=False)


def _lstat(name: str, folder: int) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return None


def open_for_reading(root: Path, resolved: Path) -> tuple[BinaryIO, int]:
    """Open the regular file ``resolved`` (inside ``root``) for reading (module docstring).

    Returns:
        ``(handle, size)``: a binary file object (the caller closes it) and the size in bytes.

    Raises:
        SpecialFileError: it is a FIFO, socket, device or folder.
        ConfinementRace: a component was swapped for a symlink after the path was checked.
        OSError: it cannot be opened (missing, permission denied).
    """
    folder, name = _parent(root, resolved)
    try:
        info = _lstat(name, folder)
        if info is not None and not stat.S_ISREG(info.st_mode) and not stat.S_ISLNK(info.st_mode):
            raise _special(info.st_mode)
        try:
            fd = os.open(name, _READ, dir_fd=folder)
        except OSError as error:
            raise _race(error) from None
    finally:
        os.close(folder)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _special(info.st_mode)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb"), info.st_size


def _temporary_name(name: str) -> str:
    return f".{name[:200]}.{os.urandom(6).hex()}.tmp"  # not `secrets`: it costs ~20 ms to import


def write_bytes(root: Path, resolved: Path, data: bytes, *, make_folders: bool = False) -> bool:
    """Create or replace the regular file ``resolved`` (inside ``root``) with ``data``.

    Args:
        root: the workspace root.
        resolved: the target, as ``Workspace.resolve`` returned it.
        data: the new content.
        make_folders: create missing folders on the way.

    Returns:
        Whether a file was replaced (``False``: created).

    Raises:
        SpecialFileError: the target exists and is not a regular file (nothing was written).
        HardLinkError: the target has more than one hard link (nothing was written).
        ConfinementRace: a component was swapped for a symlink after the path was checked.
        OSError: it cannot be written (permission denied, disk full: the target is unchanged).
    """
    folder, name = _parent(root, resolved, create=make_folders)
    try:
        info = _lstat(name, folder)
        if info is not None:
            if stat.S_ISLNK(info.st_mode):
                raise ConfinementRace(
                    errno.ELOOP, "the file was replaced by a symlink while the tool ran; refused"
                )
            if not stat.S_ISREG(info.st_mode):
                raise _special(info.st_mode)
            if info.st_nlink > 1:
                raise HardLinkError(
                    errno.EMLINK,
                    f"the file has {info.st_nlink} hard links (another name, maybe outside the "
                    "workspace, shares its content); refused",
                )
        _replace(folder, name, data, None if info is None else stat.S_IMODE(info.st_mode))
    finally:
        os.close(folder)
    return info is not None


def _replace(folder: int, name: str, data: bytes, mode: int | None) -> None:
    """Write ``data`` to a new temporary file in ``folder`` and rename it to ``name``."""
    temporary = _temporary_name(name)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
    fd = os.open(temporary, flags, 0o666, dir_fd=folder)
    try:
        try:
            if mode is not None:
                os.fchmod(fd, mode)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        os.rename(temporary, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary, dir_fd=folder)
        raise
