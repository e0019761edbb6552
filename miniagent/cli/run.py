"""``miniagent run PROMPT``: one run, then the answer (streamed on a terminal) and its exit code."""

from __future__ import annotations

import sys

from .checks import UsageProblem, check_options, valid_text
from .defaults import EXIT_SIGINT
from .display import choose_display
from .logs import configure_logging
from .options import Options
from .runner import Outcome, Runner

__all__ = ["command_run"]


def read_prompt(prompt: str) -> str:
    """The prompt to send: ``prompt``, or standard input when it is ``-``.

    Raises:
        UsageProblem: the prompt is empty (only whitespace).
    """
    if prompt == "-":
        prompt = sys.stdin.read().rstrip("\r\n")
    prompt = valid_text(prompt)
    if not prompt.strip():
        raise UsageProblem("the prompt is empty")
    return prompt


def command_run(prompt: str, options: Options) -> Outcome:
    """Run ``prompt`` once and report it.

    Returns:
        The exit code (see ``exit_code_for_stop_reason``; 1 for a runtime error, 130/143/129
        after a signal) and whether a client thread must be abandoned.

    Raises:
        UsageProblem: a usage error (before anything started).
    """
    configure_logging(options.debug)
    check_options(options)
    prompt = read_prompt(prompt)
    runner = Runner(options, choose_display(json=options.json, chat=False))
    with runner:
        code = _run_and_report(runner, prompt)
    return runner.outcome(code)  # after the close: it may have abandoned a thread


def _run_and_report(runner: Runner, prompt: str) -> int:
    try:
        runner.open()
        stop_reason, code = runner.run_once(prompt)
        runner.display.finish_run(stop_reason, code)
        runner.report_stop(stop_reason)
        return code
    except KeyboardInterrupt:  # while the client was starting
        runner.display.status("\nminiagent: aborted")
        return EXIT_SIGINT
    except Exception as error:
        return runner.fail(error)
