"""A cache of parsed configuration files: parsing TOML imports ``tomllib`` (several milliseconds
of a one-shot run), and a cron job reads the same unchanged file every time.

Invariants:

- An entry is used only when the file's device, inode, size, modification and change times
  (nanoseconds) are those it was made from: any write, ``chmod`` or replaced file misses, and
  the file is parsed again.
- The cache is one JSON file in the CLI's state folder, beside the session log:
  ``$XDG_STATE_HOME/miniagent/config-cache.json`` (the folder is this user's, ``own_folder``),
  written whole to a temporary file and renamed over the old one (mode ``0600``), so a reader
  never sees half of it. It keeps the ``MAX_ENTRIES`` files used last.
- A file holding a secret is never cached (its values stay in the one private file), nor is data
  JSON cannot carry (a TOML date; no option takes one).
- A cache that cannot be read or written is ignored: the file is parsed, nothing fails.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["MAX_ENTRIES", "cache_path", "cached", "remember"]

MAX_ENTRIES = 32
Lines = dict[tuple[str, ...], int]


def cache_path(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_STATE_HOME/miniagent/config-cache.json`` (``defaults.session_folder``'s parent)."""
    from .defaults import session_folder

    return session_folder(environ).parent / "config-cache.json"


def _stamp(info: os.stat_result) -> list[int]:
    return [info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns]


def _load() -> dict[str, Any]:
    try:
        with open(cache_path(), encoding="utf-8") as file:
            entries = json.load(file)
    except (OSError, ValueError):
        return {}
    return entries if isinstance(entries, dict) else {}


def cached(path: Path, info: os.stat_result) -> tuple[dict[str, Any], Lines] | None:
    """The data and key lines of ``path`` when the cache has them for this very file, else ``None``."""
    entry = _load().get(str(path))
    if not isinstance(entry, dict) or entry.get("stamp") != _stamp(info):
        return None
    data, lines = entry.get("data"), entry.get("lines")
    if not isinstance(data, dict) or not isinstance(lines, list):
        return None
    try:
        return data, {tuple(parts): int(line) for parts, line in lines}
    except (TypeError, ValueError):
        return None


def remember(path: Path, info: os.stat_result, data: dict[str, Any], lines: Lines) -> None:
    """Keep the parse of ``path`` (the caller leaves out files with secrets); never raises."""
    from .._folders import own_folder

    target = cache_path()
    entry = {"stamp": _stamp(info), "data": data, "lines": [[list(key), line] for key, line in lines.items()]}
    with contextlib.suppress(OSError, TypeError, ValueError):
        own_folder(target.parent)
        entries = _load()
        entries.pop(str(path), None)
        entries[str(path)] = entry
        kept = dict(list(entries.items())[-MAX_ENTRIES:])
        text = json.dumps(kept, ensure_ascii=False, allow_nan=False)
        temporary = target.with_name(f"{target.name}.{os.getpid()}.tmp")
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            file.write(text)
        os.replace(temporary, target)
