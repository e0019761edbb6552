"""The ``grep`` tool: search files in the workspace with a regular expression.

Walks the given folder (or searches one file) without following symlinks to folders; symlinks to
files are searched only when they resolve inside the workspace. Binary files, files larger than
``MAX_FILE_BYTES`` and the ``.git`` folder are skipped.
"""

from __future__ import annotations

import fnmatch
import os
import re
import stat
import threading
from pathlib import Path
from typing import Any

from ..tools import Tool, ToolResult
from .files import guarded
from .output import cap, decode, is_binary
from .paths import OutsideWorkspaceError, Workspace

__all__ = ["grep_tool", "MAX_MATCHES", "MAX_LINE_CHARS", "MAX_FILE_BYTES"]

MAX_MATCHES = 1000
MAX_LINE_CHARS = 500
MAX_FILE_BYTES = 20 * 1024 * 1024
_SKIPPED_FOLDERS = frozenset({".git"})


class _Search:
    """The state of one grep call."""

    def __init__(self, workspace: Workspace, regex: re.Pattern[str], glob: str | None) -> None:
        self.workspace = workspace
        self.regex = regex
        self.glob = glob
        self.matches: list[str] = []
        self.skipped: dict[str, int] = {}
        self.full = False

    def skip(self, why: str) -> None:
        self.skipped[why] = self.skipped.get(why, 0) + 1

    def wanted(self, path: Path) -> bool:
        if self.glob is None:
            return True
        relative = self.workspace.display(path)
        return fnmatch.fnmatch(path.name, self.glob) or fnmatch.fnmatch(relative, self.glob)

    def search_file(self, path: Path) -> None:
        shown = self.workspace.display(path)
        try:
            info = path.stat()
            if not stat.S_ISREG(info.st_mode):
                self.skip("special files (not regular)")
                return
            if info.st_size > MAX_FILE_BYTES:
                self.skip("files larger than 20 MB")
                return
            data = path.read_bytes()
        except OSError:
            self.skip("unreadable files")
            return
        if is_binary(data):
            self.skip("binary files")
            return
        lines = decode(data).split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        for number, line in enumerate(lines, start=1):
            line = line.removesuffix("\r")
            if self.regex.search(line):
                if len(line) > MAX_LINE_CHARS:
                    line = line[:MAX_LINE_CHARS] + f"[... {len(line) - MAX_LINE_CHARS} more]"
                self.matches.append(f"{shown}:{number}: {line}")
                if len(self.matches) >= MAX_MATCHES:
                    self.full = True
                    return

    def search_entry(self, path: Path) -> None:
        """Search a directory entry found while walking (never followed if a folder symlink)."""
        if path.is_symlink():
            try:
                target = path.resolve()
            except (OSError, RuntimeError):
                self.skip("broken symlinks")
                return
            if not self.workspace.contains(target):
                self.skip("symlinks leading outside the workspace")
                return
            if not target.is_file():
                self.skip("symlinks to folders (not followed)")
                return
        if self.wanted(path):
            self.search_file(path)

    def walk(self, top: Path, cancel: threading.Event | None) -> bool:
        """Search every file under ``top``; return ``False`` when cancelled."""
        for folder, folders, files in os.walk(top, followlinks=False):
            folders[:] = sorted(f for f in folders if f not in _SKIPPED_FOLDERS)
            base = Path(folder)
            # os.walk lists symlinks to folders among the folders; route them through the checks.
            for name in list(folders):
                if (base / name).is_symlink():
                    folders.remove(name)
                    self.search_entry(base / name)
            for name in sorted(files):
                if cancel is not None and cancel.is_set():
                    return False
                self.search_entry(base / name)
                if self.full:
                    return True
        return True


def _grep(
    workspace: Workspace,
    max_chars: int,
    arguments: dict[str, Any],
    cancel: threading.Event | None,
) -> ToolResult:
    pattern = str(arguments["pattern"])
    glob = arguments.get("glob")
    try:
        regex = re.compile(pattern)
    except re.error as error:
        return ToolResult(f"invalid regular expression {pattern!r}: {error}", is_error=True)
    try:
        top = workspace.resolve(str(arguments.get("path", ".")))
    except OutsideWorkspaceError as error:
        return ToolResult(str(error), is_error=True)
    search = _Search(workspace, regex, str(glob) if glob else None)
    finished = True
    if top.is_dir():
        finished = search.walk(top, cancel)
    elif top.is_file():
        search.search_file(top)
    else:
        return ToolResult(f"not found: {workspace.display(top)}", is_error=True)
    lines = search.matches or [f"no matches for {pattern!r}"]
    if search.full:
        lines.append(f"[stopped after {MAX_MATCHES} matches; narrow the pattern, path or glob]")
    if search.skipped:
        parts = ", ".join(f"{count} {why}" for why, count in sorted(search.skipped.items()))
        lines.append(f"[skipped: {parts}]")
    if not finished:
        lines.append("[cancelled]")
    return ToolResult(cap("\n".join(lines), max_chars), is_error=not finished)


def grep_tool(workspace: Workspace, max_chars: int) -> Tool:
    """Return the ``grep`` tool (read-only).

    Input: ``pattern`` (Python regular expression, searched in each line), ``path`` (file or
    folder, default ``"."``), ``glob`` (optional file name pattern, matched against the name and
    against the workspace-relative path, e.g. ``*.py``).
    Result: one ``path:line_number: line`` per matching line (at most ``MAX_MATCHES``; lines longer
    than ``MAX_LINE_CHARS`` characters shortened), then notes on skipped files; ``no matches ...``
    when nothing matched; capped to ``max_chars`` characters. A bad pattern is an error result.
    """

    def execute(arguments: dict[str, Any], cancel: threading.Event | None) -> ToolResult:
        return guarded(lambda: _grep(workspace, max_chars, arguments, cancel))

    return Tool(
        name="grep",
        description=(
            "Search text files in the workspace for lines matching a regular expression "
            "(Python syntax). Results are lines 'path:line_number: line'."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "pattern": {
                    "type": "string",
                    "description": "Regular expression searched in each line (Python re syntax).",
                },
                "path": {
                    "type": "string",
                    "description": "File or folder to search, relative to the workspace root. "
                    "Default: '.'.",
                },
                "glob": {
                    "type": "string",
                    "description": "Only search files whose name matches this pattern, "
                    "e.g. '*.py'.",
                },
            },
            "required": ["pattern"],
            "additionalProperties": False,
        },
        execute=execute,
        read_only=True,
    )
