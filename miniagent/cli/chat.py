"""``miniagent chat``: one run per line of input, on one session, until ``/exit`` or end of input.

- Without ``--session`` a new session file is created under ``session_folder()`` and its path is
  printed (stderr), so the conversation can be resumed.
- Ctrl-C during an answer cancels that answer (the run closes its calls) and returns to the
  prompt; Ctrl-C at the prompt leaves with ``EXIT_SIGINT``; SIGTERM leaves with ``EXIT_SIGTERM``.
- A runtime error is reported and, on a terminal, the chat goes on; without a terminal (a script
  feeding lines) it ends with ``EXIT_ERROR``. A session error always ends it (the file is left
  untouched).
- The exit code at the end of input is that of the last answered line (``EXIT_OK`` when none
  failed).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from ..errors import SessionError
from .checks import UsageProblem, check_options, valid_text
from .defaults import EXIT_ERROR, EXIT_OK, EXIT_SIGINT, EXIT_SIGTERM, default_session_path, session_folder
from .display import choose_display
from .logs import configure_logging
from .options import Options
from .report import Outcome, fail, output_lost, report_stop, settle
from .runner import Runner
from .session_log import record_session
from .signals import interrupt_exit_code, signal_name
from .terminal import is_terminal

__all__ = ["CHAT_HELP", "command_chat"]

CHAT_HELP = """miniagent chat: each line is one request to the model, on the same session.
  /exit or /quit (or Ctrl-D)  leave
  /help                       this text
  //...                       send a line that starts with / (one / is removed)
  Ctrl-C                      cancel the answer in progress (at the prompt: leave)
"""
_COMMAND = re.compile(r"/[A-Za-z][A-Za-z0-9_-]*")  # /word alone or before a space: a chat command


def command_chat(options: Options) -> Outcome:
    """Chat on ``options.session`` (a new one when not given) until the user leaves.

    Nothing costly happens before the first message: the client starts, and a new session file
    is created, only when there is something to send (empty input leaves at once).

    Returns:
        The exit code (see the module docstring) and whether a client thread must be abandoned.

    Raises:
        UsageProblem: a usage error (before anything started), e.g. ``--approve defer``.
    """
    configure_logging(options)
    check_options(options)
    if options.approve == "defer":  # a deferred line could only be deferred again by the next one
        raise UsageProblem("--approve defer is for miniagent run --session PATH; chat asks (--approve ask)")
    runner = Runner(options, choose_display(options, chat=True))
    with runner:
        code = _chat(runner)
    return runner.outcome(code)  # after the close: it may have abandoned a thread


def _chat(runner: Runner) -> int:
    interactive = sys.stdin is not None and is_terminal(sys.stdin)
    if output_lost(runner.display):  # stdout closed: nobody could read the answers
        return settle(runner.display, EXIT_ERROR)
    try:
        if runner.options.session is not None:
            _check_session(runner)
        if interactive:
            runner.display.note("miniagent: type a message; /exit or Ctrl-D to leave")
        return _conversation(runner, interactive)
    except KeyboardInterrupt as interrupt:  # Ctrl-C, SIGTERM, SIGHUP while the client was starting
        code = interrupt_exit_code(interrupt)
        runner.display.status(f"\nminiagent: aborted{signal_name(code)}")
        return code
    except UsageProblem:
        raise  # EXIT_USAGE, after the runner closed
    except Exception as error:
        return fail(runner.display, error, runner.options)


def _check_session(runner: Runner) -> None:
    """A corrupt or locked session fails now, before anything else."""
    restored = runner.open_session()
    if restored:
        runner.display.note(f"miniagent: resuming {len(restored)} messages")


def _start(runner: Runner) -> None:
    """Before the first message: create a new session file if none was given, start the client."""
    if runner.options.session is None:
        path = _new_session()
        runner.options.session = path
        runner.display.status(f"miniagent: session {path} (resume with --session {path})")
        runner.open_session()
    runner.open()


def _new_session() -> Path:
    """A new session file under ``session_folder()``.

    Raises:
        OSError: the folder cannot be created (the message says what to do).
    """
    try:
        return default_session_path()
    except OSError as error:
        raise OSError(
            f"cannot create a session in {session_folder()}: {error.strerror or error} "
            "(set XDG_STATE_HOME to a folder, or pass --session PATH)"
        ) from None


def _conversation(runner: Runner, interactive: bool) -> int:
    """Read lines and answer them; return the exit code when the user leaves."""
    code = EXIT_OK
    started = False
    while True:
        try:
            line = _read_line("> ", interactive)
        except KeyboardInterrupt:
            runner.display.status("")
            return EXIT_SIGINT
        if line is None:
            if interactive:
                runner.display.status("")
            return code
        text = valid_text(line.strip())
        if not text:
            continue
        if text.lower() in ("/exit", "/quit"):
            return code
        if text.lower() == "/help":
            runner.display.status(CHAT_HELP)
            continue
        if _COMMAND.fullmatch(text.split()[0]):  # a mistyped command is never sent to the model
            runner.display.status(
                f"miniagent: unknown command {text.split()[0]}: /help lists the commands "
                "(start the line with // to send it)"
            )
            continue
        if text.startswith("//"):
            text = text[1:]
        runner.start_clock()  # --timeout bounds each answer (the first one with the client start)
        if not started:
            _start(runner)
            started = True
        answered, leave = _answer(runner, text, interactive)
        code = code if answered is None else answered
        if leave:
            return code


def _read_line(prompt: str, interactive: bool) -> str | None:
    """One line of standard input (the prompt on stderr on a terminal); ``None`` at its end (or
    when standard input is closed). Bytes that are not UTF-8 become U+FFFD."""
    if interactive:
        sys.stderr.write(prompt)
        sys.stderr.flush()
    if sys.stdin is None:
        return None
    buffer = getattr(sys.stdin, "buffer", None)
    if buffer is None:  # a text stream put in place of stdin
        return str(sys.stdin.readline()) or None
    data: bytes = buffer.readline()
    return data.decode("utf-8", "replace") if data else None


def _answer(runner: Runner, text: str, interactive: bool) -> tuple[int | None, bool]:
    """One run for ``text``: returns (the new exit code, or ``None`` to keep it; leave now)."""
    display, options = runner.display, runner.options
    try:
        result, code = runner.run_once(text)
    except SessionError as error:
        return fail(display, error, options), True
    except Exception as error:
        return fail(display, error, options), not interactive
    record_session(display, options, result)
    display.finish_run(result, code)
    if output_lost(display):
        return settle(display, code), True
    if code == EXIT_SIGTERM:
        report_stop(display, result.stop_reason, options)
        return code, True
    if result.stop_reason == "aborted":
        display.note("miniagent: cancelled; type another message or /exit")
        return None, False
    report_stop(display, result.stop_reason, options)
    return EXIT_OK, False
