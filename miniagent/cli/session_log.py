"""The log of the sessions the CLI worked on, so they can be found again (``session list``,
``run --continue`` without ``--session``).

Every ``run`` and every ``chat`` line that works on a session file (``--session PATH``, or the
file ``chat`` creates) appends one JSON line to ``$XDG_STATE_HOME/miniagent/sessions.jsonl``
when the run ends: the session's absolute path, the workspace, the time, the stop reason, the
run's model requests (turns) and its cost. A ``run`` without ``--session`` keeps no session and
leaves no line: only what exists on disk is listed.

Invariants:

- One ``write`` of one line on a descriptor opened ``O_APPEND`` (mode ``0600``, in a folder of
  this user's, ``own_folder``), so lines of concurrent runs never interleave.
- Reading skips a line it cannot read (a crash mid-write, an older format) and lists only
  sessions whose file still exists; a line once written is never rewritten.
- The log is bounded: once it holds ``LOG_MAX_BYTES``, it is renamed ``sessions.jsonl.1``
  (replacing the one before) and a new log starts; both are read, the older first. So a cron
  job's sessions stay findable for tens of thousands of runs and the log never grows without end.
- A session is listed once: its last run gives the time and stop reason, its turns and cost are
  the sums over its runs (the cost unknown when any run's is).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .._folders import own_folder
from ..agent import RunResult
from .defaults import session_folder

__all__ = [
    "LOG_MAX_BYTES",
    "KnownSession",
    "known_sessions",
    "latest_session",
    "log_path",
    "record_run",
    "record_session",
]

LOG_MAX_BYTES = 4 * 1024 * 1024


class KnownSession:
    """A session of the log (a plain class: ``run`` imports this module, and a dataclass costs
    about a millisecond to create).

    Args:
        path: the session file (absolute).
        workspace: the workspace of its last run (absolute).
        when: the end of its last run (seconds since the epoch).
        turns: model requests over all its runs.
        stop_reason: the stop reason of its last run.
        cost_usd: the cost of all its runs in US dollars, ``None`` when not known.
        runs: how many runs the log has for it.
    """

    __slots__ = ("cost_usd", "path", "runs", "stop_reason", "turns", "when", "workspace")

    def __init__(
        self,
        path: Path,
        workspace: Path,
        when: float,
        turns: int,
        stop_reason: str,
        cost_usd: float | None,
        runs: int,
    ) -> None:
        self.path, self.workspace, self.when, self.turns = path, workspace, when, turns
        self.stop_reason, self.cost_usd, self.runs = stop_reason, cost_usd, runs

    def to_json(self) -> dict[str, Any]:
        """``{"path", "workspace", "when" (ISO 8601, UTC), "turns", "stop_reason", "cost_usd", "runs"}``."""
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.when))
        return {
            "path": str(self.path),
            "workspace": str(self.workspace),
            "when": stamp,
            "turns": self.turns,
            "stop_reason": self.stop_reason,
            "cost_usd": self.cost_usd,
            "runs": self.runs,
        }


def log_path(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_STATE_HOME/miniagent/sessions.jsonl``, beside ``chat``'s session folder."""
    return session_folder(environ).parent / "sessions.jsonl"


def record_run(
    session: Path, workspace: Path, result: RunResult, *, environ: Mapping[str, str] | None = None
) -> None:
    """Append the line of one run on ``session`` to the log.

    Raises:
        OSError: the folder or the log cannot be written (or another user owns the folder).
    """
    path = log_path(environ)
    own_folder(path.parent)
    line = {
        "session": str(Path(session).absolute()),
        "workspace": str(workspace),
        "at": round(time.time(), 3),
        "stop_reason": result.stop_reason,
        "turns": result.usage.requests,
        "cost_usd": result.usage.cost_usd,
    }
    data = (json.dumps(line, ensure_ascii=False) + "\n").encode("utf-8")
    with contextlib.suppress(FileNotFoundError):
        if path.stat().st_size >= LOG_MAX_BYTES:
            os.replace(path, _older(path))
    descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(descriptor, data)
    finally:
        os.close(descriptor)


def _older(path: Path) -> Path:
    return path.with_name(path.name + ".1")


def record_session(display: Any, options: Any, result: RunResult) -> None:
    """Add the run to the log when it worked on a session file (``options.session``); a log
    that cannot be written is a note on stderr (``display.note``), never a failed run."""
    if options.session is None:
        return
    try:
        record_run(options.session, options.folder, result)
    except OSError as error:
        display.note(f"miniagent: warning: the run was not added to {log_path()}: {error.strerror or error}")


def _entries(path: Path) -> list[dict[str, Any]]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return []
    entries = []
    for line in text.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        fields = ("session", "workspace", "at", "stop_reason", "turns")
        if isinstance(entry, dict) and all(key in entry for key in fields):
            entries.append(entry)
    return entries


def known_sessions(environ: Mapping[str, str] | None = None) -> list[KnownSession]:
    """The sessions of the log whose file exists, the most recent run first.

    Raises:
        OSError: the log exists and cannot be read.
    """
    found: dict[str, KnownSession] = {}
    last: dict[str, int] = {}  # the line of each session's last run: ties of time go to the later line
    log = log_path(environ)
    for number, entry in enumerate(_entries(_older(log)) + _entries(log)):
        try:
            when, turns = float(entry["at"]), int(entry["turns"])
            cost = None if entry.get("cost_usd") is None else float(entry["cost_usd"])
        except (TypeError, ValueError):
            continue
        key = str(entry["session"])
        known = found.get(key)
        if known is None:
            known = KnownSession(Path(key), Path(str(entry["workspace"])), when, 0, "", 0.0, 0)
            found[key] = known
        known.workspace, known.when = Path(str(entry["workspace"])), when
        known.stop_reason = str(entry["stop_reason"])
        last[key] = number
        known.turns += turns
        known.runs += 1
        known.cost_usd = None if known.cost_usd is None or cost is None else known.cost_usd + cost
    listed = [(key, known) for key, known in found.items() if known.path.is_file()]
    listed.sort(key=lambda item: (item[1].when, last[item[0]]), reverse=True)
    return [known for _, known in listed]


def latest_session(workspace: Path, environ: Mapping[str, str] | None = None) -> Path | None:
    """The session of the last run in ``workspace`` whose file exists, or ``None``."""
    for known in known_sessions(environ):
        if known.workspace == workspace:
            return known.path
    return None
