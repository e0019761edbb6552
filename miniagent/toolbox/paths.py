"""Confinement of tool paths to a workspace folder.

Every path a tool receives is resolved (``Path.resolve()``: ``..`` collapsed, every existing
symlink followed) and then compared component-wise with the resolved workspace root
(``Path.is_relative_to``), never by string prefix. So ``..`` that climbs out, an absolute path
elsewhere, a sibling such as ``/ws_evil`` for the root ``/ws``, and a symlink inside the root that
leads out are all refused, while an absolute path inside the root is accepted.

The check and the later open are two steps; ``fileio`` closes the gap for ``read_file``,
``write_file`` and ``edit_file``: it reaches the resolved path from the root one component at a
time with ``O_NOFOLLOW`` (``dir_fd``), so a component swapped for a symlink in between makes the
open fail instead of leading outside.
"""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path
from typing import Final

__all__ = ["NAME_FORM", "OutsideWorkspaceError", "Workspace", "comparable_name"]

NAME_FORM: Final = "NFC"
"""The Unicode normal form file names are compared in (``comparable_name``)."""


class OutsideWorkspaceError(ValueError):
    """A path resolves outside the workspace (or cannot be resolved). The text is for the model."""


def comparable_name(name: str) -> str:
    """``name`` in the one normal form (``NAME_FORM``, NFC) that every comparison of file names
    uses: path resolution's other spelling (``Workspace.resolve``) and globs (``globs``), so a
    name stored decomposed (NFD, as macOS writes it) and its composed spelling are one name."""
    return name if name.isascii() else unicodedata.normalize(NAME_FORM, name)


def _entry_spelled(folder: Path, name: str) -> str | None:
    """The one entry of ``folder`` that is ``name`` in another Unicode normalisation, if any."""
    wanted = comparable_name(name)
    try:
        found = [entry for entry in os.listdir(folder) if comparable_name(entry) == wanted]
    except OSError:
        return None
    return found[0] if len(found) == 1 else None


def _other_spelling(candidate: Path) -> Path | None:
    """``candidate`` (absolute, missing) with each missing non-ASCII component replaced by the
    existing entry that differs only in Unicode normalisation (NFC vs NFD: macOS and some tools
    store names decomposed), resolved; ``None`` when no component could be respelled."""
    current = Path(candidate.anchor)
    changed = False
    for part in candidate.parts[1:]:
        if part not in (".", "..") and not part.isascii() and not os.path.lexists(current / part):
            spelled = _entry_spelled(current, part)
            if spelled is not None:
                part, changed = spelled, True
        current = current / part
    if not changed:
        return None
    try:
        return current.resolve()
    except (OSError, RuntimeError, ValueError):
        return None


class Workspace:
    """A workspace root and the rules for paths inside it.

    Args:
        root: the workspace folder (relative paths are taken from the current directory).

    Raises:
        NotADirectoryError: ``root`` does not exist or is not a folder.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        resolved = Path(root).expanduser().resolve()
        if not resolved.is_dir():
            raise NotADirectoryError(f"workspace is not a folder: {root}")
        self.root: Path = resolved

    def contains(self, resolved: Path) -> bool:
        """Return whether an already resolved absolute path is the root or inside it."""
        return resolved == self.root or resolved.is_relative_to(self.root)

    def resolve(self, path: str) -> Path:
        """Resolve a path given by the model to an absolute path inside the workspace.

        Args:
            path: relative to the workspace root, or absolute (then it must lie inside the root).
                ``""`` means the root. A leading ``~`` is an ordinary character (``~x`` is the
                file ``~x`` in the workspace), never the home folder.

        Returns:
            The resolved absolute path (symlinks followed). It need not exist; when it does not,
            its existing parent chain has been resolved and lies inside the root. A spelling
            that does not exist but whose other Unicode normalisation (NFC/NFD) does, component
            by component, gives the existing file.

        Raises:
            OutsideWorkspaceError: the path resolves outside the root, or cannot be resolved
                (embedded NUL, a symlink loop).
        """
        candidate = Path(path)  # "~" is never expanded: "~notes.txt" is a file in the workspace
        if not candidate.is_absolute():
            candidate = self.root / candidate
        try:
            resolved = candidate.resolve()
        except (OSError, RuntimeError, ValueError) as error:
            raise OutsideWorkspaceError(f"cannot resolve path {path!r}: {error}") from None
        if not os.path.lexists(resolved):
            resolved = _other_spelling(candidate) or resolved
        if not self.contains(resolved):
            raise OutsideWorkspaceError(
                f"refused: {path!r} resolves outside the workspace ({self.root}); "
                "use paths inside the workspace"
            )
        return resolved

    def display(self, resolved: Path) -> str:
        """Return a resolved path inside the root as shown to the model: relative, ``/``-separated.

        The root itself is ``"."``. A path outside the root is shown absolute.
        """
        if not self.contains(resolved):
            return str(resolved)
        relative = resolved.relative_to(self.root).as_posix()
        return relative or "."
