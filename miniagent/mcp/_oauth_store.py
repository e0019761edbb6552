"""Where OAuth tokens and registered clients are kept between runs.

Invariants:

- One JSON file per MCP endpoint (named by the SHA-256 of its URL) in
  ``$XDG_STATE_HOME/miniagent/mcp-auth`` (``~/.local/state/...``) or the folder given; the
  folder is made ``0700``, each file written ``0600`` to a temporary file and renamed, so a
  reader never sees half of one and no other user can read a token.
- A file that cannot be read or is not a JSON object is ignored (the next login writes a new
  one); it is never shown, since it may hold tokens.
- ``MemoryStore`` keeps the same things for one process (unattended runs that want no file).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from .._json import loads
from .._regular import read_regular

__all__ = ["FileStore", "MemoryStore", "default_folder"]


def default_folder(environ: dict[str, str] | None = None) -> Path:
    """``$XDG_STATE_HOME/miniagent/mcp-auth`` (``XDG_STATE_HOME`` defaults to ``~/.local/state``)."""
    env = os.environ if environ is None else environ
    state = env.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "miniagent" / "mcp-auth"


class MemoryStore:
    """Tokens and clients for the life of the process."""

    def __init__(self) -> None:
        """Start empty."""
        self._saved: dict[str, dict[str, Any]] = {}

    def load(self, endpoint: str) -> dict[str, Any]:
        """What was saved for ``endpoint`` (``{}`` when nothing)."""
        return dict(self._saved.get(endpoint, {}))

    def save(self, endpoint: str, record: dict[str, Any]) -> None:
        """Keep ``record`` (``{"client": {...}, "tokens": {...}}``) for ``endpoint``."""
        self._saved[endpoint] = dict(record)


class FileStore(MemoryStore):
    """Tokens and clients in ``folder`` (module docstring).

    Args:
        folder: the folder, default ``default_folder()``.
    """

    def __init__(self, folder: str | os.PathLike[str] | None = None) -> None:
        """Remember the folder; nothing is read or made yet."""
        super().__init__()
        self.folder = Path(folder) if folder is not None else default_folder()

    def _path(self, endpoint: str) -> Path:
        return self.folder / (hashlib.sha256(endpoint.encode("utf-8")).hexdigest()[:32] + ".json")

    def load(self, endpoint: str) -> dict[str, Any]:
        """What the file of ``endpoint`` holds (``{}`` when there is none or it is unreadable)."""
        try:
            record = loads(read_regular(self._path(endpoint)))  # depth-safe; a FIFO never waited on
        except (OSError, ValueError):
            return {}
        return record if isinstance(record, dict) and record.get("endpoint") == endpoint else {}

    def save(self, endpoint: str, record: dict[str, Any]) -> None:
        """Write ``record`` to the file of ``endpoint`` (``0600``, atomically).

        Raises:
            OSError: the folder or the file cannot be written.
        """
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        path = self._path(endpoint)
        temporary = path.with_suffix(f".{os.getpid()}.tmp")
        data = json.dumps({**record, "endpoint": endpoint}).encode("utf-8")
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            with os.fdopen(descriptor, "wb") as file:
                file.write(data)
            os.replace(temporary, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
