"""The ``miniagent`` command line: ``miniagent run PROMPT`` and ``miniagent chat``.

Contract (DESIGN.md "CLI"), each point tested in ``tests/test_cli.py``:

- Exit codes: 0 complete, 2 max_turns, 130 aborted (SIGINT), 143 aborted by SIGTERM, 1 runtime
  error (provider unreachable, bad key, empty answer, corrupt or locked session: one line
  ``miniagent: error: ...`` on stderr, a traceback only with ``--debug``), 64 usage error (click's
  own 2 would read as max_turns).
- stdout carries only the answer: ``run`` streams the assistant's text when stdout is a terminal
  and prints the last assistant text of the run at the end otherwise; ``chat`` prints every
  non-empty assistant message (streamed on a terminal) and a compact line per tool call and
  result. Progress (spinner, tool lines of ``run``, notes), prompts and errors go to stderr.
- ``--json``: stdout holds one JSON object per line and nothing else: each committed message
  (``message_to_json``), then ``{"stop_reason": ..., "exit_code": ...}`` after each run. A runtime
  error ends with ``{"stop_reason": null, "exit_code": 1, "error": "..."}``. Usage errors (64)
  print nothing on stdout. A second Ctrl-C exits at once without a final object.
- Signals, handled only around a run and only in the main thread: the first SIGINT (or SIGTERM)
  sets the run's cancel event, so the loop closes its calls as the spec says and the process
  exits 130 (143 for SIGTERM). The first SIGINT while an approval prompt waits for an answer
  also interrupts the prompt (the pending calls are closed as ``aborted before execution``). A
  second signal exits at once with ``os._exit(128 + signal)``. In ``chat`` a Ctrl-C cancels the
  current answer and returns to the prompt; Ctrl-C at the prompt leaves with 130.
- Startup: only the standard library, typer and the zero-dependency core are imported at the top;
  providers (``requests``) and the toolbox are imported inside the commands, so ``--help`` is fast.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional, TypeVar

import typer

from . import __version__
from ._provider_names import PROVIDERS, check_provider
from ._signals import SignalCancel
from ._terminal import Display, Spinner, is_terminal
from .agent import StopReason, exit_code_for_stop_reason, run_agent
from .errors import MiniagentError, SessionError
from .messages import ToolCall
from .tools import Approval, BeforeToolCall, Tool

if TYPE_CHECKING:
    from .model import ModelClient

__all__ = [
    "app",
    "main",
    "run_cli",
    "resolve_provider",
    "resolve_approval",
    "default_session_path",
    "session_folder",
    "default_system_prompt",
    "EXIT_OK",
    "EXIT_ERROR",
    "EXIT_USAGE",
    "EXIT_SIGINT",
    "EXIT_SIGTERM",
]

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 64  # EX_USAGE from sysexits.h
EXIT_SIGINT = 128 + signal.SIGINT  # 130
EXIT_SIGTERM = 128 + signal.SIGTERM  # 143

APPROVALS = ("ask", "read-only", "all")
DEFAULT_MAX_TURNS = 8

DEFAULT_SYSTEM_PROMPT = """\
You are miniagent, a careful assistant that works on the files in the folder {workspace}.
You can call these tools: {tools}. Paths are relative to that folder.
Use the tools to look at files instead of guessing, change files only when asked, and keep
answers short and concrete. When you are done, answer in plain text without calling a tool."""


# --- pure helpers (tested directly) -----------------------------------------------------------


def resolve_provider(
    provider: str | None, environ: Mapping[str, str] | None = None, *, base_url: str | None = None
) -> str:
    """Choose the provider: the given one, else by the API keys present, else ``local``.

    Args:
        provider: ``--provider`` or ``MINIAGENT_PROVIDER`` (``None`` or empty: not chosen).
        environ: the environment (default ``os.environ``).
        base_url: ``--base-url`` / ``MINIAGENT_BASE_URL``; with no provider and no key it means
            an OpenAI-compatible server that needs no key (Ollama, llama.cpp, vLLM).

    Returns:
        ``provider`` when set; otherwise ``"anthropic"`` if ``ANTHROPIC_API_KEY`` is set, else
        ``"openai"`` if ``OPENAI_API_KEY`` is set or ``base_url`` is given, else ``"local"`` (the
        embedded model).

    Raises:
        ValueError: ``provider`` is not one of ``local``, ``openai``, ``anthropic``.
    """
    env = os.environ if environ is None else environ
    if provider:
        return check_provider(provider)
    if env.get("ANTHROPIC_API_KEY"):
        return "anthropic"
    if env.get("OPENAI_API_KEY") or base_url:
        return "openai"
    return "local"


def resolve_approval(approve: str | None, stdin_is_terminal: bool) -> str:
    """Choose the approval mode: the given one, else ``ask`` on a terminal, else ``read-only``.

    Args:
        approve: ``--approve`` (``None``: not given).
        stdin_is_terminal: whether standard input is a terminal (a person can answer).

    Returns:
        ``"ask"``, ``"read-only"`` or ``"all"``.

    Raises:
        ValueError: ``approve`` is not one of those.
    """
    if approve is None:
        return "ask" if stdin_is_terminal else "read-only"
    if approve not in APPROVALS:
        raise ValueError(f"unknown approval mode {approve!r} (choose from {', '.join(APPROVALS)})")
    return approve


def session_folder(environ: Mapping[str, str] | None = None) -> Path:
    """The folder of ``chat``'s own sessions: ``$XDG_STATE_HOME/miniagent/sessions``.

    Args:
        environ: the environment (default ``os.environ``); ``XDG_STATE_HOME`` defaults to
            ``~/.local/state``.
    """
    env = os.environ if environ is None else environ
    state = env.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "miniagent" / "sessions"


def default_session_path(environ: Mapping[str, str] | None = None, now: float | None = None) -> Path:
    """Create and return a new, empty session file for ``chat``: ``<session_folder>/<time>.jsonl``.

    The file is created with ``O_EXCL`` (a ``-N`` suffix is added when the stamp is taken), so
    two chats started in the same second never share a session.

    Args:
        environ: the environment (default ``os.environ``), see ``session_folder``.
        now: the time stamp to use (default: now).

    Raises:
        OSError: the folder cannot be created.
    """
    folder = session_folder(environ)
    folder.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    number = 1
    while True:
        path = folder / (f"{stamp}.jsonl" if number == 1 else f"{stamp}-{number}.jsonl")
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        except FileExistsError:
            number += 1
            continue
        return path


def default_system_prompt(workspace: Path, tools: Sequence[Tool]) -> str:
    """Return the default system prompt, naming the workspace and the tools.

    Args:
        workspace: the folder the tools work in.
        tools: the run's tools.

    Returns:
        The prompt text.
    """
    names = ", ".join(t.name for t in tools) or "none"
    return DEFAULT_SYSTEM_PROMPT.format(workspace=workspace, tools=names)


def _error_text(error: BaseException) -> str:
    if isinstance(error, SessionError):
        return f"session {error} (the file was left untouched)"
    if isinstance(error, MiniagentError | OSError):
        return str(error) or type(error).__name__
    return f"{type(error).__name__}: {error}"


# --- one command's session --------------------------------------------------------------------


@dataclass
class _Options:
    provider: str | None
    model: str | None
    base_url: str | None
    max_turns: int
    session: Path | None
    context_max_chars: int | None
    workspace: Path
    approve: str | None
    system: str | None
    json: bool
    debug: bool


class _Usage(Exception):
    """A usage problem found after parsing (exit 64)."""


class _Agent:
    """What both commands share: the client, tools, approval, display and one run at a time."""

    def __init__(self, options: _Options, *, chat: bool) -> None:
        self.options = options
        self.chat = chat
        stdout_tty = is_terminal(sys.stdout)
        stderr_tty = is_terminal(sys.stderr)
        self.spinner = Spinner(sys.stderr, enabled=stderr_tty and not options.json)
        self.display = Display(
            json=options.json,
            stream_text=stdout_tty and not options.json,
            print_messages=chat and not stdout_tty and not options.json,
            tool_lines_to_stdout=chat and not options.json,
            spinner=self.spinner,
        )
        self.client: ModelClient | None = None
        self.tools: list[Tool] = []
        self.policy: BeforeToolCall | None = None
        self.approval_mode = resolve_approval(options.approve, is_terminal(sys.stdin))
        self.system = ""
        self.signals: SignalCancel | None = None

    def open(self) -> None:
        """Create the tools and the model client (imports the toolbox and providers now).

        Raises:
            MiniagentError, OSError, ImportError: the client could not be created.
        """
        from .approval import ask_on_terminal, read_only
        from .toolbox import default_tools

        workspace = self.options.workspace
        self.tools = default_tools(workspace)
        if self.approval_mode == "all":
            self.policy = None
        elif self.approval_mode == "read-only":
            self.policy = read_only(self.tools)
        else:
            self.policy = ask_on_terminal(self.tools)
        self.system = self.options.system or default_system_prompt(workspace, self.tools)
        provider = resolve_provider(self.options.provider, base_url=self.options.base_url)
        if provider == "local" and not self.options.json:
            self.spinner.show("starting the local model")
        try:
            from .providers import create_client

            # MINIAGENT_API_KEY: a key for any server, also one on localhost (where the
            # provider's usual key variable is never sent).
            api_key = os.environ.get("MINIAGENT_API_KEY") or None
            # In a thread: starting the local server blocks in C code, where the main thread
            # could not take a Ctrl-C until it returns.
            _, self.client = _in_thread(
                lambda: create_client(
                    provider,
                    model=self.options.model,
                    base_url=self.options.base_url,
                    api_key=None if provider == "local" else api_key,
                ),
                name="miniagent-start",
            )
        finally:
            self.spinner.hide()

    def close(self) -> None:
        """Stop the spinner and close the client (stops a local server).

        A local server finishes the prompt it is evaluating before it stops, which can take many
        seconds after a cancel. The close runs in a thread; if it is not done within
        ``_CLOSE_WAIT_SECONDS`` (or a Ctrl-C arrives), the process is marked to exit at once
        without waiting for it (``main`` then uses ``os._exit``).
        """
        self.spinner.close()
        client, self.client = self.client, None
        closer = getattr(client, "close", None)
        if callable(closer):
            with contextlib.suppress(KeyboardInterrupt):
                _in_thread(closer, name="miniagent-close", wait=_CLOSE_WAIT_SECONDS)

    def _before_tool_call(self, call: ToolCall) -> Approval:
        self.spinner.hide()
        policy = self.policy
        approval = Approval(True)
        if policy is not None:
            signals = self.signals
            if signals is not None and self.approval_mode == "ask":
                signals.interruptible = True
            try:
                approval = policy(call)
            finally:
                if signals is not None:
                    signals.interruptible = False
        if approval.approved:
            self.spinner.show(f"running {call.name}")
        return approval

    def run_once(self, prompt: str) -> tuple[StopReason | None, int]:
        """One ``run_agent`` call with signal handling; returns (stop reason, exit code).

        Raises:
            Exception: whatever ``run_agent`` raised (after the display was finished).
        """
        assert self.client is not None
        cancel = threading.Event()
        self.display.begin_run()
        with SignalCancel(cancel, self.spinner) as signals:
            self.signals = signals
            try:
                result = run_agent(
                    client=self.client,
                    system=self.system,
                    tools=self.tools,
                    user=prompt,
                    max_turns=self.options.max_turns,
                    cancel=cancel,
                    before_tool_call=self._before_tool_call,
                    session_path=self.options.session,
                    context_max_chars=self.options.context_max_chars,
                    on_event=self.display.on_event,
                    on_message=self.display.on_message,
                )
                stop_reason: StopReason = result.stop_reason
            except KeyboardInterrupt:
                # Raised by the handler into an approval prompt; the loop closed the calls.
                stop_reason = "aborted"
            finally:
                self.signals = None
                self.spinner.hide()
        code = exit_code_for_stop_reason(stop_reason)
        if stop_reason == "aborted" or signals.signum is not None:
            code = signals.exit_code(code)
        return stop_reason, code

    def report_stop(self, stop_reason: StopReason | None) -> None:
        if self.options.json:
            return
        if stop_reason == "max_turns":
            self.display.note(
                f"miniagent: stopped after {self.options.max_turns} "
                f"turn{'' if self.options.max_turns == 1 else 's'} (--max-turns); "
                "the last tool results are recorded"
            )
        elif stop_reason == "aborted":
            self.display.note("miniagent: aborted")

    def fail(self, error: BaseException) -> int:
        """Report a runtime error on stderr (and as a JSON object); return exit code 1."""
        text = _error_text(error)
        self.spinner.hide()
        if self.options.debug:
            traceback.print_exception(type(error), error, error.__traceback__, file=sys.stderr)
        _print_error(text)
        if self.options.json:
            self.display.finish_run(None, EXIT_ERROR, text)
        return EXIT_ERROR


_CLOSE_WAIT_SECONDS = 1.0
_exit_without_cleanup = False  # set when a client is still starting or closing: don't wait for it
_T = TypeVar("_T")


def _in_thread(function: Callable[[], _T], *, name: str, wait: float | None = None) -> tuple[bool, _T | None]:
    """Run ``function`` in a daemon thread while the main thread stays able to take signals.

    Returns ``(True, result)``, or ``(False, None)`` when ``wait`` seconds passed first. When it
    is still running (timed out, or a ``KeyboardInterrupt`` came), the process is marked to exit
    without waiting for it (``main`` uses ``os._exit``). Re-raises what ``function`` raised.
    """
    global _exit_without_cleanup
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["result"] = function()
        except BaseException as error:
            outcome["error"] = error

    worker = threading.Thread(target=target, name=name, daemon=True)
    worker.start()
    deadline = None if wait is None else time.monotonic() + wait
    try:
        while worker.is_alive() and (deadline is None or time.monotonic() < deadline):
            worker.join(0.05)
    finally:
        if worker.is_alive():
            _exit_without_cleanup = True
    if worker.is_alive():
        return False, None
    if "error" in outcome:
        raise outcome["error"]
    return True, outcome["result"]


def _print_error(text: str) -> None:
    sys.stderr.write(f"miniagent: error: {text}\n")
    sys.stderr.flush()


def _configure_logging(debug: bool) -> None:
    if debug:
        import logging

        logging.basicConfig(level=logging.DEBUG, stream=sys.stderr, format="miniagent: %(name)s: %(message)s")


def _check_options(options: _Options) -> None:
    if options.base_url and resolve_provider(options.provider, base_url=options.base_url) == "local":
        raise _Usage("--base-url does not apply to the local provider")


def _command_run(options: _Options, prompt: str) -> int:
    _configure_logging(options.debug)
    _check_options(options)
    if prompt == "-":
        prompt = sys.stdin.read().rstrip("\r\n")
    prompt = _valid_text(prompt)
    if not prompt.strip():
        raise _Usage("the prompt is empty")
    agent = _Agent(options, chat=False)
    try:
        agent.open()
        stop_reason, code = agent.run_once(prompt)
        if not agent.display.stream_text and not options.json:
            answer = agent.display.last_answer()
            if answer:
                agent.display.write_out(answer.rstrip("\n") + "\n")
        agent.display.finish_run(stop_reason, code)
        agent.report_stop(stop_reason)
        return code
    except Exception as error:
        return agent.fail(error)
    finally:
        agent.close()


def _valid_text(text: str) -> str:
    """Replace what was undecodable in argv or stdin (surrogate escapes) with U+FFFD."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _read_line(prompt: str, interactive: bool) -> str | None:
    if interactive:
        sys.stderr.write(prompt)
        sys.stderr.flush()
    line = sys.stdin.readline()
    return line if line else None


_CHAT_HELP = """miniagent chat: each line is one request to the model, on the same session.
  /exit or /quit (or Ctrl-D)  leave
  /help                       this text
  Ctrl-C                      cancel the answer in progress (at the prompt: leave)
"""


def _command_chat(options: _Options) -> int:
    _configure_logging(options.debug)
    _check_options(options)
    if options.session is None:
        options.session = default_session_path()
        sys.stderr.write(f"miniagent: session {options.session} (resume with --session {options.session})\n")
    agent = _Agent(options, chat=True)
    interactive = is_terminal(sys.stdin)
    code = EXIT_OK
    try:
        from .session import load_session

        restored = load_session(options.session)  # fail early on a corrupt file
        if restored and not options.json:
            sys.stderr.write(f"miniagent: resuming {len(restored)} messages\n")
        agent.open()
        if interactive and not options.json:
            sys.stderr.write("miniagent: type a message; /exit or Ctrl-D to leave\n")
        while True:
            try:
                line = _read_line("> ", interactive)
            except KeyboardInterrupt:
                sys.stderr.write("\n")
                return EXIT_SIGINT
            if line is None:
                if interactive:
                    sys.stderr.write("\n")
                return code
            text = _valid_text(line.strip())
            if not text:
                continue
            if text.lower() in ("/exit", "/quit"):
                return code
            if text.lower() == "/help":
                sys.stderr.write(_CHAT_HELP)
                continue
            try:
                stop_reason, run_code = agent.run_once(text)
            except SessionError as error:
                return agent.fail(error)
            except Exception as error:
                code = agent.fail(error)
                if not interactive:
                    return code
                continue
            agent.display.finish_run(stop_reason, run_code)
            if run_code == EXIT_SIGTERM:
                agent.report_stop(stop_reason)
                return run_code
            if stop_reason == "aborted":
                if not options.json:
                    agent.display.note("miniagent: cancelled; type another message or /exit")
                continue
            agent.report_stop(stop_reason)
            code = EXIT_OK
    except Exception as error:
        return agent.fail(error)
    finally:
        agent.close()


# --- the Typer app ----------------------------------------------------------------------------


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"miniagent {__version__}")
        raise typer.Exit(EXIT_OK)


def _check_provider(value: Optional[str]) -> Optional[str]:  # noqa: UP045 (typer reads it)
    if value in (None, ""):
        return None
    try:
        return check_provider(value)
    except ValueError:
        raise typer.BadParameter(f"{value!r} is not one of {', '.join(PROVIDERS)}") from None


def _check_approve(value: Optional[str]) -> Optional[str]:  # noqa: UP045
    if value is not None and value not in APPROVALS:
        raise typer.BadParameter(f"{value!r} is not one of {', '.join(APPROVALS)}")
    return value


ProviderOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option(
        "--provider",
        envvar="MINIAGENT_PROVIDER",
        metavar="local|openai|anthropic",
        callback=_check_provider,
        help="Model provider. Default: anthropic if ANTHROPIC_API_KEY is set, else openai if "
        "OPENAI_API_KEY is set or --base-url is given, else the embedded local model. "
        "MINIAGENT_API_KEY, when set, is the key sent to any server.",
    ),
]
ModelOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--model", envvar="MINIAGENT_MODEL", help="Model name (local: a .gguf path)."),
]
BaseUrlOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--base-url", envvar="MINIAGENT_BASE_URL", help="API base URL of the provider."),
]
MaxTurnsOpt = Annotated[
    int, typer.Option("--max-turns", min=1, help="Most model requests per run (exit 2 when reached).")
]
SessionOpt = Annotated[
    Optional[Path],  # noqa: UP045
    typer.Option("--session", dir_okay=False, help="JSONL session file to resume and append to."),
]
ContextOpt = Annotated[
    Optional[int],  # noqa: UP045
    typer.Option("--context-max-chars", min=1, help="Character budget of the context sent to the model."),
]
WorkspaceOpt = Annotated[
    Optional[Path],  # noqa: UP045
    typer.Option(
        "--workspace", exists=True, file_okay=False, help="Folder the tools work in. Default: current folder."
    ),
]
ApproveOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option(
        "--approve",
        metavar="ask|read-only|all",
        callback=_check_approve,
        help="Tool approval. Default: ask when stdin is a terminal, else read-only.",
    ),
]
SystemOpt = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--system", help="System prompt. Default: one naming the workspace and tools."),
]
JsonOpt = Annotated[
    bool, typer.Option("--json", help="Write one JSON object per message and a final result line.")
]
DebugOpt = Annotated[bool, typer.Option("--debug", help="Show tracebacks and debug logs on stderr.")]
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


@app.callback()
def _app(version: VersionOpt = False) -> None:
    """A small synchronous agent: a model, file and shell tools, and a loop you can stop.

    Exit codes: 0 complete, 2 max turns reached, 130 cancelled (Ctrl-C), 143 terminated
    (SIGTERM), 1 error, 64 usage error.
    """


@app.command("run")
def _run(
    prompt: Annotated[
        str, typer.Argument(metavar="PROMPT", help='The task. "-" reads it from standard input.')
    ],
    provider: ProviderOpt = None,
    model: ModelOpt = None,
    base_url: BaseUrlOpt = None,
    max_turns: MaxTurnsOpt = DEFAULT_MAX_TURNS,
    session: SessionOpt = None,
    context_max_chars: ContextOpt = None,
    workspace: WorkspaceOpt = None,
    approve: ApproveOpt = None,
    system: SystemOpt = None,
    json_output: JsonOpt = False,
    debug: DebugOpt = False,
) -> int:
    """Run one task and print the answer (streamed on a terminal)."""
    options = _Options(
        provider,
        model,
        base_url,
        max_turns,
        session,
        context_max_chars,
        (workspace or Path.cwd()).resolve(),
        approve,
        system,
        json_output,
        debug,
    )
    return _command_run(options, prompt)


@app.command("chat")
def _chat(
    provider: ProviderOpt = None,
    model: ModelOpt = None,
    base_url: BaseUrlOpt = None,
    max_turns: MaxTurnsOpt = DEFAULT_MAX_TURNS,
    session: SessionOpt = None,
    context_max_chars: ContextOpt = None,
    workspace: WorkspaceOpt = None,
    approve: ApproveOpt = None,
    system: SystemOpt = None,
    json_output: JsonOpt = False,
    debug: DebugOpt = False,
) -> int:
    """Chat: one run per line on the same session; /exit or end of input leaves."""
    options = _Options(
        provider,
        model,
        base_url,
        max_turns,
        session,
        context_max_chars,
        (workspace or Path.cwd()).resolve(),
        approve,
        system,
        json_output,
        debug,
    )
    return _command_chat(options)


def _click_error_classes() -> tuple[type[Exception], type[Exception]]:
    """(UsageError, ClickException) of the click that typer uses (vendored in typer >= 0.26)."""
    mro = typer.BadParameter.__mro__
    usage = next(c for c in mro if c.__name__ == "UsageError")
    base = next(c for c in mro if c.__name__ == "ClickException")
    return usage, base


def run_cli(argv: Sequence[str] | None = None) -> int:
    """Run the command line and return its exit code (never calls ``sys.exit``).

    Args:
        argv: the arguments without the program name (default ``sys.argv[1:]``).

    Returns:
        The exit code: 0 complete, 2 max_turns, 130 aborted by SIGINT, 143 by SIGTERM, 1 runtime
        error, 64 usage error (click's message is printed on stderr first).
    """
    usage_error, click_error = _click_error_classes()
    command = typer.main.get_command(app)
    try:
        result = command.main(
            args=list(sys.argv[1:] if argv is None else argv),
            prog_name="miniagent",
            standalone_mode=False,
        )
    except _Usage as error:
        _print_error(f"{error}\nTry 'miniagent --help' for help.")
        return EXIT_USAGE
    except usage_error as error:
        error.show()  # type: ignore[attr-defined]
        return EXIT_USAGE
    except click_error as error:
        error.show()  # type: ignore[attr-defined]
        return int(getattr(error, "exit_code", EXIT_ERROR))
    except typer.Abort:
        sys.stderr.write("\nminiagent: aborted\n")
        return EXIT_SIGINT
    except KeyboardInterrupt:
        sys.stderr.write("\nminiagent: aborted\n")
        return EXIT_SIGINT
    except typer.Exit as exit_:
        return int(exit_.exit_code)
    if isinstance(result, int):
        return result
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point: run the CLI and exit with its code.

    Args:
        argv: the arguments without the program name (default ``sys.argv[1:]``).

    Raises:
        SystemExit: always, with the exit code of ``run_cli``.
    """
    code = run_cli(argv)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    if _exit_without_cleanup:
        os._exit(code)  # the OS reclaims the local server still finishing its prompt
    sys.exit(code)


if __name__ == "__main__":
    main()
