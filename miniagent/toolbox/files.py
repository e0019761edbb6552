"""File tools confined to a workspace: ``read_file``, ``write_file``, ``edit_file``, ``list_dir``.

Each factory takes a ``Workspace`` and a cap in characters and returns a ``Tool``. Failures the
model caused (missing file, a folder where a file was expected, a path outside the workspace,
an ambiguous edit, permission denied) are error results; only bugs raise.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .._text import cap, utf8
from ..process.environment import current_redactor
from ..tools import Tool, ToolResult
from .fileio import SpecialFileError, open_folder, open_for_reading, write_bytes
from .paths import OutsideWorkspaceError, Workspace
from .reading import read_shown
from .textfiles import EncodingProblem, decode_file, encode_edit, normalise_edit

__all__ = [
    "read_file_tool",
    "write_file_tool",
    "edit_file_tool",
    "list_dir_tool",
    "MAX_LIST_ENTRIES",
    "MAX_LIST_DEPTH",
]

MAX_LIST_ENTRIES = 1000
MAX_LIST_DEPTH = 10
_NOT_DESCENDED = frozenset({".git"})


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def _error(text: str) -> ToolResult:
    return ToolResult(text, is_error=True)


def guarded(function: Callable[[], ToolResult]) -> ToolResult:
    """Run ``function``; an ``OSError`` it raises (permission denied, ...) becomes an error result."""
    try:
        return function()
    except OSError as error:
        where = f": {error.filename}" if error.filename else ""
        return _error(f"{error.strerror or error}{where}")


def _os_error(action: str, shown: str, error: OSError) -> ToolResult:
    reason = error.strerror or str(error)
    return _error(f"cannot {action} {shown}: {reason}")


def _resolve_file(workspace: Workspace, path: str) -> tuple[Path, str] | ToolResult:
    """Resolve the path of an existing file: ``(path, its display form)`` or the error result."""
    try:
        resolved = workspace.resolve(path)
    except OutsideWorkspaceError as error:
        return _error(str(error))
    shown = workspace.display(resolved)
    if resolved.is_dir():
        return _error(f"{shown} is a folder, not a file (use list_dir)")
    if not os.path.lexists(resolved):
        near = [workspace.display(p) for p in _near_names(resolved)]
        return _error(f"file not found: {shown}" + (f" (did you mean {' or '.join(near)}?)" if near else ""))
    return resolved, shown


def _near_names(missing: Path, most: int = 3) -> list[Path]:
    """Files beside ``missing`` a user may have meant: the same name in other letter case, or
    with an extension (``README`` -> ``README.md``); at most ``most``, sorted."""
    wanted = missing.name.lower()
    try:
        entries = sorted(os.scandir(missing.parent), key=lambda e: e.name)
    except OSError:
        return []
    found = [
        missing.parent / e.name
        for e in entries
        if (e.name.lower() == wanted or e.name.lower().split(".", 1)[0] == wanted) and e.is_file()
    ]
    return found[:most]


def _read_existing_file(workspace: Workspace, path: str) -> tuple[Path, str, bytes] | ToolResult:
    """Resolve and read a regular file whole: (path, its display form, content), or the error
    result explaining why not (missing, a folder, a FIFO or device: never blocks)."""
    found = _resolve_file(workspace, path)
    if isinstance(found, ToolResult):
        return found
    resolved, shown = found
    try:
        handle, _size = open_for_reading(workspace.root, resolved)
        with handle:
            return resolved, shown, handle.read()
    except SpecialFileError as error:
        return _error(f"{shown} is {error}")
    except OSError as error:
        return _os_error("read", shown, error)


# --- read_file -----------------------------------------------------------------------------------


def _read_file(workspace: Workspace, max_chars: int, arguments: dict[str, Any]) -> ToolResult:
    offset = arguments.get("offset")
    limit = arguments.get("limit")
    if offset is not None and int(offset) < 1:
        return _error("offset is a 1-based line number and must be at least 1")
    if limit is not None and int(limit) < 1:
        return _error("limit is a number of lines and must be at least 1")
    found = _resolve_file(workspace, str(arguments["path"]))
    if isinstance(found, ToolResult):
        return found
    resolved, shown = found
    try:
        handle, size = open_for_reading(workspace.root, resolved)
        with handle:
            first = None if offset is None else int(offset)
            count = None if limit is None else int(limit)
            result = read_shown(handle, size, shown, max_chars, first, count, current_redactor())
    except SpecialFileError as error:
        return _error(f"{shown} is {error}")
    except OSError as error:
        return _os_error("read", shown, error)
    return ToolResult(result.text, result.is_error)


def read_file_tool(workspace: Workspace, max_chars: int) -> Tool:
    """Return the ``read_file`` tool (read-only).

    Input: ``path``; optional ``offset`` (1-based first line) and ``limit`` (number of lines).
    Result: the file's text (invalid UTF-8 replaced by U+FFFD), capped to ``max_chars``
    characters; with ``offset``/``limit`` the selected lines and, when more follow, a note with
    the next offset. Binary files, folders, missing files and paths outside are error results.
    """

    def execute(arguments: dict[str, Any], cancel: threading.Event | None) -> ToolResult:
        return guarded(lambda: _read_file(workspace, max_chars, arguments))

    return Tool(
        name="read_file",
        description=(
            "Read a text file in the workspace. Returns its content exactly (no line numbers). "
            "For long files pass offset and limit to read a range of lines."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "File path, relative to the workspace root.",
                },
                "offset": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "First line to return, 1-based. Default: 1.",
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "Maximum number of lines to return. Default: all.",
                },
            },
            "required": ["path"],
            "additionalProperties": False,
        },
        execute=execute,
        read_only=True,
    )


# --- write_file ----------------------------------------------------------------------------------


def _write_file(workspace: Workspace, arguments: dict[str, Any]) -> ToolResult:
    path, content = str(arguments["path"]), str(arguments["content"])
    try:
        resolved = workspace.resolve(path)
    except OutsideWorkspaceError as error:
        return _error(str(error))
    shown = workspace.display(resolved)
    if resolved.is_dir():
        return _error(f"{shown} is a folder; give a file path")
    data = utf8(content)  # lone surrogates become U+FFFD
    try:
        # Folders made and the file replaced from the root down, never through a symlink.
        existed = write_bytes(workspace.root, resolved, data, make_folders=True)
    except OSError as error:
        return _os_error("write", shown, error)
    verb = "overwrote" if existed else "created"
    return ToolResult(f"{verb} {shown} ({_count(len(content), 'character')}, {_count(len(data), 'byte')})")


def write_file_tool(workspace: Workspace) -> Tool:
    """Return the ``write_file`` tool (changes files).

    Input: ``path``, ``content``. Creates missing folders; replaces an existing file (a new file
    renamed over it: ``fileio``); a file with more than one hard link, or that is not a regular
    file, is refused.
    Result: ``created PATH (N characters, M bytes)`` or ``overwrote ...``.
    """

    def execute(arguments: dict[str, Any], cancel: threading.Event | None) -> ToolResult:
        return guarded(lambda: _write_file(workspace, arguments))

    return Tool(
        name="write_file",
        description=(
            "Create or overwrite a text file in the workspace with the given content. "
            "Missing folders are created. To change part of a file, prefer edit_file."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "File path, relative to the workspace root.",
                },
                "content": {
                    "type": "string",
                    "description": "The complete new content of the file.",
                },
            },
            "required": ["path", "content"],
            "additionalProperties": False,
        },
        execute=execute,
        read_only=False,
    )


# --- edit_file -----------------------------------------------------------------------------------


def _count_occurrences(text: str, part: str) -> int:
    """Count occurrences of ``part`` in ``text``, overlapping ones included."""
    count, start = 0, text.find(part)
    while start != -1:
        count += 1
        start = text.find(part, start + 1)
    return count


def _find_once(text: str, old_text: str, new_text: str) -> tuple[str, str, int]:
    """Where ``old_text`` occurs in ``text``, with both sides in the file's line ending
    (``textfiles.normalise_edit``); on a file of mixed endings, LF in ``old_text`` may also match
    CRLF. Returns ``(old, new, count)``: the texts as they will be used and the number of
    occurrences (overlapping ones included)."""
    old, new = normalise_edit(text, old_text, new_text)
    count = _count_occurrences(text, old)
    if count == 0 and "\r\n" in text and "\n" in old and "\r\n" not in old:
        crlf_old = old.replace("\n", "\r\n")
        if _count_occurrences(text, crlf_old) == 1:
            return crlf_old, new.replace("\r\n", "\n").replace("\n", "\r\n"), 1
    return old, new, count


def _not_once(shown: str, count: int) -> ToolResult:
    times = "time" if count == 1 else "times"
    hint = (
        "copy it exactly from read_file (whitespace and line breaks count)"
        if count == 0
        else "include more surrounding text so that it occurs exactly once"
    )
    return _error(f"old_text must occur exactly once in {shown}, but it occurs {count} {times}; {hint}")


def _edit_file(workspace: Workspace, arguments: dict[str, Any]) -> ToolResult:
    old_text, new_text = str(arguments["old_text"]), str(arguments["new_text"])
    if not old_text:
        return _error("old_text is empty; give the exact text to replace")
    if old_text == new_text:
        return _error("old_text and new_text are the same, so nothing would change; give the new text")
    found = _read_existing_file(workspace, str(arguments["path"]))
    if isinstance(found, ToolResult):
        return found
    resolved, shown, data = found
    file = decode_file(data)
    if file is None:
        return _error(f"{shown} is a binary file; edit_file changes text files only")
    text = file.text
    old, new, count = _find_once(text, old_text, new_text)
    if count != 1:
        return _not_once(shown, count)
    index = text.find(old)
    updated = text[:index] + new + text[index + len(old) :]
    try:
        encoded = encode_edit(file, updated, old, new, index)
    except EncodingProblem as problem:
        return _error(f"cannot edit {shown}: {problem}")
    try:
        write_bytes(workspace.root, resolved, encoded)
    except OSError as error:
        return _os_error("write", shown, error)
    line = text.count("\n", 0, index) + 1
    return ToolResult(f"edited {shown}: replaced 1 occurrence at line {line}")


def edit_file_tool(workspace: Workspace) -> Tool:
    """Return the ``edit_file`` tool (changes files).

    Input: ``path``, ``old_text``, ``new_text``. ``old_text`` must occur exactly once (overlapping
    occurrences counted); otherwise an error result says how many times it occurs. Both texts
    get the file's own line ending (a CRLF file matches ``old_text`` written with LF, and
    ``new_text`` is written with CRLF). The file keeps its encoding and byte order mark (UTF-8,
    UTF-16, UTF-32); in a file that is not UTF-8 only ASCII edits are made, its other bytes kept
    as they are; anything that would mix two encodings is an error result (``textfiles``).
    Result: ``edited PATH: replaced 1 occurrence at line N``.
    """

    def execute(arguments: dict[str, Any], cancel: threading.Event | None) -> ToolResult:
        return guarded(lambda: _edit_file(workspace, arguments))

    return Tool(
        name="edit_file",
        description=(
            "Replace one exact piece of text in a file. old_text must occur exactly once in the "
            "file (copy it from read_file, with enough context to be unique)."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "File path, relative to the workspace root.",
                },
                "old_text": {
                    "type": "string",
                    "description": "The exact text to replace; must occur exactly once.",
                },
                "new_text": {
                    "type": "string",
                    "description": "The text to put in its place (may be empty to delete).",
                },
            },
            "required": ["path", "old_text", "new_text"],
            "additionalProperties": False,
        },
        execute=execute,
        read_only=False,
    )


# --- list_dir ------------------------------------------------------------------------------------


def _describe_symlink(workspace: Workspace, link: Path, shown: str) -> str:
    try:
        target = link.resolve()
    except (OSError, RuntimeError):
        return f"{shown} -> (broken symlink)"
    if not workspace.contains(target):
        return f"{shown} -> (symlink leading outside the workspace; not followed)"
    if not target.exists():
        return f"{shown} -> (broken symlink)"
    kind = "/" if target.is_dir() else ""
    return f"{shown} -> {workspace.display(target)}{kind} (symlink; not followed)"


class _Listing:
    """One ``list_dir`` walk: entry lines, problems, and whether it stopped early.

    Args:
        workspace: for display and symlink checks.
        depth: levels to descend (>= 1).
        cancel: checked before each entry.
    """

    def __init__(self, workspace: Workspace, depth: int, cancel: threading.Event | None) -> None:
        self.workspace = workspace
        self.depth = depth
        self.cancel = cancel
        self.lines: list[str] = []
        self.problems: list[str] = []
        self.stopped = False

    def _entries(self, folder: Path) -> tuple[int, list[os.DirEntry[str]]] | None:
        """The entries of ``folder`` sorted by name, listed through a descriptor opened from the
        root without following symlinks (``fileio.open_folder``); ``None`` with a problem noted
        when it cannot be listed. The caller closes the descriptor."""
        try:
            fd = open_folder(self.workspace.root, folder)
        except OSError as error:
            self.problems.append(f"cannot list {self.workspace.display(folder)}: {error.strerror}")
            return None
        try:
            with os.scandir(fd) as scan:
                return fd, sorted(scan, key=lambda e: e.name)
        except OSError as error:
            os.close(fd)
            self.problems.append(f"cannot list {self.workspace.display(folder)}: {error.strerror}")
            return None

    def _must_stop(self) -> bool:
        cancelled = self.cancel is not None and self.cancel.is_set()
        self.stopped = self.stopped or cancelled or len(self.lines) >= MAX_LIST_ENTRIES
        return self.stopped

    def walk(self, folder: Path, level: int = 1) -> None:
        """List ``folder`` (at ``level``), descending into subfolders up to ``depth``."""
        listed = self._entries(folder)
        if listed is None:
            return
        fd, entries = listed
        os.close(fd)  # the entries were read; each subfolder is opened from the root again
        for entry in entries:
            if self._must_stop():
                return
            path = folder / entry.name
            shown = self.workspace.display(path)
            if entry.is_symlink():
                self.lines.append(_describe_symlink(self.workspace, path, shown))
            elif entry.is_dir(follow_symlinks=False):
                self.lines.append(shown + "/")
                if level < self.depth and entry.name not in _NOT_DESCENDED:
                    self.walk(path, level + 1)
            else:
                self.lines.append(shown)

    def result(self, top_shown: str, max_chars: int) -> ToolResult:
        """The listing as a result: entries, then a note on why it stopped, then problems."""
        lines = list(self.lines)
        if not lines and not self.problems:
            lines.append(f"({top_shown} is empty)")
        if self.cancel is not None and self.cancel.is_set():
            lines.append("[cancelled]")
        elif self.stopped:
            lines.append(f"[listing stopped after {MAX_LIST_ENTRIES} entries; list a subfolder]")
        return ToolResult(cap(current_redactor()("\n".join(lines + self.problems)), max_chars))


def _list_dir(
    workspace: Workspace,
    max_chars: int,
    arguments: dict[str, Any],
    cancel: threading.Event | None,
) -> ToolResult:
    raw_depth = arguments.get("depth")
    depth = 1 if raw_depth is None else int(raw_depth)
    if depth < 1:
        return _error("depth must be at least 1")
    try:
        top = workspace.resolve(str(arguments.get("path", ".")))
    except OutsideWorkspaceError as error:
        return _error(str(error))
    top_shown = workspace.display(top)
    if not top.exists():
        return _error(f"folder not found: {top_shown}")
    if not top.is_dir():
        return _error(f"{top_shown} is not a folder (use read_file)")
    listing = _Listing(workspace, min(depth, MAX_LIST_DEPTH), cancel)
    listing.walk(top)
    return listing.result(top_shown, max_chars)


def list_dir_tool(workspace: Workspace, max_chars: int) -> Tool:
    """Return the ``list_dir`` tool (read-only).

    Input: ``path`` (default ``"."``), ``depth`` (levels, default 1, at most ``MAX_LIST_DEPTH``).
    Result: one entry per line, sorted, shown relative to the workspace root; folders end with
    ``/``; symlinks are shown with their target and never followed (those leading outside are
    marked as such); ``.git`` is listed but not entered; at most ``MAX_LIST_ENTRIES`` entries;
    capped to ``max_chars`` characters.
    """

    def execute(arguments: dict[str, Any], cancel: threading.Event | None) -> ToolResult:
        return guarded(lambda: _list_dir(workspace, max_chars, arguments, cancel))

    return Tool(
        name="list_dir",
        description=(
            "List files and folders in the workspace. Folders end with '/'. "
            "Paths are relative to the workspace root."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "Folder to list, relative to the workspace root. Default: '.'.",
                },
                "depth": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_LIST_DEPTH,
                    "description": "How many levels to descend; 1 lists only direct entries.",
                },
            },
            "additionalProperties": False,
        },
        execute=execute,
        read_only=True,
    )
