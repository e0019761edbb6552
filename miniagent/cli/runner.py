"""One CLI command's agent: the client, tools and approval, one ``run_agent`` at a time under
signal handling, and the reporting of its end.

Invariants:

- The tools (MCP servers) and the client are started (and the client closed) in a daemon thread
  while the main thread waits in short joins, so a Ctrl-C, SIGTERM or SIGHUP (``StartSignals``)
  and ``--timeout`` are taken at once even when the start blocks in C code (llama.cpp); every
  process the start began is then killed. A thread
  still running when the command ends (a slow close, an interrupted start) is recorded in
  ``Runner.abandoned``; the command's ``Outcome`` carries it to ``main``, which then exits with
  ``os._exit`` instead of waiting for it. No module global decides how the process exits.
- Signals are handled only around a run (``SignalCancel``): the first sets the cancel event, a
  second exits at once after killing the run's commands.
- A runtime error is one line on stderr (a traceback only with ``--debug``) and exit code 1.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from ..agent import StopReason, exit_code_for_stop_reason, run_agent
from ..approval import TerminalApproval
from ..errors import MiniagentError, ProviderError, SessionError
from ..messages import Message, ToolCall
from ..model import DoneEvent, ModelEvent
from ..tools import Approval, BeforeToolCall, Tool
from .checks import UsageProblem, tool_output_chars
from .defaults import (
    EXIT_ERROR,
    EXIT_SIGPIPE,
    EXIT_TIMEOUT,
    default_system_prompt,
    resolve_approval,
    resolve_provider,
)
from .display import Display
from .options import Options
from .signals import SignalCancel, StartSignals
from .terminal import is_terminal

if TYPE_CHECKING:
    from ..mcp import MCPServerBase
    from ..model import ModelClient
    from ..session import SessionStore

__all__ = ["CLOSE_WAIT_SECONDS", "Outcome", "Runner", "TimedOut", "error_text"]

CUT_AT_LIMIT = frozenset(("length", "max_tokens"))
"""Finish reasons of a reply cut at the output-token limit (OpenAI ``length``, Anthropic
``max_tokens``)."""

CLOSE_WAIT_SECONDS = 1.0  # how long the end of a command waits for the client to close
_T = TypeVar("_T")


class TimedOut(Exception):
    """``--timeout`` ran out before the run started (e.g. while the model was starting)."""


class _Timer(threading.Timer):
    """Sets the run's cancel event when ``--timeout`` runs out; ``fired`` tells it did."""

    def __init__(self, seconds: float, cancel: threading.Event, display: Display, timeout: float) -> None:
        super().__init__(seconds, self._fire)
        self.daemon = True
        self.fired = False
        self._cancel = cancel
        self._display = display
        self._timeout = timeout

    def _fire(self) -> None:
        self.fired = True
        self._cancel.set()
        self._display.note(f"miniagent: --timeout {self._timeout:g}: time is up, cancelling")


@dataclass(frozen=True)
class Outcome:
    """How a command ended.

    Args:
        code: the exit code.
        abandon_threads: a client thread is still starting or closing; exit without waiting.
    """

    code: int
    abandon_threads: bool = False


def error_text(error: BaseException) -> str:
    """The text after ``miniagent: error:`` for ``error`` (no traceback, no exception name for
    the library's own errors and ``OSError``)."""
    if isinstance(error, SessionError):
        return f"session {error} (the file was left untouched)"
    if isinstance(error, MiniagentError | OSError):
        return str(error) or type(error).__name__
    return f"{type(error).__name__}: {error}"


class Runner:
    """What both commands share: the client, tools, approval, display and one run at a time.

    Use as a context manager: leaving it closes the client and the display.

    Args:
        options: the parsed options.
        display: the output mode (``choose_display``).
    """

    def __init__(self, options: Options, display: Display) -> None:
        self.options = options
        self.display = display
        self.client: ModelClient | None = None
        self.tools: list[Tool] = []
        self.mcp_servers: list[MCPServerBase] = []  # started by open(), stopped by close()
        self.policy: BeforeToolCall | None = None
        self.approval_mode = resolve_approval(options.approve, is_terminal(sys.stdin))
        self.system = ""
        self.abandoned = False  # a client thread still runs: the process must not wait for it
        self._deadline: float | None = None  # time.monotonic() when --timeout ends the run
        self.store: SessionStore | None = None  # the open session, for every run of the command
        self._signals: SignalCancel | None = None
        self._stop_commands: Callable[[], None] | None = None
        self.output_schema: dict[str, Any] | None = None  # --output-schema (run only)

    def __enter__(self) -> Runner:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def outcome(self, code: int) -> Outcome:
        """The command's ``Outcome`` with exit code ``code``."""
        return Outcome(code, self.abandoned)

    # --- start and stop ---------------------------------------------------------------------

    def start_clock(self) -> None:
        """Start the ``--timeout`` clock: the client start and the next run share it."""
        if self.options.timeout is not None:
            self._deadline = time.monotonic() + self.options.timeout

    def _remaining(self) -> float | None:
        return None if self._deadline is None else max(0.0, self._deadline - time.monotonic())

    def open_session(self) -> list[Message]:
        """Open and lock the session (``--session``) now, before the client starts, and keep it
        open for every run of the command; returns its messages (``[]`` without a session).

        A corrupt or locked session fails here at once; ``chat`` reads the file once and then
        goes on from memory (``run_agent(session=...)``).

        Raises:
            SessionError: a bad line (the file is left untouched) or another run holds the lock.
            OSError: the file cannot be read.
        """
        from ..session import JSONLSession

        if self.options.session is None:
            return []
        if self.store is None:
            self.store = JSONLSession(self.options.session)
        messages = self.store.load()
        self.display.restored(messages)  # a dangling call's result is shown with its tool name
        return messages

    def open(self) -> None:
        """Create the tools (starting the ``--mcp-config`` servers), the approval policy and the
        model client (imports the toolbox and providers now).

        The whole start runs in a thread (``_in_thread``) inside the ``--timeout`` clock, while the
        main thread takes signals: Ctrl-C, SIGTERM and SIGHUP (``StartSignals``) and the clock
        running out all stop it the same way: every process started so far (MCP servers, the
        local model's child) is killed at once and the start thread is abandoned.

        Raises:
            MiniagentError, OSError, ImportError: the client could not be created, or an MCP
                server could not be started (``MCPError``).
            KeyboardInterrupt: Ctrl-C (``Interrupted`` for SIGTERM, SIGHUP) while starting.
            TimedOut: ``--timeout`` ran out while starting.
        """
        provider = resolve_provider(self.options.provider, base_url=self.options.base_url)

        def start() -> ModelClient:
            self._make_tools()
            if provider == "local":
                self.display.progress("starting the local model")
            return self._create_client(provider)

        try:
            with StartSignals():
                self.client = self._in_thread(start, name="miniagent-start", wait=self._remaining())
        except KeyboardInterrupt:
            self._stop_started()
            raise
        finally:
            self.display.idle()
        if self.client is None:  # --timeout while it was starting (the thread is abandoned)
            self._stop_started()
            raise TimedOut(
                f"--timeout {self.options.timeout:g}: the MCP servers and the model did not start in time"
            )
        self._check_price()

    def _stop_started(self) -> None:
        """Kill every process the interrupted start has begun (MCP servers, the local model's
        child: all registered process groups) now, without waiting for the start thread."""
        from ..process.groups import kill_running_children

        kill_running_children()

    def _check_price(self) -> None:
        """``--max-cost`` needs the price of the model: refuse it now, before any request, when the
        client says it cannot price its model (``can_price()``).

        Raises:
            UsageProblem: the cost of this model cannot be known.
        """
        can_price = getattr(self.client, "can_price", None)
        if self.options.max_cost is not None and callable(can_price) and not can_price():
            raise UsageProblem(
                f"--max-cost {self.options.max_cost:g} needs the price of the model, which is not known "
                "here: install the price table (pip install 'miniagent[cost]') or use --max-total-tokens"
            )

    def _make_tools(self) -> None:
        from ..approval import ask_on_terminal, read_only
        from ..process.groups import kill_running_children
        from ..toolbox import default_tools

        workspace = self.options.folder
        self.tools = default_tools(
            workspace, max_output_chars=tool_output_chars(self.options.context_max_chars)
        )
        self._stop_commands = kill_running_children  # commands, grep, MCP servers
        tools = self._mcp_tools([t.name for t in self.tools])
        self.tools = self.tools + tools
        if self.approval_mode == "all":
            self.policy = None
        elif self.approval_mode == "read-only":
            chosen = self.options.approve == "read-only"  # else the default without a terminal
            self.policy = read_only(
                self.tools,
                why="read-only tools were chosen" if chosen else "this run is non-interactive",
                remedy="ask the user to re-run with --approve all",
            )
        else:
            self.policy = ask_on_terminal(self.tools)
        self.system = self.options.system or default_system_prompt(workspace, self.tools)

    def _mcp_tools(self, reserved: list[str]) -> list[Tool]:
        """Start the ``--mcp-config`` servers (in order) and return their tools; a name that
        collides with ``reserved`` or another server's becomes ``SERVER__TOOL``. Their results are
        capped like the built-in tools' (``tool_output_chars``).

        Raises:
            MCPError: a server could not be started or listed (the error names it).
            KeyboardInterrupt: Ctrl-C while a server was starting (``close`` stops the started).
        """
        if not self.options.mcp_config:
            return []
        from ..mcp import load_mcp_config, mcp_tools

        for path in self.options.mcp_config:
            for name, server in load_mcp_config(path, roots=[self.options.folder]).items():
                server.max_result_chars = tool_output_chars(self.options.context_max_chars)
                self.mcp_servers.append(server)
                self.display.progress(f"starting MCP server {name}")
                server.start()
        self.display.idle()
        return mcp_tools(self.mcp_servers, reserved=reserved)

    def _create_client(self, provider: str) -> ModelClient:
        from ..providers import create_client

        # MINIAGENT_API_KEY: a key for any server, also one on localhost (where the provider's
        # usual key variable is never sent).
        api_key = os.environ.get("MINIAGENT_API_KEY") or None
        try:
            return create_client(
                provider,
                model=self.options.model,
                base_url=self.options.base_url,
                api_key=None if provider == "local" else api_key,
                stream_timeout=self.options.stream_timeout,
                max_tokens=self.options.max_output_tokens,
            )
        except ValueError as error:  # a setting the library refuses (e.g. a proxy variable): usage
            raise UsageProblem(str(error)) from None

    def close(self) -> None:
        """Stop the spinner, stop the MCP servers (each closes its stdin, then stops its process
        group: about 1 s at most per server) and close the client (stops a local server).

        A local server finishes the prompt it is evaluating before it stops, which can take many
        seconds after a cancel. The close runs in a thread; if it is not done within
        ``CLOSE_WAIT_SECONDS`` (or a Ctrl-C arrives), ``abandoned`` is set and the process exits
        without waiting for it.
        """
        self.display.close()
        store, self.store = self.store, None
        if store is not None:
            store.close()  # releases the session's lock
        servers, self.mcp_servers = self.mcp_servers, []
        for server in servers:  # closes stdin, then stops the process group
            with contextlib.suppress(KeyboardInterrupt):
                server.close()
        client, self.client = self.client, None
        closer = getattr(client, "close", None)
        if callable(closer):
            with contextlib.suppress(KeyboardInterrupt):
                self._in_thread(closer, name="miniagent-close", wait=CLOSE_WAIT_SECONDS)

    def _in_thread(self, function: Callable[[], _T], *, name: str, wait: float | None = None) -> _T | None:
        """Run ``function`` in a daemon thread while the main thread stays able to take signals.

        Returns its result, or ``None`` when ``wait`` seconds passed first. When it is still
        running (timed out, or a ``KeyboardInterrupt`` came), ``abandoned`` is set. Re-raises
        what ``function`` raised.
        """
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
                self.abandoned = True
        if worker.is_alive():
            return None
        if "error" in outcome:
            raise outcome["error"]
        result: _T = outcome["result"]
        return result

    # --- one run ----------------------------------------------------------------------------

    def run_once(self, prompt: str) -> tuple[StopReason, int]:
        """One ``run_agent`` call with signal handling; returns (stop reason, exit code).

        Raises:
            Exception: whatever ``run_agent`` raised (the status line is cleared first).
        """
        assert self.client is not None
        cancel = threading.Event()
        self.display.begin_run()
        self.display.on_output_error = cancel.set  # nobody reads the answer: close the run
        timer = self._timer(cancel)
        with SignalCancel(
            cancel, on_cancel=self.display.cancelling, stop_commands=self._stop_commands
        ) as signals:
            self._signals = signals
            try:
                stop_reason = self._run_agent(prompt, cancel)
            except KeyboardInterrupt:
                # Raised by the handler into an approval prompt; the loop closed the calls.
                stop_reason = "aborted"
            finally:
                self._signals = None
                if timer is not None:
                    timer.cancel()
                self.display.idle()
        code = exit_code_for_stop_reason(stop_reason)
        if stop_reason == "aborted" and timer is not None and timer.fired and signals.signum is None:
            code = EXIT_TIMEOUT
        elif stop_reason == "aborted" or signals.signum is not None:
            code = signals.exit_code(code)
        return stop_reason, code

    def _timer(self, cancel: threading.Event) -> _Timer | None:
        """A started timer that sets ``cancel`` when the ``--timeout`` clock runs out."""
        remaining = self._remaining()
        if remaining is None:
            return None
        timer = _Timer(remaining, cancel, self.display, self.options.timeout or 0.0)
        timer.start()
        return timer

    def _run_agent(self, prompt: str, cancel: threading.Event) -> StopReason:
        """Run the agent; a final answer cut at the output-token limit raises ``ProviderError``
        (kind ``"max_output_tokens"``) after the run (the cut text is in the record)."""
        assert self.client is not None
        finish: list[str | None] = [None]  # the finish reason of the last streamed reply

        def on_event(event: ModelEvent) -> None:
            if isinstance(event, DoneEvent):
                finish[0] = event.stop_reason
            self.display.on_event(event)

        result = run_agent(
            client=self.client,
            system=self.system,
            tools=self.tools,
            user=prompt,
            max_turns=self.options.max_turns,
            cancel=cancel,
            before_tool_call=self._before_tool_call,
            session=self.store,
            context_max_chars=self.options.context_max_chars,
            on_event=on_event,
            on_message=self.display.on_message,
            max_total_tokens=self.options.max_total_tokens,
            max_cost_usd=self.options.max_cost,
            output_schema=self.output_schema,
        )
        self.display.run_usage = getattr(result, "usage", None)
        if result.stop_reason == "complete" and finish[0] in CUT_AT_LIMIT:
            limit = self.options.max_output_tokens
            raise ProviderError(
                f"the model's answer was cut at the output-token limit ({limit:,} tokens, stop reason "
                f"{finish[0]!r}); raise it with --max-output-tokens",
                kind="max_output_tokens",
            )
        return result.stop_reason

    def _before_tool_call(self, call: ToolCall) -> Approval:
        self.display.idle()
        policy = self.policy
        if not (isinstance(policy, TerminalApproval) and policy.will_ask(call)):
            self.display.tool_call(call)  # a person who is asked sees the whole call in the prompt
        approval = Approval(True)
        if policy is not None:
            signals = self._signals
            if signals is not None and self.approval_mode == "ask":
                signals.interruptible = True
            try:
                approval = policy(call)
            finally:
                if signals is not None:
                    signals.interruptible = False
        if approval.approved:
            self.display.progress(f"running {call.name}")
        return approval

    # --- reporting --------------------------------------------------------------------------

    def report_stop(self, stop_reason: StopReason | None) -> None:
        """A note on stderr when the run did not complete (``max_turns``, ``max_budget``, ``aborted``)."""
        turns = self.options.max_turns
        if stop_reason == "max_turns":
            self.display.note(
                f"miniagent: stopped after {turns} turn{'' if turns == 1 else 's'} (--max-turns); "
                "the last tool results are recorded"
            )
        elif stop_reason == "max_budget":
            self.display.note(
                "miniagent: stopped at the budget (--max-total-tokens / --max-cost); "
                "the last tool results are recorded"
            )
        elif stop_reason == "aborted":
            self.display.note("miniagent: aborted")

    def output_lost(self) -> bool:
        """Whether writing stdout failed (the run was cancelled then; see ``settle``)."""
        return self.display.output_error is not None

    def settle(self, code: int) -> int:
        """The exit code once the output is done: ``code``, or, when writing stdout failed,
        ``EXIT_SIGPIPE`` quietly for a closed pipe (``| head``) and 1 with one error line otherwise."""
        error = self.display.output_error
        if error is None:
            return code
        if isinstance(error, BrokenPipeError):
            return EXIT_SIGPIPE
        text = getattr(error, "strerror", None) or str(error)
        self.display.error(f"cannot write to standard output: {text}")
        return EXIT_ERROR

    def fail(self, error: BaseException) -> int:
        """Report a runtime error (one line on stderr, a traceback with ``--debug``); return 1
        (124 for ``TimedOut``)."""
        self.display.idle()
        if isinstance(error, TimedOut):
            self.display.error(str(error), EXIT_TIMEOUT)
            return EXIT_TIMEOUT
        if self.options.debug:
            traceback.print_exception(type(error), error, error.__traceback__, file=sys.stderr)
        self.display.error(error_text(error) + self._recovery_hint(error))
        return EXIT_ERROR

    def _recovery_hint(self, error: BaseException) -> str:
        """How to get out when the server refused the run's first request (e.g. a prompt over its
        context size) and the user message now sits in the session: ``""`` otherwise."""
        session = self.options.session
        refused = getattr(error, "status", None) in (400, 413, 422)
        first = not any(m.role == "assistant" for m in self.display.run_messages)
        if session is None or not refused or not first or not self.display.run_messages:
            return ""
        return (
            f"; the prompt stays in the session: send less with --context-max-chars N, "
            f"or drop it with: miniagent session pop {session}"
        )
