"""The Typer app of ``miniagent`` and its entry points ``run_cli`` (returns the exit code) and
``main`` (exits with it).

Invariants: parsing errors of click are usage errors (``EXIT_USAGE``, click's message on stderr,
nothing on stdout); ``miniagent`` (or ``miniagent session``) without a command prints its usual
multi-line help on stderr and exits ``EXIT_USAGE`` (no command is a usage error; stdout stays
empty); ``UsageProblem`` raised by a command is one ``miniagent: error:`` line and ``EXIT_USAGE``;
the exit codes in ``miniagent --help`` are ``defaults.EXIT_CODES``, written nowhere else;
``run_cli`` never calls ``sys.exit``. Only the standard library, typer and the core are imported
here; providers (``requests``) and the toolbox are imported by the runner, so ``--help`` is fast.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from typer.core import TyperCommand

from .. import __version__
from ..errors import MiniagentError
from .chat import command_chat
from .checks import UsageProblem
from .defaults import EXIT_ERROR, EXIT_OK, EXIT_SIGINT, EXIT_USAGE, exit_codes_text
from .option_files import regular_files
from .options import Options, with_options
from .report import Outcome, error_text
from .run import command_run
from .stdin_context import DEFAULT_STDIN_MAX_CHARS, DEFAULT_STDIN_WAIT, LOCAL_STDIN_MAX_CHARS

__all__ = ["app", "main", "run_cli"]


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"miniagent {__version__}")
        raise typer.Exit(EXIT_OK)


VersionOpt = Annotated[
    bool,
    typer.Option("--version", callback=_version_callback, is_eager=True, help="Show the version and exit."),
]

app = typer.Typer(
    name="miniagent",
    add_completion=False,
    no_args_is_help=True,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


APP_HELP = f"""A small synchronous agent: a model, file and shell tools, and a loop you can stop.

Exit codes: {exit_codes_text()}.
"""


@app.callback(help=APP_HELP)
def _app(version: VersionOpt = False) -> None:
    """The ``miniagent`` group: its help is ``APP_HELP`` (built from ``defaults.EXIT_CODES``)."""


class _Command(TyperCommand):
    """A command whose usage line shows a required argument as ``PROMPT`` (typer: ``{PROMPT}``)."""

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces: list[str] = super().collect_usage_pieces(ctx)
        return [p[1:-1] if p.startswith("{") and p.endswith("}") else p for p in pieces]


@app.command("run", cls=_Command)
@with_options
def _run(
    prompt: Annotated[
        Optional[str],  # noqa: UP045 (typer reads the annotations)
        typer.Argument(
            metavar="PROMPT",
            show_default=False,
            help='The task. "-" reads it from standard input. Not with --continue.',
        ),
    ] = None,
    output_schema: Annotated[
        Optional[Path],  # noqa: UP045 (typer reads the annotations)
        typer.Option(
            "--output-schema",
            metavar="FILE",
            exists=True,
            dir_okay=False,
            callback=regular_files,
            help="JSON Schema file of the answer: stdout gets only the valid answer as one JSON line "
            "(exit 2, the last validation error on stderr, when no answer is valid within --max-turns).",
        ),
    ] = None,
    continue_: Annotated[
        bool,
        typer.Option(
            "--continue",
            help="Go on from --session (default: the latest session of this workspace, miniagent "
            "session list) without a new prompt: run the calls approved with miniagent session "
            "approve (once), record the denials, then ask the model again.",
        ),
    ] = False,
    stdin_max_chars: Annotated[
        int | None,
        typer.Option(
            "--stdin-max-chars",
            min=0,
            metavar="N",
            help="When standard input is a pipe or a file and PROMPT is given, attach at most N "
            "characters of it to the prompt (a note says when it was cut; binary input is refused); "
            f"0: never read it. A terminal or /dev/null is never read. Default {DEFAULT_STDIN_MAX_CHARS:,}, "
            f"{LOCAL_STDIN_MAX_CHARS:,} for the embedded model; never more than --context-max-chars leaves.",
        ),
    ] = None,
    stdin_wait: Annotated[
        float,
        typer.Option(
            "--stdin-wait",
            min=0.0,
            metavar="SECONDS",
            help="Stop reading standard input after SECONDS without data (a pipe that never closes) "
            "and attach what came.",
        ),
    ] = DEFAULT_STDIN_WAIT,
    *,
    options: Options,
) -> Outcome:
    """Run one task and print the answer (streamed on a terminal)."""
    stdin = (stdin_max_chars, stdin_wait)
    return command_run(prompt, options, output_schema=output_schema, continuing=continue_, stdin=stdin)


@app.command("chat", cls=_Command)
@with_options
def _chat(*, options: Options) -> Outcome:
    """Chat: one run per line on the same session; /exit or end of input leaves."""
    return command_chat(options)


session_app = typer.Typer(
    name="session",
    help="Work on a session file.",
    no_args_is_help=True,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(session_app)


@session_app.command("pop", cls=_Command)
def _session_pop(
    path: Annotated[
        Path,
        typer.Argument(
            metavar="PATH", dir_okay=False, callback=regular_files, help="The JSONL session file."
        ),
    ],
) -> int:
    """Drop the last user message of a session and every message after it (e.g. a prompt the
    server refused); the file stays a valid session."""
    from .session_command import pop_last_exchange
    from .terminal import clip, neutralise

    try:
        removed = pop_last_exchange(path)
    except (MiniagentError, OSError) as error:
        _print_error(error_text(error))
        return EXIT_ERROR
    sys.stderr.write(
        f"miniagent: removed {len(removed)} message{'' if len(removed) == 1 else 's'} from "
        f"{neutralise(str(path))}; the last user message was: {clip(removed[0].content, 60)}\n"
    )
    return EXIT_OK


SessionPath = Annotated[
    Path,
    typer.Argument(metavar="PATH", dir_okay=False, callback=regular_files, help="The JSONL session file."),
]
CallId = Annotated[str, typer.Argument(metavar="CALL_ID", help="The id of a pending call (session pending).")]


@session_app.command("pending", cls=_Command)
def _session_pending(
    path: SessionPath,
    json: Annotated[
        bool, typer.Option("--json", help="One JSON object per call: id, name, input, decision, reason.")
    ] = False,
) -> int:
    """List the calls that wait for a decision (left by --approve defer), in order, with the
    decision recorded so far; nothing on stdout when none waits."""
    from ..approval import show_call
    from ..messages import json_text
    from .session_command import list_pending
    from .terminal import neutralise

    try:
        listed = list_pending(path)
    except (MiniagentError, OSError) as error:
        _print_error(error_text(error))
        return EXIT_ERROR
    for item in listed:
        call = item.call
        if json:
            line = {"id": call.id, "name": call.name, "input": call.input}
            sys.stdout.write(json_text({**line, "decision": item.decision, "reason": item.reason}) + "\n")
        else:
            said = item.decision or "undecided"
            why = f": {item.reason}" if item.reason and item.decision != "approved" else ""
            sys.stdout.write(f"{neutralise(call.id)} ({neutralise(said + why)})\n  {show_call(call)}\n")
    if not listed:
        sys.stderr.write(f"miniagent: no call of {neutralise(str(path))} waits for a decision\n")
    return EXIT_OK


@session_app.command("list", cls=_Command)
def _session_list(
    json: Annotated[
        bool,
        typer.Option(
            "--json",
            help="One JSON object per session: path, workspace, when, turns, stop_reason, cost_usd, runs.",
        ),
    ] = False,
) -> int:
    """List the sessions run and chat worked on (their files still there), the most recent first:
    when, turns, last stop reason, cost, path. A run without --session keeps none."""
    from .session_command import list_text
    from .session_log import known_sessions, log_path

    try:
        known = known_sessions()
    except OSError as error:
        _print_error(f"{log_path()}: cannot be read ({error.strerror or error})")
        return EXIT_ERROR
    if json:
        from ..messages import json_text

        sys.stdout.write("".join(json_text(item.to_json()) + "\n" for item in known))
    else:
        sys.stdout.write(list_text(known))
    if not known:
        sys.stderr.write(f"miniagent: no session recorded yet in {log_path()}\n")
    return EXIT_OK


@session_app.command("show", cls=_Command)
def _session_show(
    path: Annotated[
        Path,
        typer.Argument(
            metavar="PATH",
            exists=True,
            dir_okay=False,
            callback=regular_files,
            help="The JSONL session file.",
        ),
    ],
    json: Annotated[
        bool, typer.Option("--json", help="One JSON object per message, as in the session file.")
    ] = False,
) -> int:
    """Show a session's record: every message, tool call and result, and the notes on calls."""
    from ..messages import json_text
    from ..session import load_session
    from .session_command import record_text

    try:
        messages = load_session(path)
    except (MiniagentError, OSError) as error:
        _print_error(error_text(error))
        return EXIT_ERROR
    if json:
        sys.stdout.write("".join(json_text(message.to_json()) + "\n" for message in messages))
    else:
        sys.stdout.write(record_text(messages))
    return EXIT_OK


@session_app.command("approve", cls=_Command)
def _session_approve(path: SessionPath, call_id: CallId) -> int:
    """Let a pending call run: the next run --session PATH --continue runs it, once."""
    return _decide(path, call_id, True, "")


@session_app.command("deny", cls=_Command)
def _session_deny(
    path: SessionPath,
    call_id: CallId,
    reason: Annotated[
        str, typer.Option("--reason", metavar="TEXT", help="Why, for the model (refused by the user: TEXT).")
    ] = "",
) -> int:
    """Refuse a pending call: the next run --session PATH --continue records the refusal."""
    return _decide(path, call_id, False, reason)


def _decide(path: Path, call_id: str, approved: bool, reason: str) -> int:
    """Record the decision; a CALL_ID that does not wait is a usage error."""
    from .checks import valid_text
    from .session_command import record_decision
    from .terminal import neutralise

    try:
        earlier = record_decision(path, valid_text(call_id), approved, valid_text(reason))
    except ValueError as error:
        _print_error(str(error))
        return EXIT_USAGE
    except (MiniagentError, OSError) as error:
        _print_error(error_text(error))
        return EXIT_ERROR
    word = "approved" if approved else "denied"
    if earlier is not None:  # the last decision counts: say so, it may be a slip
        word = f"{word} (it was {earlier}: the last decision counts)"
    sys.stderr.write(
        f"miniagent: {neutralise(call_id)} {word}; go on with: miniagent run --session "
        f"{neutralise(str(path))} --continue\n"
    )
    return EXIT_OK


config_app = typer.Typer(
    name="config",
    help="The configuration files (./miniagent.toml, ~/.config/miniagent/config.toml) and profiles.",
    no_args_is_help=True,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(config_app)


@config_app.command(
    "show", cls=_Command, context_settings={"ignore_unknown_options": True, "allow_extra_args": True}
)
def _config_show(
    ctx: typer.Context,
    run_options: Annotated[
        Optional[list[str]],  # noqa: UP045 (typer reads the annotations)
        typer.Argument(
            metavar="[RUN_OPTIONS]...",
            show_default=False,
            help="Options of run to resolve too (--max-turns 3): their source is then 'flag'.",
        ),
    ] = None,
    profile: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--profile", metavar="NAME", help="The profile to show (default: $MINIAGENT_PROFILE, else none)."
        ),
    ] = None,
    json: Annotated[
        bool, typer.Option("--json", help="One JSON object per option: key, value, source.")
    ] = False,
) -> int:
    """Show the value every option of run takes now and where it comes from (flag, environment
    variable, profile or defaults of a file with its line, or the built-in default); secrets
    are shown as ***."""
    from .config_command import config_rows, render_rows

    args = (["--profile", profile] if profile is not None else []) + list(run_options or [])
    rows = config_rows(ctx.find_root(), args)
    sys.stdout.write(render_rows(rows, json))
    return EXIT_OK


def _click_error_classes() -> tuple[type[Exception], type[Exception]]:
    """(UsageError, ClickException) of the click that typer uses (vendored in typer >= 0.26)."""
    mro = typer.BadParameter.__mro__
    usage = next(c for c in mro if c.__name__ == "UsageError")
    base = next(c for c in mro if c.__name__ == "ClickException")
    return usage, base


def _usage_text(error: Exception) -> str:
    """Click's usage error in one line; an environment variable is named only when it was used."""
    ctx: Any = getattr(error, "ctx", None)
    param: Any = getattr(error, "param", None)
    if (
        type(error).__name__ == "BadParameter"
        and param is not None
        and getattr(error, "param_hint", None) is None
    ):
        is_option = getattr(param, "param_type_name", "") == "option"
        name = "/".join(param.opts) if param.opts and is_option else param.human_readable_name
        source = ctx.get_parameter_source(param.name) if ctx is not None else None
        if getattr(source, "name", "") == "ENVIRONMENT" and param.envvar:
            name += f" (from ${param.envvar})"
        text = f"invalid value for {name}: {getattr(error, 'message', error)}"
    else:
        format_message = getattr(error, "format_message", None)
        text = format_message() if callable(format_message) else str(error)
    command = ctx.command_path if ctx is not None else "miniagent"
    return f"{' '.join(text.split())} (see '{command} --help')"


def _print_error(text: str) -> None:
    """``miniagent: error: TEXT`` on stderr; TEXT may quote a path or a value from the command
    line, so its control characters are written as visible escapes (``terminal.neutralise``)."""
    from .terminal import neutralise

    sys.stderr.write(f"miniagent: error: {neutralise(text)}\n")
    sys.stderr.flush()


def _run_app(argv: Sequence[str] | None) -> Outcome:
    """Parse ``argv`` and run the command; every way out becomes an ``Outcome``."""
    usage_error, click_error = _click_error_classes()
    command = typer.main.get_command(app)
    try:
        result = command.main(
            args=list(sys.argv[1:] if argv is None else argv),
            prog_name="miniagent",
            standalone_mode=False,
        )
    except UsageProblem as error:  # a configuration file's problem names its file and line instead
        hint = "" if type(error).__name__ == "ConfigProblem" else " (see 'miniagent --help')"
        _print_error(f"{error}{hint}")
        return Outcome(EXIT_USAGE)
    except usage_error as error:
        if type(error).__name__ == "NoArgsIsHelpError":  # ``miniagent`` alone: the whole help
            sys.stderr.write(f"{error.format_message().rstrip()}\n")  # type: ignore[attr-defined]
            return Outcome(EXIT_USAGE)
        _print_error(_usage_text(error))
        return Outcome(EXIT_USAGE)
    except click_error as error:
        _print_error(error.format_message())  # type: ignore[attr-defined]
        return Outcome(int(getattr(error, "exit_code", EXIT_ERROR)))
    except (typer.Abort, KeyboardInterrupt):
        sys.stderr.write("\nminiagent: aborted\n")
        return Outcome(EXIT_SIGINT)
    except typer.Exit as exit_:
        return Outcome(int(exit_.exit_code))
    if isinstance(result, Outcome):
        return result
    return Outcome(result if isinstance(result, int) else EXIT_OK)


def run_cli(argv: Sequence[str] | None = None) -> int:
    """Run the command line and return its exit code (never calls ``sys.exit``).

    Args:
        argv: the arguments without the program name (default ``sys.argv[1:]``).

    Returns:
        The exit code, one of ``defaults.EXIT_CODES`` (``miniagent --help`` lists them); for a
        usage error click's message is printed on stderr first.
    """
    return _run_app(argv).code


def main(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point: run the CLI and exit with its code.

    When a client thread is still starting or closing (a local server finishing its prompt), the
    process exits with ``os._exit`` without waiting for it; the OS reclaims the server.

    Args:
        argv: the arguments without the program name (default ``sys.argv[1:]``).

    Raises:
        SystemExit: with the exit code of ``run_cli`` (unless ``os._exit`` was needed).
    """
    outcome = _run_app(argv)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    if outcome.abandon_threads:
        os._exit(outcome.code)
    sys.exit(outcome.code)
