"""The server's child process: start in its own process group, log its stderr, stop the group.

Invariants:

- The server runs in a new session (``start_new_session``): its own process group, whose id is
  the server's pid, so stopping it also stops what it started (``npx`` starts ``node``, ``uvx``
  starts ``python``).
- stdin and stdout are pipes owned by the caller's thread (``_stdio``); stderr is read by one
  daemon thread per server that logs each line to the ``miniagent.mcp`` logger (at most
  ``STDERR_LOG_BYTES`` per process, lines cut at ``STDERR_LINE_CHARS``) and keeps the last lines
  for error messages, so a chatty server never blocks on a full stderr pipe.
- Stopping follows the MCP stdio transport's shutdown (spec 2025-11-25, "Lifecycle /
  Shutdown"): close stdin, wait ``exit_grace`` seconds for the server to exit, then SIGTERM to
  the group, then SIGKILL after ``kill_grace`` seconds; leftovers of the group are stopped the same
  way even when the server itself exited.
- Every running group is in a registry, so ``kill_running_servers()`` can SIGKILL them from a
  signal handler when the process must exit at once.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence

__all__ = [
    "EXIT_GRACE_SECONDS",
    "KILL_GRACE_SECONDS",
    "STDERR_LOG_BYTES",
    "STDERR_LINE_CHARS",
    "ServerProcess",
    "kill_running_servers",
]

EXIT_GRACE_SECONDS = 1.0
KILL_GRACE_SECONDS = 0.5
STDERR_LOG_BYTES = 256 * 1024
STDERR_LINE_CHARS = 500
_TAIL_LINES = 20
_POLL_SECONDS = 0.01

logger = logging.getLogger("miniagent.mcp")

_RUNNING: set[int] = set()  # process groups of running servers (for an emergency exit)


def kill_running_servers() -> None:
    """SIGKILL the process group of every MCP server running now. Safe in a signal handler."""
    for pgid in tuple(_RUNNING):
        with contextlib.suppress(OSError):
            os.killpg(pgid, signal.SIGKILL)


class ServerProcess:
    """One running server: ``popen`` (stdin/stdout pipes in binary mode) and its stderr log.

    Args:
        name: the server's name, used in log lines.
        argv: the command and its arguments.
        env: the whole environment of the child.
        cwd: its working folder, or ``None`` for the caller's.

    Raises:
        OSError: the command could not be started (``FileNotFoundError`` when it does not exist,
            ``PermissionError`` when it is not executable).
    """

    def __init__(self, name: str, argv: Sequence[str], env: Mapping[str, str], cwd: str | None) -> None:
        """Start the process (see the class docstring)."""
        self.name = name
        self.popen = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env),
            cwd=cwd,
            start_new_session=True,
            close_fds=True,
        )
        self.pgid = self.popen.pid
        _RUNNING.add(self.pgid)
        self._tail: collections.deque[str] = collections.deque(maxlen=_TAIL_LINES)
        self._reader = threading.Thread(
            target=self._read_stderr, name=f"miniagent-mcp-stderr-{name}", daemon=True
        )
        self._reader.start()

    # --- stderr ---------------------------------------------------------------------------------

    def _read_stderr(self) -> None:
        stream = self.popen.stderr
        assert stream is not None
        logged = 0
        with contextlib.suppress(OSError, ValueError):
            for raw in iter(lambda: stream.readline(64 * 1024), b""):
                line = raw.decode("utf-8", "replace").rstrip()
                if len(line) > STDERR_LINE_CHARS:
                    line = line[:STDERR_LINE_CHARS] + "…"
                self._tail.append(line)
                if logged < STDERR_LOG_BYTES:
                    logged += len(raw)
                    logger.info("[%s] %s", self.name, line)
                    if logged >= STDERR_LOG_BYTES:
                        logger.info("[%s] (further stderr lines are not logged)", self.name)

    def stderr_tail(self, max_chars: int = 1000) -> str:
        """The last lines the server wrote to stderr (at most ``max_chars`` characters, the end
        kept), joined with `` | ``; empty when it wrote nothing."""
        text = " | ".join(line for line in self._tail if line.strip())
        return text if len(text) <= max_chars else "…" + text[-(max_chars - 1) :]

    def wait_stderr(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for the stderr reader to reach the end of the stream
        (after the process exited, so its last lines are in ``stderr_tail``)."""
        self._reader.join(timeout)

    # --- stopping -------------------------------------------------------------------------------

    def alive(self) -> bool:
        """Whether the server process has not exited yet."""
        return self.popen.poll() is None

    def stop(self, exit_grace: float = EXIT_GRACE_SECONDS, kill_grace: float = KILL_GRACE_SECONDS) -> None:
        """Stop the server and its process group (order: module docstring). Never raises;
        idempotent. Returns once the server has been reaped (or SIGKILL was sent)."""
        stdin = self.popen.stdin
        if stdin is not None:
            with contextlib.suppress(OSError, ValueError):
                stdin.close()
        if exit_grace > 0:
            self._wait_exit(exit_grace)
        self._signal(signal.SIGTERM)
        if not self._wait_group(kill_grace):
            self._signal(signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(timeout=2.0)
        _RUNNING.discard(self.pgid)
        stdout = self.popen.stdout
        if stdout is not None:
            with contextlib.suppress(OSError, ValueError):
                stdout.close()
        self.wait_stderr(0.2)

    def _wait_exit(self, seconds: float) -> bool:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(timeout=seconds)
            return True
        return False

    def _signal(self, signum: int) -> None:
        with contextlib.suppress(OSError):
            os.killpg(self.pgid, signum)

    def _wait_group(self, seconds: float) -> bool:
        """Wait until no member of the group is alive (zombies ignored); ``True`` when gone."""
        deadline = time.monotonic() + seconds
        while True:
            self.popen.poll()  # reap the leader, so it does not count as a member
            if not _group_alive(self.pgid):
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(_POLL_SECONDS)


def _group_alive(pgid: int) -> bool:
    """Whether a process of group ``pgid`` is alive. Linux: members found in ``/proc`` that are
    not zombies; elsewhere ``killpg(pgid, 0)``."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        try:
            os.killpg(pgid, 0)
        except OSError:
            return False
        return True
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 2 and fields[0] != b"Z" and int(fields[2]) == pgid:
            return True
    return False
