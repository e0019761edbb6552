"""What the CLI prints: one ``Display`` per output mode, chosen once by ``choose_display``.

Modes:

- ``JsonDisplay`` (``--json``): stdout holds one JSON object per line and nothing else: each
  committed message (``message_to_json``; a compaction's summary is the user message with
  ``"summary_kept"``), then ``{"stop_reason": ..., "exit_code": ...}`` after
  each run (with ``"error"`` when a runtime error ended it; with ``"usage"`` (``Usage.to_json``,
  its ``cost_usd`` included) when the provider reported usage for a request:
  ``unreported_requests`` says how many came without; with ``"pending"``, the calls that wait
  for a decision as ``{"id", "name", "input"}``, when the run stopped ``deferred``). Notes on
  stderr are not printed; notes about calls in the record (``"state"``) are messages like others.
- ``OutputDisplay`` (``run --output-schema FILE``): stdout holds only the valid answer
  (``RunResult.output``, which the loop checked) as one JSON line; with no valid answer, the last
  validation error goes to stderr.
- ``TerminalDisplay`` (stdout is a terminal): the assistant's text is streamed as it arrives,
  with escape sequences neutralised (``--json`` and piped output stay exact).
- ``PlainDisplay`` (stdout is a pipe or file): ``chat`` prints each committed non-empty assistant
  message; ``run`` prints the last assistant text of the run at the end.

A write to stdout that fails (a closed pipe, a full disk, a closed descriptor) never raises into
the loop: the display records it in ``output_error``, points stdout at ``/dev/null`` (so nothing
fails again at exit) and calls ``on_output_error``, which the runner uses to cancel the run, so the
session stays valid; the command then exits quietly (closed pipe: ``EXIT_SIGPIPE``, as ``SIGPIPE``
would) or with one error line (``EXIT_ERROR``): ``report.settle``.

In every mode stdout carries only the conversation; progress (the spinner), notes, the tool lines
of ``run`` and errors go to stderr. ``chat`` prints its tool lines on stdout (they are part of the
conversation) except with ``--json``. ``choose_display`` is the only code that reads the options
of the output mode (``--json``): adding a mode is a class here and its option in ``options``.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any

from .._text import replace_surrogates
from ..agent import RunResult
from ..messages import Message, Summary, ToolCall, call_to_json, json_text, message_to_json
from ..model import ModelEvent, TextEvent
from ..output import OutputSchema
from ..usage import Usage
from .terminal import Spinner, call_line, is_terminal, neutralise, one_line, result_line

if TYPE_CHECKING:
    from .options import Options

__all__ = ["Display", "JsonDisplay", "OutputDisplay", "PlainDisplay", "TerminalDisplay", "choose_display"]


class Display:
    """The interface between a run and the screen; the base prints notes and errors on stderr.

    Per run: ``begin_run``, then ``on_event`` / ``on_message`` (the loop's callbacks), then
    ``finish_run`` with the ``RunResult`` or ``error``; ``progress``/``idle`` around slow steps;
    ``note`` for information a script does not need, ``status`` for what every mode shows on stderr.

    Args:
        spinner: the status line on stderr (disabled when stderr is not a terminal).
        chat: the output of ``chat`` (tool lines on stdout) rather than ``run``.
        out, err: the streams (default ``sys.stdout`` / ``sys.stderr``).
    """

    def __init__(
        self, spinner: Spinner, *, chat: bool, out: IO[str] | None = None, err: IO[str] | None = None
    ):
        self.spinner = spinner
        self.chat = chat
        self.out: IO[str] | None = sys.stdout if out is None else out
        self.err = sys.stderr if err is None else err
        self.run_messages: list[Message] = []
        self.output_error: BaseException | None = None  # the first failed write to stdout
        if self.out is None:  # the process started with its stdout closed: nothing can be shown
            self.output_error = OSError("standard output is closed")
        self.on_output_error: Callable[[], None] | None = None
        self._at_line_start = True

    # --- around a run ---------------------------------------------------------------------

    def begin_run(self) -> None:
        """A new run starts: forget the previous run's messages."""
        self.run_messages = []

    def on_event(self, event: ModelEvent) -> None:
        """The loop's ``on_event``: a streamed (tentative) event."""

    def on_message(self, message: Message) -> None:
        """The loop's ``on_message``: a committed message."""
        self.run_messages.append(message)

    def restored(self, messages: list[Message]) -> None:
        """The messages of a resumed session (shown nowhere; a result that closes one of their
        calls, e.g. a dangling call, is shown with the call's tool name)."""

    def tool_call(self, call: ToolCall) -> None:
        """A call is about to be approved and run (not called for calls a person is asked
        about: the approval prompt shows those in full)."""

    def finish_run(self, result: RunResult | None, exit_code: int) -> None:
        """The run ended with ``result`` (``None``: it has none, an error ended it) and the CLI
        will exit (or go on) with ``exit_code``."""
        self.spinner.hide()
        if not self._at_line_start:
            self.write_out("\n")

    def report_usage(self, usage: Usage | None) -> None:
        """On a terminal, one short line on stderr with a run's tokens, cached share and cost
        (when known); nothing when the provider reported no usage or stderr is not a terminal."""
        line = usage_line(usage)
        if line and is_terminal(self.err):
            self.note(line)

    def error(self, text: str, exit_code: int = 1) -> None:
        """A runtime error ended the run (the CLI exits ``exit_code``): one line
        ``miniagent: error: TEXT`` on stderr."""
        self.spinner.hide()
        self.err.write(f"miniagent: error: {one_line(text)}\n")
        self.err.flush()

    # --- progress and notes ---------------------------------------------------------------

    def progress(self, label: str) -> None:
        """Show ``label`` on the status line (a terminal's stderr only) until ``idle``."""
        self.spinner.show(label)

    def idle(self) -> None:
        """Clear the status line."""
        self.spinner.hide()

    def cancelling(self) -> None:
        """A signal asked to cancel (called from the signal handler: takes no lock)."""
        self.spinner.cancelling()

    def note(self, text: str) -> None:
        """One line of information on stderr (not shown with ``--json``)."""
        self.status(text)

    def status(self, text: str) -> None:
        """One line (or block) on stderr that every mode shows, e.g. the session path."""
        self.spinner.hide()
        if not self._at_line_start and self._out_is_terminal() and is_terminal(self.err):
            self.write_out("\n")
        text = neutralise(text)  # it may quote a file name, a server, the model
        self.err.write(text if text.endswith("\n") else text + "\n")
        self.err.flush()

    def close(self) -> None:
        """Stop the spinner."""
        self.spinner.close()

    # --- helpers --------------------------------------------------------------------------

    def write_out(self, text: str) -> None:
        """Write ``text`` on stdout now (after clearing the status line); never raises (see the
        module docstring for what a failed write does)."""
        if self.output_error is not None:
            return
        self.spinner.hide()
        try:
            assert self.out is not None  # else output_error was set at the start
            try:
                self.out.write(text)
            except UnicodeEncodeError:  # a lone surrogate, or a character stdout cannot encode
                self.out.write(_encodable(text, self.out))
            self.out.flush()
        except (OSError, ValueError) as error:
            self._output_failed(error)
            return
        if text:
            self._at_line_start = text.endswith("\n")

    def _output_failed(self, error: BaseException) -> None:
        self.output_error = error
        with contextlib.suppress(OSError, ValueError, AttributeError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())  # what is still buffered goes nowhere at exit
            os.close(devnull)
        if self.on_output_error is not None:
            self.on_output_error()

    def _out_is_terminal(self) -> bool:
        return self.out is not None and is_terminal(self.out)

    def last_answer(self) -> str:
        """The last non-empty assistant text committed in this run ("" when none)."""
        for message in reversed(self.run_messages):
            if message.role == "assistant" and message.content.strip():
                return message.content
        return ""


class JsonDisplay(Display):
    """``--json``: one JSON object per committed message and one result line per run, on stdout."""

    def on_message(self, message: Message) -> None:
        super().on_message(message)
        self.write_out(json_text(message_to_json(message)) + "\n")

    def finish_run(self, result: RunResult | None, exit_code: int) -> None:
        stop_reason = result.stop_reason if result is not None else None
        line: dict[str, Any] = {"stop_reason": stop_reason, "exit_code": exit_code}
        usage = result.usage if result is not None else None
        if usage is not None and usage.requests > usage.unreported_requests:  # some usage was reported
            line["usage"] = usage.to_json()
        if result is not None and result.pending:
            line["pending"] = [call_to_json(call) for call in result.pending]
        self._result_line(line)

    def error(self, text: str, exit_code: int = 1) -> None:
        super().error(text, exit_code)
        self._result_line({"stop_reason": None, "exit_code": exit_code, "error": text})

    def note(self, text: str) -> None:
        pass

    def _result_line(self, result: dict[str, Any]) -> None:
        self.write_out(json_text(result) + "\n")


class _TextDisplay(Display):
    """What the terminal and plain modes share: tool lines, the spinner between steps."""

    def __init__(
        self, spinner: Spinner, *, chat: bool, out: IO[str] | None = None, err: IO[str] | None = None
    ):
        super().__init__(spinner, chat=chat, out=out, err=err)
        self._names: dict[str, str] = {}

    def on_message(self, message: Message) -> None:
        super().on_message(message)
        if isinstance(message, Summary):
            self.note(compaction_note(message))
        if message.role == "user":
            self.spinner.show("thinking")
        elif message.role == "assistant":
            self.spinner.hide()
            self._show_answer(message)
            for call in message.tool_calls:
                self._names[call.id] = call.name
        elif message.state == "pending":  # a note: the run stops before this call
            name = self._names.get(message.tool_call_id or "", "?")
            self._tool_line(f"<- {name} waits for a decision")
        elif message.role == "tool" and message.state is None:
            name = self._names.get(message.tool_call_id or "", "?")
            self._tool_line(result_line(name, message))
            self.spinner.show("thinking")

    def restored(self, messages: list[Message]) -> None:
        for message in messages:
            for call in message.tool_calls:
                self._names[call.id] = call.name

    def tool_call(self, call: ToolCall) -> None:
        self._tool_line(call_line(call))

    def _show_answer(self, message: Message) -> None:
        """A committed assistant message (its text may already be on the screen)."""

    def _tool_line(self, line: str) -> None:
        if self.chat:
            self.write_out(line + "\n")
        else:
            self.note(line)


_HIGH_SURROGATES = ("\ud800", "\udbff")


class TerminalDisplay(_TextDisplay):
    """stdout is a terminal: the assistant's text is streamed as it arrives, its control
    characters (escape sequences) shown as visible escapes (``neutralise``)."""

    _streamed = False
    _held = ""  # a high surrogate at the end of a delta: its low half may come in the next one

    def begin_run(self) -> None:
        super().begin_run()
        self._streamed = False
        self._held = ""

    def on_event(self, event: ModelEvent) -> None:
        if isinstance(event, TextEvent) and event.text:
            self._streamed = True
            text, self._held = self._held + event.text, ""
            if _HIGH_SURROGATES[0] <= text[-1] <= _HIGH_SURROGATES[1]:
                text, self._held = text[:-1], text[-1]
            # a pair split across deltas is shown joined; a terminal must not run the model's escapes
            self.write_out(neutralise(text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")))

    def _show_answer(self, message: Message) -> None:
        if self._held:
            self.write_out(self._held)  # never completed: shown as U+FFFD
            self._held = ""
        if self._streamed and not self._at_line_start:
            self.write_out("\n")
        self._streamed = False


class PlainDisplay(_TextDisplay):
    """stdout is not a terminal: ``chat`` prints each committed answer, ``run`` the last one."""

    def _show_answer(self, message: Message) -> None:
        if self.chat and message.content.strip():
            self.write_out(message.content.rstrip("\n") + "\n")

    def finish_run(self, result: RunResult | None, exit_code: int) -> None:
        if not self.chat:
            answer = self.last_answer()
            if answer:
                self.write_out(answer.rstrip("\n") + "\n")
        super().finish_run(result, exit_code)


def _encodable(text: str, stream: IO[str]) -> str:
    """``text`` with surrogate pairs joined, lone surrogates as U+FFFD and what ``stream``'s
    encoding lacks as ``?``."""
    text = replace_surrogates(text.encode("utf-16", "surrogatepass").decode("utf-16", "replace"))
    encoding = getattr(stream, "encoding", None) or "utf-8"
    return text.encode(encoding, "replace").decode(encoding, "replace")


def compaction_note(summary: Summary) -> str:
    """The note for a compaction: ``miniagent: context compacted: ...`` (the summary's size and
    how many messages it keeps as they are)."""
    kept = summary.kept
    return (
        f"miniagent: context compacted: the earlier conversation is summarised in "
        f"{len(summary.content):,} characters, the newest {kept} message{'' if kept == 1 else 's'} "
        "kept as they are (the session keeps everything)"
    )


def usage_line(usage: Usage | None) -> str:
    """``miniagent: 1,234 tokens in (80% cached), 56 out, 2 requests, $0.0012`` for a ``Usage``
    (the cost only when known; requests without usage said so, never shown as zero tokens);
    ``""`` when there is none or no request was made."""
    if usage is None or not usage.requests:
        return ""
    requests = f"{usage.requests} request{'' if usage.requests == 1 else 's'}"
    unreported = getattr(usage, "unreported_requests", 0)
    if unreported == usage.requests:
        return f"miniagent: {requests}, usage not reported by the server"
    text = f"miniagent: {usage.input_tokens:,} tokens in"
    if usage.input_tokens and usage.cache_read_tokens:
        text += f" ({100 * usage.cache_read_tokens // usage.input_tokens}% cached)"
    text += f", {usage.output_tokens:,} out, {requests}"
    if unreported:
        text += f" ({unreported} without usage reported: at least these tokens)"
    if usage.cost_usd is not None:
        text += f", ${usage.cost_usd:.4f}"
    return text


class OutputDisplay(_TextDisplay):
    """``--output-schema``: stdout gets only the valid answer, as one JSON line, at the end of a
    ``complete`` run; the answer's text is not streamed. A run that ends without a valid answer
    (``max_turns``) tells the last validation error on stderr. Tool lines and notes go to stderr.
    """

    def __init__(self, spinner: Spinner, output: OutputSchema) -> None:
        super().__init__(spinner, chat=False)
        self.output = output

    def finish_run(self, result: RunResult | None, exit_code: int) -> None:
        super().finish_run(result, exit_code)
        if result is None:
            return
        if result.stop_reason == "complete":
            self.write_out(json_text(result.output) + "\n")  # the loop checked it
        elif result.stop_reason == "max_turns":
            self.status(f"miniagent: no valid answer within --max-turns: {self._last_problem()}")

    def _last_problem(self) -> str:
        """What is wrong with the run's last text as an answer: the loop's own check
        (``OutputSchema.parse``) on the text the run ended with, for a run without a valid one."""
        answer = self.last_answer()
        if not answer:
            return "the model gave no answer"
        return str(self.output.parse(answer)[1])


def choose_display(options: Options, *, chat: bool, output: OutputSchema | None = None) -> Display:
    """Pick the output mode: ``--output-schema``, ``--json``, else by whether stdout is a terminal.

    Args:
        options: the command's options (this reads ``json``).
        chat: for ``chat`` (else ``run``).
        output: ``--output-schema`` was given (``run`` only): an ``OutputDisplay``.

    Returns:
        An ``OutputDisplay``, ``JsonDisplay``, ``TerminalDisplay`` or ``PlainDisplay``; the spinner
        is on only when stderr is a terminal and not with ``--json``.
    """
    json = options.json
    spinner = Spinner(sys.stderr, enabled=is_terminal(sys.stderr) and not json)
    if output is not None:
        return OutputDisplay(spinner, output)
    if json:
        return JsonDisplay(spinner, chat=chat)
    if sys.stdout is not None and is_terminal(sys.stdout):
        return TerminalDisplay(spinner, chat=chat)
    return PlainDisplay(spinner, chat=chat)
