"""How a CLI command ends: its ``Outcome``, the one line of a runtime error, the note of a run
that did not complete, and the exit code once stdout is done.

Invariants:

- A runtime error is one line ``miniagent: error: TEXT`` on stderr (a traceback only with
  ``--debug``) and exit ``EXIT_ERROR``; ``TimedOut`` (``--timeout`` ran out before the run
  started) exits ``EXIT_TIMEOUT``. The text never carries an exception name for the library's own
  errors and ``OSError``.
- A failed write to stdout decides the exit code last (``settle``): ``EXIT_SIGPIPE`` quietly for a
  closed pipe (``| head``), ``EXIT_ERROR`` with one error line otherwise.
- Nothing here starts, runs or stops anything: it words the end and picks the code, on the
  command's ``Display``.
"""

from __future__ import annotations

import sys
import traceback
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .._text import shorten
from ..agent import StopReason
from ..errors import IncompleteResponseError, MiniagentError, SessionError
from .defaults import EXIT_ERROR, EXIT_SIGPIPE, EXIT_TIMEOUT
from .terminal import neutralise

if TYPE_CHECKING:
    from .display import Display
    from .options import Options

__all__ = [
    "Outcome",
    "TimedOut",
    "error_text",
    "fail",
    "incomplete_text",
    "output_lost",
    "report_stop",
    "settle",
]


class TimedOut(Exception):
    """``--timeout`` ran out before the run started (e.g. while the model was starting)."""


@dataclass(frozen=True)
class Outcome:
    """How a command ended.

    Args:
        code: the exit code (``defaults.EXIT_CODES``).
        abandon_threads: a client thread is still starting or closing; exit without waiting.
    """

    code: int
    abandon_threads: bool = False


CLI_ADVICE = {
    "stream_timeout": "raise it with --stream-timeout",
    "model_not_found": "give --model a path to a .gguf file, or no --model for the default model",
    "model_download": "or give --model the path of a .gguf file you have",
    "missing_key": "or set MINIAGENT_API_KEY (the key the CLI sends to any server)",
    "unpriced": "give the model's prices with --prices INPUT,OUTPUT (US dollars per million tokens) "
    "or use --max-total-tokens",
}
"""What the CLI adds to a library error of each ``kind``: the option that changes it (library
texts name library settings only)."""


def error_text(error: BaseException) -> str:
    """The text after ``miniagent: error:`` for ``error`` (no traceback, no exception name for
    the library's own errors and ``OSError``), with the CLI's advice for its ``kind``
    (``CLI_ADVICE``)."""
    if isinstance(error, SessionError):
        return f"session {error} (the file was left untouched)"
    if isinstance(error, MiniagentError | OSError):
        text = str(error) or type(error).__name__
        advice = CLI_ADVICE.get(getattr(error, "kind", None) or "")
        return f"{text}; {advice}" if advice else text
    return f"{type(error).__name__}: {error}"


def incomplete_text(error: IncompleteResponseError, max_output_tokens: int | None) -> str:
    """The text after ``miniagent: error:`` for an answer that ended unnaturally: the reason, the
    provider's word and what to change (``--max-output-tokens``, ``--compact-at``,
    ``--context-max-chars``); a
    refusal shows the start of its explanation. ``max_output_tokens``: the limit the run used."""
    said = f"stop reason {error.detail!r}" if error.detail else "no stop reason"
    if error.reason == "max_output_tokens":
        limit = f"{max_output_tokens:,} tokens, " if max_output_tokens else ""
        return (
            f"the model's answer was cut at the output-token limit ({limit}{said}); "
            "raise it with --max-output-tokens"
        )
    if error.reason == "context_window":
        return (
            f"the model's answer was cut: its context window is full ({said}); compact the history "
            "sooner with --compact-at TOKENS, or send less of it with --context-max-chars N"
        )
    if error.reason == "content_filter":
        return f"the provider's content filter stopped the model's answer ({said}); rephrase the request"
    if error.reason == "refusal":
        why = f": {shorten(' '.join(error.text.split()), 200)}" if error.text.strip() else ""
        return f"the model refused to answer ({said}){why}"
    return f"the provider ended the model's answer with an error ({said}); try again later"


def report_stop(
    display: Display, stop_reason: StopReason | None, options: Options, pending: int = 0
) -> None:
    """A note on stderr when the run did not complete (``max_turns``, ``max_budget``,
    ``deferred`` with ``pending`` calls waiting, ``no_progress``, ``aborted``); nothing for
    ``complete`` or ``None``."""
    turns = options.max_turns
    if stop_reason == "max_turns":
        display.note(
            f"miniagent: stopped after {turns} turn{'' if turns == 1 else 's'} (--max-turns); "
            "the last tool results are recorded"
        )
    elif stop_reason == "max_budget":
        display.note(
            "miniagent: stopped at the budget (--max-total-tokens / --max-cost); "
            "the last tool results are recorded"
        )
    elif stop_reason == "deferred":
        session = neutralise(str(options.session))
        display.note(
            f"miniagent: {pending} tool call{' waits' if pending == 1 else 's wait'} for a decision: "
            f"miniagent session pending {session}, then session approve/deny {session} CALL_ID, "
            f"then miniagent run --session {session} --continue"
        )
    elif stop_reason == "no_progress":
        display.note(
            f"miniagent: stopped: the same tool call got the same result {options.max_repeats} times "
            "in a row (--max-repeats); the last tool results are recorded"
        )
    elif stop_reason == "aborted":
        display.note("miniagent: aborted")


def output_lost(display: Display) -> bool:
    """Whether writing stdout failed (the run was cancelled then; see ``settle``)."""
    return display.output_error is not None


def settle(display: Display, code: int) -> int:
    """The exit code once the output is done: ``code``, or, when writing stdout failed,
    ``EXIT_SIGPIPE`` quietly for a closed pipe (``| head``) and ``EXIT_ERROR`` with one error
    line otherwise."""
    error = display.output_error
    if error is None:
        return code
    if isinstance(error, BrokenPipeError):
        return EXIT_SIGPIPE
    text = getattr(error, "strerror", None) or str(error)
    display.error(f"cannot write to standard output: {text}")
    return EXIT_ERROR


def fail(display: Display, error: BaseException, options: Options) -> int:
    """Report a runtime error (one line on stderr, a traceback with ``--debug``).

    Returns:
        ``EXIT_ERROR`` (``EXIT_TIMEOUT`` for ``TimedOut``).
    """
    display.idle()
    if isinstance(error, TimedOut):
        display.error(str(error), EXIT_TIMEOUT)
        return EXIT_TIMEOUT
    if options.debug:
        sys.stderr.write(neutralise("".join(traceback.format_exception(error))))
    if isinstance(error, IncompleteResponseError):
        display.error(incomplete_text(error, options.max_output_tokens))
    else:
        display.error(error_text(error) + _recovery_hint(display, error, options))
    return EXIT_ERROR


def _recovery_hint(display: Display, error: BaseException, options: Options) -> str:
    """How to get out when the server refused the run's first request (e.g. a prompt over its
    context size) and the user message now sits in the session: ``""`` otherwise."""
    session = options.session
    refused = getattr(error, "status", None) in (400, 413, 422)
    first = not any(m.role == "assistant" for m in display.run_messages)
    if session is None or not refused or not first or not display.run_messages:
        return ""
    return (
        f"; the prompt stays in the session: send less with --context-max-chars N, "
        f"or drop it with: miniagent session pop {session}"
    )
