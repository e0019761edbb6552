"""Folders miniagent creates for what it keeps: sessions, session locks, the cache (standard
library only).

Invariants:

- ``private_folder`` creates the folder and each missing parent with mode ``0700`` (less what the
  umask takes away; ``os.makedirs`` would give the parents the default mode), so what miniagent
  keeps there (conversations, prompt caches) is not readable by other users. A folder that exists
  keeps its mode: it is the user's.
- ``own_folder`` is ``private_folder`` for the folders whose files miniagent trusts (the cache:
  the model file, prompt-cache slots, the local model's lock; the state folder of ``chat``'s
  sessions): it also refuses a folder owned by another user with ``ForeignFolderError`` (another
  user could have put a model or a prompt cache there, or read what is written). Where the
  platform has no user ids (Windows), ownership is not checked.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

__all__ = ["ForeignFolderError", "own_folder", "private_folder"]

PRIVATE_FOLDER_MODE = 0o700


class ForeignFolderError(PermissionError):
    """A folder miniagent would keep its files in is owned by another user (``strerror`` says
    which; ``filename`` is the folder)."""


def private_folder(path: str | os.PathLike[str]) -> list[Path]:
    """Create ``path`` and its missing parents, each ``0700``; an existing folder is left as it is.

    Returns:
        The folders created, outermost first (empty when ``path`` existed).

    Raises:
        OSError: a folder cannot be created (``FileExistsError`` when a file is in the way).
    """
    missing: list[Path] = []
    current = Path(path)
    while not current.is_dir() and current.parent != current:
        missing.append(current)
        current = current.parent
    missing.reverse()  # the outermost missing folder first
    for entry in missing:
        try:
            entry.mkdir(PRIVATE_FOLDER_MODE)
        except FileExistsError:
            if not entry.is_dir():  # a file, or a symlink to one, is in the way
                raise
    return missing


def own_folder(path: str | os.PathLike[str], *, create: bool = True) -> Path:
    """``private_folder(path)`` (only when ``create``), then refuse it when another user owns it.

    Args:
        path: the folder.
        create: create it when missing; with ``False`` a missing folder is returned unchecked.

    Returns:
        ``path`` as a ``Path``.

    Raises:
        ForeignFolderError: the folder exists and another user owns it.
        OSError: it cannot be created, or is not a folder.
    """
    folder = Path(path)
    if create:
        private_folder(folder)
    try:
        info = folder.stat()
    except FileNotFoundError:
        if create:
            raise
        return folder
    if not stat.S_ISDIR(info.st_mode):
        raise NotADirectoryError(errno.ENOTDIR, "not a folder", str(folder))
    user = getattr(os, "geteuid", None)
    if user is not None and info.st_uid != user():
        raise ForeignFolderError(
            errno.EPERM,
            f"owned by another user (uid {info.st_uid}), not by this one (uid {user()}): refused, "
            "since what it holds could have been put there by them; use a folder of your own",
            str(folder),
        )
    return folder
