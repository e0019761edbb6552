"""The server's child process on the shared process machinery (``miniagent.process``), plus its stderr log.

Invariants:

- The server is started by ``process.children.start_child``: a new session (its own process
  group, whose id is the server's pid, so stopping it also stops what it started: ``npx``
  starts ``node``, ``uvx`` starts ``python``), registered while it runs, so the CLI's emergency
  exit (``kill_running_children``) reaches it too.
- A server started with a ``Sandbox`` runs under the reaper, which confines itself with the
  kernel before it starts the server (``process.sandbox``: writes only in its folder and the
  sandbox's private temporary folder; no network; secret folders unreadable).
- stdin and stdout are pipes owned by the caller's thread (``_stdio``); stderr is read by one
  daemon thread per server that logs each line to the ``miniagent.mcp`` logger (at most
  ``STDERR_LOG_BYTES`` per process, lines cut at ``STDERR_LINE_CHARS``) and keeps the last lines
  for error messages, so a chatty server never blocks on a full stderr pipe. Every line is
  ``clean``-ed first (secret values hidden, terminal escapes made visible), in the log and in
  the tail alike.
- Stopping follows the MCP stdio transport's shutdown (spec 2025-11-25, "Lifecycle /
  Shutdown"): close stdin, wait ``exit_grace`` seconds for the server to exit, then
  ``process.children.stop_child``: SIGTERM to the group, SIGKILL after ``kill_grace`` seconds;
  leftovers of the group are stopped the same way even when the server itself exited.
"""

from __future__ import annotations

import collections
import contextlib
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from .._log import Logger
from ..process.children import KILL_GRACE_SECONDS, start_child, stop_child
from ..process.groups import group_alive

if TYPE_CHECKING:
    from ..process.sandbox import Sandbox

__all__ = [
    "EXIT_GRACE_SECONDS",
    "KILL_GRACE_SECONDS",
    "STDERR_LOG_BYTES",
    "STDERR_LINE_CHARS",
    "ServerProcess",
    "group_alive",
]

EXIT_GRACE_SECONDS = 1.0
STDERR_LOG_BYTES = 256 * 1024
STDERR_LINE_CHARS = 500
_TAIL_LINES = 20

logger = Logger("miniagent.mcp")


class ServerProcess:
    """One running server: ``popen`` (stdin/stdout pipes in binary mode) and its stderr log.

    Args:
        name: the server's name, used in log lines.
        argv: the command and its arguments.
        env: the whole environment of the child.
        cwd: its working folder, or ``None`` for the caller's.
        sandbox: confine the server (``process.sandbox``); ``None`` runs it unconfined.
        clean: applied to every stderr line before it is logged or kept.

    Raises:
        OSError: the command could not be started (``FileNotFoundError`` when it does not exist,
            ``PermissionError`` when it is not executable).
        SandboxUnavailable: ``sandbox`` cannot confine the server.
    """

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        env: Mapping[str, str],
        cwd: str | None,
        sandbox: Sandbox | None = None,
        clean: Callable[[str], str] = str,
    ) -> None:
        """Start the process (see the class docstring)."""
        self.name = name
        self.clean = clean
        self._cleanup = contextlib.ExitStack()
        environ, confine = dict(env), None
        pass_fds: tuple[int, ...] = ()
        try:
            if sandbox is not None:
                confinement = self._cleanup.enter_context(sandbox.confinement(environ))
                environ.update(confinement.env)
                confine, pass_fds = confinement.spec, confinement.pass_fds
            self.popen = start_child(
                argv,
                cwd,
                env=environ,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                confine=confine,
                pass_fds=pass_fds,
            )
        except BaseException:
            self._cleanup.close()
            raise
        self.pgid = self.popen.pid
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
                line = self.clean(raw.decode("utf-8", "replace").rstrip())
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
        """Stop the server and its process group (order: module docstring). Never raises
        (``KeyboardInterrupt`` aside); idempotent. Returns once the group is gone or SIGKILLed
        and the server reaped."""
        for pipe in (self.popen.stdin,):
            if pipe is not None:
                with contextlib.suppress(OSError, ValueError):
                    pipe.close()
        if exit_grace > 0:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.popen.wait(timeout=exit_grace)
        stop_child(self.popen, grace=kill_grace)
        if self.popen.stdout is not None:
            with contextlib.suppress(OSError, ValueError):
                self.popen.stdout.close()
        self.wait_stderr(0.2)
        self._cleanup.close()  # the sandbox's temporary folder
