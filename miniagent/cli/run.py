"""``miniagent run PROMPT``: one run, then the answer (streamed on a terminal) and its exit code."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from .._json import loads
from ..output import OutputSchema
from ..validation import json_type_name, schema_problem
from .checks import UsageProblem, check_options, check_prompt_fits, valid_text
from .defaults import EXIT_ERROR
from .display import choose_display
from .logs import configure_logging
from .options import Options
from .runner import Outcome, Runner
from .signals import interrupt_exit_code, signal_name

__all__ = ["command_run"]


def read_stdin() -> str:
    """All of standard input as text; bytes that are not UTF-8 become U+FFFD.

    Raises:
        UsageProblem: standard input is closed.
    """
    if sys.stdin is None:
        raise UsageProblem('the prompt is "-" but standard input is closed')
    buffer = getattr(sys.stdin, "buffer", None)
    try:
        if buffer is None:  # a text stream put in place of stdin
            return str(sys.stdin.read())
        data = buffer.read()
    except (OSError, ValueError) as error:
        raise UsageProblem(f'the prompt is "-" but standard input cannot be read ({error})') from None
    text: str = data.decode("utf-8", "replace")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def read_prompt(prompt: str) -> str:
    """The prompt to send: ``prompt``, or standard input when it is ``-``.

    Raises:
        UsageProblem: the prompt is empty (only whitespace).
    """
    if prompt == "-":
        prompt = read_stdin().rstrip("\r\n")
    prompt = valid_text(prompt)
    if not prompt.strip():
        raise UsageProblem("the prompt is empty")
    return prompt


def read_output_schema(path: Path) -> dict[str, Any]:
    """The JSON Schema in the file ``--output-schema`` names.

    Raises:
        UsageProblem: the file cannot be read, is not JSON, holds no JSON object, or its
            types are wrong (``validation.schema_problem``: ``"type": "objekt"``).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise UsageProblem(f"--output-schema {path}: cannot be read ({error})") from None
    try:
        schema = loads(text)  # depth-safe: a file nested too deeply is "not JSON" too
    except ValueError as error:
        raise UsageProblem(f"--output-schema {path}: not JSON ({error})") from None
    if not isinstance(schema, dict):
        kind = json_type_name(schema)
        raise UsageProblem(f"--output-schema {path}: a JSON Schema object is needed, got {kind}")
    problem = schema_problem(schema)
    if problem is not None:
        raise UsageProblem(f"--output-schema {path}: not a valid JSON Schema: {problem}")
    return schema


def command_run(prompt: str, options: Options, output_schema: Path | None = None) -> Outcome:
    """Run ``prompt`` once and report it; with ``output_schema`` (``--output-schema FILE``) the
    answer must be valid JSON against that schema and stdout gets only that JSON, on one line.

    Returns:
        The exit code (see ``exit_code_for_stop_reason``; 1 for a runtime error, 130/143/129
        after a signal) and whether a client thread must be abandoned.

    Raises:
        UsageProblem: a usage error (before anything started), e.g. a schema file that is not a
            JSON object, or ``--output-schema`` with ``--json``.
    """
    configure_logging(options)
    check_options(options)
    output = None
    if output_schema is not None:
        if options.json:
            raise UsageProblem("--output-schema prints only the answer; it cannot be combined with --json")
        output = OutputSchema.of(read_output_schema(output_schema))
    prompt = read_prompt(prompt)
    check_prompt_fits(prompt, options.context_max_chars)
    runner = Runner(options, choose_display(json=options.json, chat=False, output=output))
    runner.output_schema = output.schema if output is not None else None
    with runner:
        code = _run_and_report(runner, prompt)
    return runner.outcome(code)  # after the close: it may have abandoned a thread


def _run_and_report(runner: Runner, prompt: str) -> int:
    if runner.output_lost():  # stdout closed: nobody could read the answer
        return runner.settle(EXIT_ERROR)
    runner.start_clock()
    try:
        runner.open_session()  # a corrupt or locked session fails before the client starts
        runner.open()
        stop_reason, code = runner.run_once(prompt)
        runner.display.finish_run(stop_reason, code)
        if not runner.output_lost():
            runner.report_stop(stop_reason)
            runner.display.report_usage()
        return runner.settle(code)
    except KeyboardInterrupt as interrupt:  # Ctrl-C, SIGTERM, SIGHUP while starting: nothing was sent
        code = interrupt_exit_code(interrupt)
        runner.display.finish_run("aborted", code)
        runner.display.status(
            f"\nminiagent: aborted{signal_name(code)} (while the model was starting; nothing was sent)"
        )
        return code
    except UsageProblem:
        raise  # exit 64, after the runner closed
    except Exception as error:
        return runner.fail(error)
