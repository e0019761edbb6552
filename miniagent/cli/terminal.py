"""Terminal pieces of the CLI: the spinner, terminal detection and the one-line forms of tool
calls and results.

- Everything printed from the model or a file on one line passes through ``clip``: control
  characters (escape sequences a file or the model could inject into the terminal) are shown as
  ``?``.
- The spinner draws from a daemon thread under a lock; every writer calls ``hide()`` first, so a
  frame never mixes with text. ``cancelling()`` is safe in a signal handler (no lock).
"""

from __future__ import annotations

import contextlib
import threading
import unicodedata
from typing import IO

from ..approval import describe_call, visible
from ..messages import Message, ToolCall

__all__ = ["Spinner", "call_line", "clip", "is_terminal", "neutralise", "one_line", "result_line"]

LINE_CHARS = 100


def clip(text: str, limit: int = LINE_CHARS) -> str:
    """One printable line: whitespace runs collapsed, control characters (escape sequences a
    file or the model could inject into the terminal) shown as ``?``, at most ``limit`` chars."""
    text = "".join(c if c.isprintable() else "?" for c in " ".join(text.split()))
    return text if len(text) <= limit else text[: limit - 3] + "..."


def neutralise(text: str) -> str:
    """``text`` for a terminal: control characters other than newline and tab (ESC of escape
    sequences such as OSC 52 clipboard writes, title changes, clear-screen; carriage return, C1
    controls) are written as visible escapes (``\\x1b``), so the terminal executes none of them."""
    if text.isprintable():
        return text
    return "".join(c if c in "\n\t" or unicodedata.category(c) != "Cc" else visible(c) for c in text)


def one_line(text: str) -> str:
    """``text`` as one line for a terminal: whitespace runs collapsed, ``visible`` escapes."""
    return visible(" ".join(text.split()))


def call_line(call: ToolCall) -> str:
    """``-> name(key=value, ...)``: the same compact form the approval prompt shows."""
    return f"-> {describe_call(call)}"


def result_line(name: str, message: Message) -> str:
    """``<- name ok|error (N chars): first line``: a tool result in one line (``clip``-ped)."""
    first = next((line for line in message.content.splitlines() if line.strip()), "")
    status = "error" if message.is_error else "ok"
    return f"<- {name} {status} ({len(message.content)} chars): {clip(first)}"


def is_terminal(stream: IO[str]) -> bool:
    """Whether ``stream`` is a terminal (``False`` for a closed or replaced stream)."""
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class Spinner:
    """A status line on stderr, redrawn by a daemon thread every 100 ms while a label is set.

    Every writer to the terminal (stdout or stderr) calls ``hide()`` first; ``hide`` clears the
    line under the same lock the thread draws with, so text never mixes with a frame.
    """

    def __init__(self, stream: IO[str], enabled: bool) -> None:
        self.stream = stream
        self.enabled = enabled
        self.lock = threading.Lock()
        self.label: str | None = None
        self._shown = False
        self._closed = threading.Event()
        self._thread: threading.Thread | None = None
        encoding = (getattr(stream, "encoding", None) or "").lower()
        self._frames = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏" if encoding.startswith("utf") else "|/-\\"

    def show(self, label: str) -> None:
        """Draw ``label`` after a frame until ``hide`` (starts the drawing thread once)."""
        if not self.enabled:
            return
        self.label = one_line(label)  # e.g. a tool's name: never an escape sequence
        if self._thread is None:
            self._thread = threading.Thread(target=self._draw, name="miniagent-spinner", daemon=True)
            self._thread.start()

    def hide(self) -> None:
        """Clear the line and stop drawing until the next ``show``."""
        if not self.enabled:
            return
        with self.lock:
            self.label = None
            self._clear()

    def cancelling(self) -> None:
        """Show ``cancelling...`` from a signal handler (sets the label only: no lock taken)."""
        if self.enabled:
            self.label = "cancelling..."

    def close(self) -> None:
        """Clear the line and stop the drawing thread."""
        self.hide()
        self._closed.set()
        if self._thread is not None:
            self._thread.join(timeout=1)

    def _clear(self) -> None:
        if self._shown:
            with contextlib.suppress(OSError, ValueError):
                self.stream.write("\r\x1b[K")
                self.stream.flush()
            self._shown = False

    def _draw(self) -> None:
        frame = 0
        while not self._closed.is_set():
            with self.lock:
                label = self.label
                if label is not None:
                    with contextlib.suppress(OSError, ValueError):
                        self.stream.write(f"\r\x1b[K{self._frames[frame % len(self._frames)]} {label}")
                        self.stream.flush()
                    self._shown = True
            frame += 1
            self._closed.wait(0.1)
