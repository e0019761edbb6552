"""The stdio transport: newline-delimited JSON-RPC over a child's stdin and stdout.

MCP spec 2025-11-25, "Transports / stdio": each message is one line of UTF-8 JSON; the server
may write logs to stderr (logged here, see ``_process``) but nothing else to stdout.

Invariants:

- All reading and writing happens in the caller's thread: both pipes are non-blocking and the
  thread waits in ``select`` for at most ``POLL_SECONDS`` at a time, checking the cancel event
  and the deadline between waits, so a cancel is seen within about 20 ms and a response is read
  as soon as it arrives.
- A line that is not a JSON object or array (a server that prints a banner or debug output to
  stdout) is logged as a warning and skipped; the request keeps waiting for its response.
- A line longer than ``max_message_bytes`` (``_wire.MAX_MESSAGE_BYTES``) is a protocol error,
  raised once that many bytes are buffered without a newline (never decoded): the server is
  stopped, the next call starts it again. A line is decoded from the buffer without a copy of
  its bytes. A message cut off while it was written (cancel, timeout or Ctrl-C with the pipe
  full) leaves the stream broken: ``alive()`` turns false and the next call starts the server
  again.
- When stdout ends, stdin breaks, or the server exited and nothing is left to read (a child it
  started may still hold stdout open), the server is finished: its group is stopped, the error
  names its exit status and its last stderr lines; ``alive()`` is false from then on.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .._json import loads
from .._log import Logger
from ..errors import SandboxUnavailable
from ._errors import MCPError
from ._process import ServerProcess
from ._wire import MAX_MESSAGE_BYTES, Handler, Interrupted, Message, encode, is_response, too_large

if TYPE_CHECKING:
    import threading

    from ..process.sandbox import Sandbox

__all__ = ["StdioTransport", "MAX_MESSAGE_BYTES", "NOTIFY_SECONDS", "POLL_SECONDS"]

POLL_SECONDS = 0.02
NOTIFY_SECONDS = 0.1
_READ_SIZE = 256 * 1024
_GARBAGE_SHOWN_CHARS = 200

logger = Logger("miniagent.mcp")


class StdioTransport:
    """A started server process spoken to over its stdin/stdout (see the module docstring).

    Args:
        name: the server's name (in errors and log lines).
        argv: command and arguments.
        env: the child's whole environment.
        cwd: its working folder or ``None``.
        max_message_bytes: the longest line read from its stdout (bytes, without the newline).
        sandbox: confine the server process (``process.sandbox``), or ``None``.

    Raises:
        MCPError: kind ``start`` when the command cannot be run (not found, not executable, or
            ``sandbox`` cannot confine it).
    """

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        env: Mapping[str, str],
        cwd: str | None,
        max_message_bytes: int = MAX_MESSAGE_BYTES,
        sandbox: Sandbox | None = None,
    ) -> None:
        """Start the server process."""
        self.name = name
        self.max_message_bytes = max_message_bytes
        try:
            self.process = ServerProcess(name, argv, env, cwd, sandbox)
        except FileNotFoundError as exc:
            missing = exc.filename if exc.filename is not None else argv[0]
            if cwd is not None and not os.path.isdir(cwd):
                missing = cwd
            raise MCPError(
                f"MCP server {name!r} cannot start: {missing} not found", server=name, kind="start"
            ) from None
        except OSError as exc:
            raise MCPError(
                f"MCP server {name!r} cannot start {argv[0]}: {exc.strerror or exc}",
                server=name,
                kind="start",
            ) from None
        except SandboxUnavailable as exc:  # the sandbox was made, but not this server's confinement
            text = f"MCP server {name!r} cannot start confined: {exc}"
            raise MCPError(text, server=name, kind="start") from None
        popen = self.process.popen
        assert popen.stdin is not None and popen.stdout is not None
        self._in = popen.stdin.fileno()
        self._out = popen.stdout.fileno()
        os.set_blocking(self._in, False)
        os.set_blocking(self._out, False)
        self._buffer = bytearray()
        self._scanned = 0  # bytes of _buffer known to hold no newline
        self._failure: str | None = None

    # --- Transport ------------------------------------------------------------------------------

    def request(
        self,
        message: Message,
        handler: Handler,
        cancel: threading.Event | None,
        deadline: float | None,
    ) -> Message:
        """Write ``message`` and read until its response arrives (``_wire.Transport``)."""
        self._write(encode(message) + b"\n", cancel, deadline)
        wanted = message["id"]
        while True:
            value = self._next_value(cancel, deadline)
            response: Message | None = None
            for item in value if isinstance(value, list) else (value,):
                if not isinstance(item, dict):
                    self._garbage(json.dumps(item))
                elif is_response(item):
                    if item.get("id") == wanted:
                        response = item
                    else:
                        logger.debug("[%s] dropped a response to id %r", self.name, item.get("id"))
                else:
                    reply = handler(item)
                    if reply is not None:
                        self._write(encode(reply) + b"\n", None, None)
            if response is not None:
                return response

    def notify(self, message: Message) -> None:
        """Write a notification; a dead server or a pipe still full after ``NOTIFY_SECONDS`` (a
        server that stopped reading) is logged, never raised."""
        if self._failure is not None:
            return
        try:
            self._write(encode(message) + b"\n", None, time.monotonic() + NOTIFY_SECONDS)
        except (MCPError, Interrupted) as exc:
            logger.debug("[%s] notification %s not sent: %s", self.name, message.get("method"), exc)

    def set_protocol_version(self, version: str) -> None:
        """Nothing to do: stdio carries no headers."""

    def alive(self) -> bool:
        """Whether the server runs and has not broken the protocol."""
        return self._failure is None and self.process.alive()

    def diagnostics(self) -> str:
        """`` (stderr: LAST LINES)`` when the server wrote to stderr, else ``""``."""
        tail = self.process.stderr_tail()
        return f" (stderr: {tail})" if tail else ""

    def close(self) -> None:
        """Stop the server and its process group (``ServerProcess.stop``)."""
        if self._failure is None:
            self._failure = "closed"
        self.process.stop()

    # --- writing --------------------------------------------------------------------------------

    def _write(self, data: bytes, cancel: threading.Event | None, deadline: float | None) -> None:
        self._check_usable()
        view = memoryview(data)
        try:
            while view:
                try:
                    written = os.write(self._in, view)
                except BlockingIOError:
                    self._wait(self._in, for_write=True, cancel=cancel, deadline=deadline)
                    continue
                except (BrokenPipeError, ValueError, OSError):
                    raise self._ended("stopped reading its stdin") from None
                view = view[written:]
        except BaseException:
            if 0 < len(view) < len(data):  # half a line was sent: the stream is broken
                self._failure = "a message was cut off while it was written"
            raise

    # --- reading --------------------------------------------------------------------------------

    def _next_value(self, cancel: threading.Event | None, deadline: float | None) -> Any:
        """The next JSON object or array on stdout; other lines are logged and skipped."""
        while True:
            text = self._next_line(cancel, deadline).strip()
            if not text:
                continue
            try:
                value = loads(text)  # depth-safe (miniagent._json)
            except ValueError:
                self._garbage(text)
                continue
            if isinstance(value, (dict, list)):
                return value
            self._garbage(text)

    def _next_line(self, cancel: threading.Event | None, deadline: float | None) -> str:
        """The next line of stdout, decoded (bad UTF-8 as U+FFFD), without its newline."""
        while True:
            end = self._buffer.find(b"\n", self._scanned)
            if end > self.max_message_bytes or (end < 0 and len(self._buffer) > self.max_message_bytes):
                self._failure = "it wrote a line longer than max_message_bytes"
                self.process.stop(exit_grace=0)
                raise too_large(self.name, self.max_message_bytes, "a line", "it was stopped")
            if end >= 0:
                with memoryview(self._buffer) as view:
                    line = str(view[:end], "utf-8", "replace")  # no copy of the bytes first
                del self._buffer[: end + 1]
                self._scanned = 0
                return line
            self._scanned = len(self._buffer)
            self._check_usable()
            if self._wait(self._out, for_write=False, cancel=cancel, deadline=deadline):
                chunk = self._read()
                if chunk is None:  # readiness without data: wait again
                    continue
            elif self.process.popen.poll() is not None:
                # Exited, and a child it left may hold stdout open: take what it wrote last, then
                # stop waiting for an end of file that may never come.
                chunk = self._read()
                if chunk is None:
                    raise self._ended("exited")
            else:
                continue
            if not chunk:
                raise self._ended("closed its stdout")
            self._buffer += chunk

    def _read(self) -> bytes | None:
        """What stdout holds now (``b""`` at its end), or ``None`` when nothing is there yet."""
        try:
            return os.read(self._out, _READ_SIZE)
        except BlockingIOError:
            return None
        except (OSError, ValueError):
            return b""

    def _wait(
        self, fd: int, *, for_write: bool, cancel: threading.Event | None, deadline: float | None
    ) -> bool:
        """Wait until ``fd`` is ready, at most ``POLL_SECONDS``; ``True`` when it is. Raises
        ``Interrupted`` when cancelled or past the deadline."""
        if cancel is not None and cancel.is_set():
            raise Interrupted("cancelled")
        timeout = POLL_SECONDS
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Interrupted("timeout")
            timeout = min(timeout, left)
        try:
            if for_write:
                return bool(select.select((), (fd,), (), timeout)[1])
            return bool(select.select((fd,), (), (), timeout)[0])
        except (OSError, ValueError):
            raise self._ended("closed its pipes") from None

    def _garbage(self, text: str) -> None:
        shown = text if len(text) <= _GARBAGE_SHOWN_CHARS else text[:_GARBAGE_SHOWN_CHARS] + "…"
        logger.warning("[%s] ignored a line on stdout that is not JSON-RPC: %s", self.name, shown)

    # --- failure --------------------------------------------------------------------------------

    def _check_usable(self) -> None:
        if self._failure is not None:
            raise MCPError(
                f"MCP server {self.name!r} is not running ({self._failure})",
                server=self.name,
                kind="closed",
            )

    def _ended(self, what: str) -> MCPError:
        """The server finished: an error naming how it exited and its last stderr lines."""
        popen = self.process.popen
        with contextlib.suppress(Exception):
            popen.wait(timeout=0.5)
        code = popen.poll()
        self.process.stop(exit_grace=0)  # also what it left running in its group
        if code is None:
            status = f"{what} (still running; it was stopped)"
        elif code < 0:
            try:
                status = f"was killed by {signal.Signals(-code).name}"
            except ValueError:
                status = f"was killed by signal {-code}"
        else:
            status = f"exited with code {code}"
        self.process.wait_stderr(0.2)
        self._failure = status
        return MCPError(
            f"MCP server {self.name!r} {status}{self.diagnostics()}", server=self.name, kind="closed"
        )
