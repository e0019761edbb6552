"""The registry of running child process groups, and signals to whole groups.

Every child that miniagent starts (a command, grep's worker, an MCP server, the embedded
model's server) runs in a process group of its own, registered here from right after it
started until it was reaped, so that a process that must exit at once can take them all with
it (``kill_running_children``).

"Alive" ignores zombies: on Linux the members are looked up in ``/proc`` (a killed grandchild
stays a zombie until the init process reaps it, which can take a second in containers);
elsewhere ``killpg(pgid, 0)`` decides.
"""

from __future__ import annotations

import contextlib
import os
import signal

__all__ = [
    "group_alive",
    "kill_running_children",
    "register_group",
    "running_groups",
    "signal_group",
    "unregister_group",
]

_RUNNING: set[int] = set()  # process groups of children running now


def register_group(pgid: int) -> None:
    """Add a running process group to the registry (``start_child`` does it for its children)."""
    _RUNNING.add(pgid)


def unregister_group(pgid: int) -> None:
    """Remove a process group from the registry (``stop_child`` does it); unknown ids are ignored."""
    _RUNNING.discard(pgid)


def running_groups() -> frozenset[int]:
    """Return the process groups registered now."""
    return frozenset(_RUNNING)


def kill_running_children() -> None:
    """SIGKILL the process group of every registered child (commands, grep, MCP servers).

    For a process that must exit at once (e.g. the CLI's second Ctrl-C, which skips the normal
    stop): without it, those groups would outlive the process. Every descendant of a group's
    leader (found in ``/proc``) is killed too, also one that left the group: a contained child's
    reaper keeps those in its tree. Safe in a signal handler (no locks).
    """
    for _ in range(3):  # another thread may change the set while it is copied
        try:
            groups = tuple(_RUNNING)
        except RuntimeError:
            continue
        stats = _proc_stats() if groups else None
        for pgid in groups:
            # Descendants that left the group first (a contained child's reaper keeps them in
            # its tree), then the group: once the reaper is gone they would be out of reach.
            for pid in _descendants(pgid, stats or []):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            signal_group(pgid, signal.SIGKILL)
        return


def signal_group(pgid: int, signum: int) -> None:
    """Send ``signum`` to process group ``pgid``; a group that is gone (or not ours) is ignored."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


def _proc_stats() -> list[bytes] | None:
    """The ``/proc/PID/stat`` lines of every process, or ``None`` without a usable ``/proc``."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return None
    if "self" not in names:
        return None
    stats = []
    for name in names:
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as handle:
                    stats.append(handle.read())
            except OSError:
                continue
    return stats


def _descendants(root: int, stats: list[bytes]) -> list[int]:
    """Pids under ``root`` in the ``ppid`` tree of ``stats`` (``/proc/PID/stat`` lines)."""
    children: dict[int, list[int]] = {}
    for stat in stats:
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 1:
            children.setdefault(int(fields[1]), []).append(int(stat.split(b" ", 1)[0]))
    found, queue = [], list(children.get(root, ()))
    while queue:
        pid = queue.pop()
        found.append(pid)
        queue.extend(children.get(pid, ()))
    return found


def group_alive(pgid: int) -> bool:
    """Return whether a process of group ``pgid`` is alive (zombies do not count on Linux)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    stats = _proc_stats()
    if stats is None:
        return True
    for stat in stats:
        # "pid (comm) state ppid pgrp ..."; comm may contain spaces and parentheses.
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            return True
    return False
