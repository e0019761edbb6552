"""``miniagent run PROMPT``: one run, then the answer (streamed on a terminal) and its exit code.

``miniagent run --session PATH --continue`` goes on from the session without a prompt: the calls
that wait for a decision are settled first (the decisions ``miniagent session approve`` / ``deny``
recorded; undecided ones keep waiting under the default ``--approve defer``), then the model is
asked again (``run_agent(user=None)``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from .._json import loads
from .._regular import read_regular
from ..agent import RunResult
from ..output import OutputSchema
from ..pending import can_continue
from ..validation import json_type_name, schema_problem
from .checks import UsageProblem, check_options, check_prompt_fits, own_files_in_workspace, valid_text
from .defaults import EXIT_ERROR, resolve_provider
from .display import choose_display
from .logs import configure_logging
from .options import Options
from .report import Outcome, fail, output_lost, report_stop, settle
from .runner import Runner
from .session_log import record_session
from .signals import interrupt_exit_code, signal_name
from .stdin_context import DEFAULT_STDIN_WAIT, attach_stdin, stdin_cap
from .terminal import neutralise

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
        text = read_regular(path).decode("utf-8")  # never blocks on a FIFO put there after parsing
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


def command_run(
    prompt: str | None,
    options: Options,
    output_schema: Path | None = None,
    *,
    continuing: bool = False,
    stdin: tuple[int | None, float] = (None, DEFAULT_STDIN_WAIT),
) -> Outcome:
    """Run ``prompt`` once and report it; with ``output_schema`` (``--output-schema FILE``) the
    answer must be valid JSON against that schema and stdout gets only that JSON, on one line.
    ``continuing`` (``--continue``, ``prompt`` ``None``): go on from ``--session`` without one.
    ``stdin``: ``(--stdin-max-chars, --stdin-wait)``, how standard input is attached as context
    to a PROMPT (``stdin_context.attach_stdin``).

    Returns:
        The exit code (``defaults.EXIT_CODES``) and whether a client thread must be abandoned.

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
    prompt = _check_continue(prompt, options, continuing)
    if prompt is not None:
        piped = prompt == "-"
        prompt = read_prompt(prompt)
        if not piped:
            provider = resolve_provider(options.provider, base_url=options.base_url)
            cap = stdin_cap(stdin[0], provider, len(prompt), options.context_max_chars)
            prompt = attach_stdin(prompt, max_chars=cap, wait=stdin[1], approve=options.approve)
        check_prompt_fits(prompt, options.context_max_chars)
    for path in own_files_in_workspace(options):
        sys.stderr.write(
            f"miniagent: note: {neutralise(path)} is inside the workspace: the model's tools see it too\n"
        )
    display = choose_display(options, chat=False, output=output)
    schema = output.schema if output is not None else None
    runner = Runner(options, display, output_schema=schema, continuing=continuing)
    with runner:
        code = _run_and_report(runner, prompt)
    return runner.outcome(code)  # after the close: it may have abandoned a thread


def _check_continue(prompt: str | None, options: Options, continuing: bool) -> str | None:
    """The prompt to read (``None`` with ``--continue``).

    Raises:
        UsageProblem: ``--continue`` with a PROMPT or without ``--session``, no PROMPT without
            ``--continue``, or ``--approve defer`` without ``--session`` (the calls would be lost).
    """
    if continuing:
        if prompt is not None:
            raise UsageProblem("--continue goes on without a new prompt: give either PROMPT or --continue")
        if options.session is None:
            options.session = _latest_session(options)
        return None
    if prompt is None:
        raise UsageProblem("missing PROMPT (or --continue with --session PATH)")
    if options.approve == "defer" and options.session is None:
        raise UsageProblem("--approve defer keeps the waiting calls in a session: give --session PATH")
    return prompt


def _latest_session(options: Options) -> Path:
    """``--continue`` without ``--session``: the session of the last run in this workspace
    (``session_log``), named on stderr.

    Raises:
        UsageProblem: no session of this workspace is known.
    """
    from .session_log import latest_session, log_path

    try:
        path = latest_session(options.folder)
    except OSError as error:
        raise UsageProblem(f"--continue: {log_path()} cannot be read ({error.strerror or error})") from None
    if path is None:
        raise UsageProblem(
            f"--continue goes on from a session: no session of {options.folder} is known "
            "(miniagent session list); give --session PATH"
        )
    sys.stderr.write(f"miniagent: continuing {path}\n")
    return path


def _run_and_report(runner: Runner, prompt: str | None) -> int:
    display, options = runner.display, runner.options
    if output_lost(display):  # stdout closed: nobody could read the answer
        return settle(display, EXIT_ERROR)
    runner.start_clock()
    try:
        messages = runner.open_session()  # a corrupt or locked session fails before the client starts
        problem = can_continue(messages) if prompt is None else None
        if problem is not None:
            raise UsageProblem(f"--continue: {problem}")
        runner.open()
        result, code = runner.run_once(prompt)
        record_session(display, options, result)
        display.finish_run(result, code)
        if not output_lost(display):
            report_stop(display, result.stop_reason, options, len(result.pending))
            display.report_usage(result.usage)
        return settle(display, code)
    except KeyboardInterrupt as interrupt:  # Ctrl-C, SIGTERM, SIGHUP while starting: nothing was sent
        code = interrupt_exit_code(interrupt)
        display.finish_run(RunResult([], "aborted"), code)
        display.status(
            f"\nminiagent: aborted{signal_name(code)} (while the model was starting; nothing was sent)"
        )
        return code
    except UsageProblem:
        raise  # EXIT_USAGE, after the runner closed
    except Exception as error:
        return fail(display, error, options)
