"""Terminal and JSON output of the CLI: the spinner and the display of a run's messages.

- stdout carries only the conversation (the answer, or JSON lines with ``--json``); progress,
  tool lines of ``run`` and notes go to stderr.
- Everything printed from the model or a file passes through ``clip``: control characters (escape
  sequences a file or the model could inject into the terminal) are shown as ``?``.
- The spinner draws from a daemon thread under a lock; every writer calls ``hide()`` first, so a
  frame never mixes with text.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from dataclasses import dataclass, field
from typing import IO, Any

from .agent import StopReason
from .approval import describe_call
from .messages import Message, ToolCall, json_text, message_to_json
from .model import ModelEvent, TextEvent

__all__ = ["Display", "Spinner", "call_line", "clip", "is_terminal", "result_line"]

LINE_CHARS = 100


def clip(text: str, limit: int = LINE_CHARS) -> str:
    """One printable line: whitespace runs collapsed, control characters (escape sequences a
    file or the model could inject into the terminal) shown as ``?``, at most ``limit`` chars."""
    text = "".join(c if c.isprintable() else "?" for c in " ".join(text.split()))
    return text if len(text) <= limit else text[: limit - 3] + "..."


def call_line(call: ToolCall) -> str:
    """``-> name(key=value, ...)``: the same compact form the approval prompt shows."""
    return f"-> {describe_call(call)}"


def result_line(name: str, message: Message) -> str:
    first = next((line for line in message.content.splitlines() if line.strip()), "")
    status = "error" if message.is_error else "ok"
    return f"<- {name} {status} ({len(message.content)} chars): {clip(first)}"


def is_terminal(stream: IO[str]) -> bool:
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
        if not self.enabled:
            return
        self.label = label
        if self._thread is None:
            self._thread = threading.Thread(target=self._draw, name="miniagent-spinner", daemon=True)
            self._thread.start()

    def hide(self) -> None:
        if not self.enabled:
            return
        with self.lock:
            self.label = None
            self._clear()

    def close(self) -> None:
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


@dataclass
class Display:
    """Turns the loop's callbacks into terminal or JSON output for one command.

    Modes: ``json`` (JSON lines only), ``stream`` (assistant text as it arrives), otherwise
    committed messages (``chat``) or the last answer at the end (``run``).
    """

    json: bool
    stream_text: bool
    print_messages: bool  # chat without a terminal: print each committed assistant text
    tool_lines_to_stdout: bool  # chat: tool lines are part of the conversation
    spinner: Spinner
    out: IO[str] = field(default_factory=lambda: sys.stdout)
    err: IO[str] = field(default_factory=lambda: sys.stderr)
    run_messages: list[Message] = field(default_factory=list)
    _names: dict[str, str] = field(default_factory=dict)
    _at_line_start: bool = True
    _streamed: bool = False

    def begin_run(self) -> None:
        self.run_messages = []
        self._streamed = False

    def write_out(self, text: str) -> None:
        self.spinner.hide()
        self.out.write(text)
        self.out.flush()
        if text:
            self._at_line_start = text.endswith("\n")

    def note(self, text: str) -> None:
        """One line of progress or information on stderr."""
        self.spinner.hide()
        if not self._at_line_start and is_terminal(self.out) and is_terminal(self.err):
            self.write_out("\n")
        self.err.write(text + "\n")
        self.err.flush()

    def on_event(self, event: ModelEvent) -> None:
        if self.stream_text and isinstance(event, TextEvent) and event.text:
            self._streamed = True
            self.write_out(event.text)

    def on_message(self, message: Message) -> None:
        self.run_messages.append(message)
        if self.json:
            self.write_out(json_text(message_to_json(message)) + "\n")
            return
        if message.role == "user":
            self.spinner.show("thinking")
        elif message.role == "assistant":
            self.spinner.hide()
            if self._streamed and not self._at_line_start:
                self.write_out("\n")
            elif self.print_messages and message.content.strip():
                self.write_out(message.content.rstrip("\n") + "\n")
            self._streamed = False
            for call in message.tool_calls:
                self._names[call.id] = call.name
                self._tool_line(call_line(call))
        elif message.role == "tool":
            name = self._names.get(message.tool_call_id or "", "?")
            self._tool_line(result_line(name, message))
            self.spinner.show("thinking")

    def _tool_line(self, line: str) -> None:
        if self.tool_lines_to_stdout:
            self.write_out(line + "\n")
        else:
            self.note(line)

    def last_answer(self) -> str:
        """The last non-empty assistant text committed in this run ("" when none)."""
        for message in reversed(self.run_messages):
            if message.role == "assistant" and message.content.strip():
                return message.content
        return ""

    def finish_run(self, stop_reason: StopReason | None, exit_code: int, error: str | None = None) -> None:
        self.spinner.hide()
        if self.json:
            result: dict[str, Any] = {"stop_reason": stop_reason, "exit_code": exit_code}
            if error is not None:
                result["error"] = error
            self.write_out(json_text(result) + "\n")
        elif not self._at_line_start:
            self.write_out("\n")
