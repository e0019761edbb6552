"""The stdio transport: newline-delimited JSON-RPC over a child's stdin and stdout.

MCP spec 2025-11-25, "Transports / stdio": each message is one line of UTF-8 JSON; the server
may write logs to stderr (logged here, see ``_process``) but nothing else to stdout.

Invariants:

- All reading and writing happens in the caller's thread: both pipes are non-blocking and one
  pump waits in ``select`` on both at once for at most ``POLL_SECONDS`` at a time, checking the
  cancel event and the deadline between waits. Every write, also a reply to the server's own
  request, goes through the pump: it has the deadline and the cancel of the request it belongs
  to, so a server that stops reading never blocks the caller past them.
- Reading goes on while writing (up to ``max_message_bytes`` ahead), so a server that writes
  before it reads (a flood of its own requests) does not deadlock with a client that writes.
  Replies wait in an outbox; while it holds more than ``OUTBOX_BYTES`` nothing more is read.
- A line that is not a JSON object or array (a server that prints a banner or debug output to
  stdout) is logged as a warning and skipped; the request keeps waiting for its response. A
  line nested deeper than ``miniagent._json`` decodes (its depth-safe ``loads``) is a protocol
  error of the request when it is that request's response (told by ``_wire.outline`` without
  decoding what is nested; the stream stays usable), and skipped like any other line when not.
- A line longer than ``max_message_bytes`` (``_wire.MAX_MESSAGE_BYTES``) is a protocol error,
  raised once that many bytes are buffered without a newline (never decoded): the server is
  stopped, the next call starts it again. Reading ahead stops at that many bytes too, so the
  buffer holds at most ``max_message_bytes`` and one read. A line is decoded from the buffer
  without a copy of its bytes.
- A message cut off while it was written (cancel, timeout or Ctrl-C with the pipe full) leaves
  the stream broken: ``alive()`` turns false and the next call starts the server again.
  Messages not begun when a request stops waiting are dropped.
- When stdout ends, stdin breaks, or the server exited and nothing is left to read (a child it
  started may still hold stdout open), the server is finished: its group is stopped, the error
  names its exit status and its last stderr lines; ``alive()`` is false from then on.
- ``poll`` handles what arrived while no request waited (``tools/list_changed`` sent while idle
  is seen by the next listing).
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import select
import signal
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .._json import JSONDepthError, loads
from .._log import Logger
from ..errors import SandboxUnavailable
from ._errors import MCPError
from ._process import ServerProcess
from ._wire import (
    MAX_MESSAGE_BYTES,
    Deadline,
    Handler,
    Interrupted,
    Message,
    encode,
    is_response,
    outline,
    too_large,
)

if TYPE_CHECKING:
    import threading

    from ..process.sandbox import Sandbox

__all__ = [
    "StdioTransport",
    "MAX_MESSAGE_BYTES",
    "NOTIFY_SECONDS",
    "OUTBOX_BYTES",
    "POLL_SECONDS",
]

OUTBOX_BYTES = 4 * 1024 * 1024
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
        clean: makes a text of the server's safe to log (secrets hidden, escapes visible).

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
        clean: Callable[[str], str] = str,
    ) -> None:
        """Start the server process."""
        self.name = name
        self.max_message_bytes = max_message_bytes
        self.clean = clean
        try:
            self.process = ServerProcess(name, argv, env, cwd, sandbox, clean)
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
        self._outbox: collections.deque[bytes] = collections.deque()
        self._outbox_bytes = 0
        self._offset = 0  # bytes of _outbox[0] already written
        self._failure: str | None = None

    # --- Transport ------------------------------------------------------------------------------

    def request(
        self,
        message: Message,
        handler: Handler,
        cancel: threading.Event | None,
        deadline: Deadline,
    ) -> Message:
        """Write ``message`` and read until its response arrives (``_wire.Transport``)."""
        self._check_usable()
        self._queue(message)
        wanted = message["id"]
        try:
            self._write_some()  # most messages fit the pipe at once: no wait before the read
            while True:
                value = self._next_value(wanted)
                if value is None:
                    self._pump(cancel, deadline)
                    continue
                response = self._dispatch(value, handler, wanted)
                if response is not None:
                    return response
        except Interrupted:
            self._abandon()
            raise

    def notify(self, message: Message) -> None:
        """Write a notification; a dead server or a pipe still full after ``NOTIFY_SECONDS`` (a
        server that stopped reading) is logged, never raised."""
        if self._failure is not None:
            return
        try:
            self._queue(message)
            self._flush(None, Deadline(NOTIFY_SECONDS))
        except Interrupted as exc:
            self._abandon()
            logger.debug("[%s] notification %s not sent: %s", self.name, message.get("method"), exc)
        except MCPError as exc:
            logger.debug("[%s] notification %s not sent: %s", self.name, message.get("method"), exc)

    def poll(self, handler: Handler) -> None:
        """Handle every message already sent (no waiting); replies get ``NOTIFY_SECONDS``."""
        if self._failure is not None:
            return
        try:
            self._pump(None, Deadline(NOTIFY_SECONDS), wait=0.0)
            while (value := self._next_value()) is not None:
                self._dispatch(value, handler, None)
            self._flush(None, Deadline(NOTIFY_SECONDS))
        except Interrupted:
            self._abandon()
        except MCPError as exc:  # the next request reports it
            logger.debug("[%s] %s", self.name, exc)

    def listen(self, handler: Handler) -> None:
        """Nothing to do: stdout is read by every request and ``poll``."""

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

    # --- messages -------------------------------------------------------------------------------

    def _queue(self, message: Message) -> None:
        data = encode(message) + b"\n"
        self._outbox.append(data)
        self._outbox_bytes += len(data)

    def _dispatch(self, value: Any, handler: Handler, wanted: Any) -> Message | None:
        """Hand every message but the awaited response to ``handler`` (replies are queued)."""
        response: Message | None = None
        for item in value if isinstance(value, list) else (value,):
            if not isinstance(item, dict):
                self._garbage(json.dumps(item)[: _GARBAGE_SHOWN_CHARS + 1])
            elif is_response(item):
                if wanted is not None and item.get("id") == wanted:
                    response = item
                else:
                    logger.debug("[%s] dropped a response to id %r", self.name, item.get("id"))
            else:
                reply = handler(item)
                if reply is not None:
                    self._queue(reply)
        return response

    def _abandon(self) -> None:
        """A request stopped waiting: a half-written message breaks the stream; whole unsent
        ones are dropped."""
        if self._offset > 0:
            self._failure = "a message was cut off while it was written"
        self._outbox.clear()
        self._outbox_bytes = 0
        self._offset = 0

    # --- the pump -------------------------------------------------------------------------------

    def _flush(self, cancel: threading.Event | None, deadline: Deadline) -> None:
        while self._outbox:
            self._pump(cancel, deadline)

    def _pump(self, cancel: threading.Event | None, deadline: Deadline, wait: float = POLL_SECONDS) -> None:
        """One wait of at most ``wait`` seconds: write what stdin takes, read what stdout has.

        Raises:
            Interrupted: cancelled or past the deadline (checked before the wait).
            MCPError: the server finished or wrote an over-long line.
        """
        self._check_usable()
        if cancel is not None and cancel.is_set():
            raise Interrupted("cancelled")
        left = deadline.left()
        timeout = wait if left is None else min(wait, left)
        reading = len(self._buffer) <= self.max_message_bytes and self._outbox_bytes <= OUTBOX_BYTES
        readers = (self._out,) if reading else ()
        writers = (self._in,) if self._outbox else ()
        try:
            readable, writable, _ = select.select(readers, writers, (), timeout)
        except (OSError, ValueError):
            raise self._ended("closed its pipes") from None
        if writable:
            self._write_some()
        if readable:
            chunk = self._read()
            if chunk == b"":
                raise self._ended("closed its stdout")
            if chunk:
                self._buffer += chunk
        elif not writable and self.process.popen.poll() is not None:
            # Exited, and a child it left may hold stdout open: take what it wrote last, then
            # stop waiting for an end of file that may never come.
            chunk = self._read()
            if not chunk and self._next_line_end() < 0:
                raise self._ended("exited")
            self._buffer += chunk or b""

    def _write_some(self) -> None:
        while self._outbox:
            head = self._outbox[0]
            try:
                written = os.write(self._in, memoryview(head)[self._offset :])
            except BlockingIOError:
                return
            except (BrokenPipeError, ValueError, OSError):
                raise self._ended("stopped reading its stdin") from None
            self._offset += written
            if self._offset < len(head):
                return
            self._outbox.popleft()
            self._outbox_bytes -= len(head)
            self._offset = 0

    def _read(self) -> bytes | None:
        """What stdout holds now (``b""`` at its end), or ``None`` when nothing is there yet."""
        try:
            return os.read(self._out, _READ_SIZE)
        except BlockingIOError:
            return None
        except (OSError, ValueError):
            return b""

    # --- reading --------------------------------------------------------------------------------

    def _next_line_end(self) -> int:
        """Where the buffer's first whole line ends (``-1``: none yet).

        Raises:
            MCPError: kind ``protocol``: the line is longer than ``max_message_bytes`` (the
                server was stopped).
        """
        end = self._buffer.find(b"\n", self._scanned)
        if end > self.max_message_bytes or (end < 0 and len(self._buffer) > self.max_message_bytes):
            self._failure = "it wrote a line longer than max_message_bytes"
            self.process.stop(exit_grace=0)
            raise too_large(self.name, self.max_message_bytes, "a line", "it was stopped")
        if end < 0:
            self._scanned = len(self._buffer)
        return end

    def _next_value(self, wanted: Any = None) -> Any:
        """The next JSON object or array already read, or ``None``; other lines are logged and
        skipped.

        Raises:
            MCPError: kind ``protocol``: the response to ``wanted`` is nested too deeply to read.
        """
        while (end := self._next_line_end()) >= 0:
            with memoryview(self._buffer) as view:
                text = str(view[:end], "utf-8", "replace").strip()  # no copy of the bytes first
            del self._buffer[: end + 1]
            self._scanned = 0
            if not text:
                continue
            try:
                value = loads(text)  # depth-safe (miniagent._json)
            except JSONDepthError:
                if wanted is not None and self._answers(text, wanted):
                    raise MCPError(
                        f"MCP server {self.name!r} sent a message nested too deeply to read",
                        server=self.name,
                        kind="protocol",
                    ) from None
                self._garbage(text)
                continue
            except ValueError:
                self._garbage(text)
                continue
            if isinstance(value, (dict, list)):
                return value
            self._garbage(text)
        return None

    @staticmethod
    def _answers(text: str, wanted: Any) -> bool:
        """Whether ``text``, too deep to decode, is the response to request ``wanted``."""
        members = outline(text)
        return members is not None and is_response(members) and members.get("id") == wanted

    def _garbage(self, text: str) -> None:
        shown = text if len(text) <= _GARBAGE_SHOWN_CHARS else text[:_GARBAGE_SHOWN_CHARS] + "…"
        logger.warning("[%s] ignored a line on stdout that is not JSON-RPC: %s", self.name, self.clean(shown))

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
