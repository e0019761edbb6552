"""One CLI command's runs: ``run_agent`` one at a time under signal handling and ``--timeout``,
with the start (``assemble``) and the close in threads the main thread can abandon.

Invariants:

- The tools (MCP servers) and the client are started (and the client closed) in a daemon thread
  while the main thread waits in short joins, so a Ctrl-C, SIGTERM or SIGHUP (``StartSignals``)
  and ``--timeout`` are taken at once even when the start blocks in C code (llama.cpp); every
  process the start began is then killed. A thread still running when the command ends (a slow
  close, an interrupted start) is recorded in ``Runner.abandoned``; the command's ``Outcome``
  carries it to ``main``, which then exits with ``os._exit`` instead of waiting for it. No module
  global decides how the process exits.
- Signals are handled only around a run (``SignalCancel``): the first sets the cancel event, a
  second exits at once after killing the run's commands.
- The display gets each run's ``RunResult`` from the command (``Display.finish_run``); how a
  command ends (error lines, notes, exit codes) is ``report``'s.
- Decisions recorded in the session for its pending calls (``miniagent session approve`` /
  ``deny``, ``pending.decisions``) answer those calls before the policy is asked.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from ..agent import RunResult, exit_code_for_stop_reason, run_agent
from ..messages import Message, ToolCall
from ..tools import Approval
from .assemble import Parts, assemble, check_price
from .defaults import EXIT_TIMEOUT, resolve_provider
from .display import Display
from .options import Options
from .report import Outcome, TimedOut
from .signals import SignalCancel, StartSignals
from .tracing import Tracing, start_tracing

if TYPE_CHECKING:
    from ..mcp import MCPServerBase
    from ..session import SessionStore

__all__ = ["CLOSE_WAIT_SECONDS", "Runner"]

CLOSE_WAIT_SECONDS = 1.0  # how long the end of a command waits for the client to close
POLL_SECONDS = 0.05  # how often a wait for a start or close thread looks at signals and the clock
_T = TypeVar("_T")


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


def _children_killer() -> Callable[[], None]:
    """``process.groups.kill_running_children`` (imported now, not with the CLI): it kills every
    registered process group at once (commands, grep, MCP servers, the local model's child) and
    is safe in a signal handler."""
    from ..process.groups import kill_running_children

    return kill_running_children


def _stop_started() -> None:
    """Kill every process an interrupted start has begun (MCP servers, the local model's child:
    all registered process groups) now, without waiting for the start thread."""
    kill_running_children = _children_killer()
    kill_running_children()


class Runner:
    """One run at a time for a command, with its session, its parts and the threads it started.

    Use as a context manager: leaving it closes the session, the MCP servers, the client and the
    display.

    Args:
        options: the parsed options.
        display: the output mode (``choose_display``).
        output_schema: ``--output-schema`` (``run`` only): the JSON Schema of every run's answer.
        continuing: ``run --continue``: the run goes on from the session without a prompt.
    """

    def __init__(
        self,
        options: Options,
        display: Display,
        output_schema: dict[str, Any] | None = None,
        *,
        continuing: bool = False,
    ) -> None:
        self.options = options
        self.display = display
        self.output_schema = output_schema
        self.continuing = continuing
        self.decisions: dict[str, Approval] = {}  # recorded for the session's pending calls
        self.parts: Parts | None = None  # set by open()
        self.mcp_servers: list[MCPServerBase] = []  # started by open(), stopped by close()
        self.abandoned = False  # a client thread still runs: the process must not wait for it
        self._deadline: float | None = None  # time.monotonic() when --timeout ends the run
        self.store: SessionStore | None = None  # the open session, for every run of the command
        self._signals: SignalCancel | None = None
        self.tracing: Tracing | None = None  # the OTEL_* variables asked for traces (open())

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
        from ..pending import decisions
        from ..session import JSONLSession

        if self.options.session is None:
            return []
        if self.store is None:
            self.store = JSONLSession(self.options.session)
        messages = self.store.load()
        self.display.restored(messages)  # a dangling call's result is shown with its tool name
        self.decisions = decisions(messages)
        return messages

    def open(self) -> None:
        """Assemble the command's parts (``assemble``: the tools, starting the ``--mcp-config``
        servers, the approval policy, the system prompt and the model client).

        The whole start runs in a thread (``_in_thread``) inside the ``--timeout`` clock, while the
        main thread takes signals: Ctrl-C, SIGTERM and SIGHUP (``StartSignals``) and the clock
        running out all stop it the same way: every process started so far (MCP servers, the
        local model's child) is killed at once and the start thread is abandoned.

        Raises:
            MiniagentError, OSError, ImportError: the client could not be created, or an MCP
                server could not be started (``MCPError``).
            UsageProblem: a client setting is refused, or ``--max-cost`` for a model without a price.
            KeyboardInterrupt: Ctrl-C (``Interrupted`` for SIGTERM, SIGHUP) while starting.
            TimedOut: ``--timeout`` ran out while starting.
        """
        options = self.options
        provider = resolve_provider(options.provider, base_url=options.base_url)

        def start() -> Parts:
            return assemble(options, provider, self.display, self.mcp_servers, continuing=self.continuing)

        try:
            with StartSignals():
                self.parts = self._in_thread(start, name="miniagent-start", wait=self._remaining())
        except KeyboardInterrupt:
            _stop_started()
            raise
        finally:
            self.display.idle()
        if self.parts is None:  # --timeout while it was starting (the thread is abandoned)
            _stop_started()
            starting = "the MCP servers and the model" if options.mcp_config else "the model"
            raise TimedOut(f"--timeout {options.timeout:g}: {starting} did not start in time")
        check_price(options, self.parts.client)
        self.tracing = start_tracing(self.display.status)

    def close(self) -> None:
        """Stop the spinner, stop the MCP servers (each closes its stdin, then stops its process
        group: about 1 s at most per server) and close the client (stops a local server).

        A local server finishes the prompt it is evaluating before it stops, which can take many
        seconds after a cancel. The close runs in a thread; if it is not done within
        ``CLOSE_WAIT_SECONDS`` (or a Ctrl-C arrives), ``abandoned`` is set and the process exits
        without waiting for it.
        """
        self.display.close()
        tracing, self.tracing = self.tracing, None
        if tracing is not None:
            with contextlib.suppress(KeyboardInterrupt):
                tracing.close()  # the spans of every run were flushed at its end already
        store, self.store = self.store, None
        if store is not None:
            store.close()  # releases the session's lock
        servers, self.mcp_servers = self.mcp_servers, []
        for server in servers:  # closes stdin, then stops the process group
            with contextlib.suppress(KeyboardInterrupt):
                server.close()
        parts, self.parts = self.parts, None
        closer = getattr(parts.client if parts is not None else None, "close", None)
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
        done = threading.Event()

        def target() -> None:
            try:
                outcome["result"] = function()
            except BaseException as error:
                outcome["error"] = error
            finally:
                done.set()

        # Waits on an Event, not Thread.join: on CPython 3.11 a KeyboardInterrupt inside
        # join(timeout) marks the running thread stopped (is_alive() turns false), so the thread
        # would not be counted as abandoned and the exit would wait for it. In short waits: a
        # signal that lands just before a wait without a timeout blocks would be seen only when
        # the wait ends.
        deadline = None if wait is None else time.monotonic() + wait
        try:
            threading.Thread(target=target, name=name, daemon=True).start()
            while not done.wait(POLL_SECONDS) and (deadline is None or time.monotonic() < deadline):
                pass
        finally:
            if not done.is_set():
                self.abandoned = True
        if not done.is_set():
            return None
        if "error" in outcome:
            raise outcome["error"]
        result: _T = outcome["result"]
        return result

    # --- one run ----------------------------------------------------------------------------

    def run_once(self, prompt: str | None) -> tuple[RunResult, int]:
        """One ``run_agent`` call with signal handling (``open`` first); returns its result and
        the exit code (``128 + signal`` after a signal, ``EXIT_TIMEOUT`` after ``--timeout``).
        ``prompt`` ``None``: go on from the session without a new user message.

        A signal that interrupts an approval prompt ends the run ``aborted`` (the loop closed its
        calls); its result then holds this run's committed messages and no usage.

        Raises:
            Exception: whatever ``run_agent`` raised (the status line is cleared first).
        """
        assert self.parts is not None, "open() first"
        cancel = threading.Event()
        self.display.begin_run()
        self.display.on_output_error = cancel.set  # nobody reads the answer: close the run
        timer = self._timer(cancel)
        stop_commands = _children_killer()  # the second signal kills the run's commands
        with SignalCancel(cancel, on_cancel=self.display.cancelling, stop_commands=stop_commands) as signals:
            self._signals = signals
            try:
                result = self._run_agent(prompt, cancel)
            except KeyboardInterrupt:
                # Raised by the handler into an approval prompt; the loop closed the calls.
                result = RunResult(list(self.display.run_messages), "aborted")
            finally:
                self._signals = None
                if timer is not None:
                    timer.cancel()
                self.display.idle()
                if self.tracing is not None:  # the run's spans are ended: send them now
                    self.tracing.flush()
        code = exit_code_for_stop_reason(result.stop_reason)
        aborted = result.stop_reason == "aborted"
        if aborted and timer is not None and timer.fired and signals.signum is None:
            code = EXIT_TIMEOUT
        elif aborted or signals.signum is not None:
            code = signals.exit_code(code)
        return result, code

    def _timer(self, cancel: threading.Event) -> _Timer | None:
        """A started timer that sets ``cancel`` when the ``--timeout`` clock runs out."""
        remaining = self._remaining()
        if remaining is None:
            return None
        timer = _Timer(remaining, cancel, self.display, self.options.timeout or 0.0)
        timer.start()
        return timer

    def _run_agent(self, prompt: str | None, cancel: threading.Event) -> RunResult:
        """Run the agent; an answer that ended unnaturally raises ``IncompleteResponseError``
        from the loop (nothing of it committed; ``report.fail`` words it)."""
        assert self.parts is not None, "open() first"
        return run_agent(
            client=self.parts.client,
            system=self.parts.system,
            tools=self.parts.tools,
            user=prompt,
            max_turns=self.options.max_turns,
            cancel=cancel,
            before_tool_call=self._before_tool_call,
            session=self.store,
            context_max_chars=self.options.context_max_chars,
            on_event=self.display.on_event,
            on_message=self.display.on_message,
            max_total_tokens=self.options.max_total_tokens,
            max_cost_usd=self.options.max_cost,
            output_schema=self.output_schema,
            compaction=self.parts.compaction,
            max_repeats=self.options.max_repeats or None,
            tracer=self.tracing.tracer if self.tracing is not None else None,
        )

    def _before_tool_call(self, call: ToolCall) -> Approval:
        """A decision recorded for the call, else the policy's; a call no person is asked about
        is shown as a tool line first, and a signal may interrupt only a policy that waits for a
        person (the prompt shows the call)."""
        assert self.parts is not None, "open() first"
        self.display.idle()
        recorded = self.decisions.pop(call.id, None)
        if recorded is not None:
            self.display.tool_call(call)
            return recorded
        policy = self.parts.policy
        asks = policy.will_ask(call)
        if not asks:
            self.display.tool_call(call)
        signals = self._signals
        if signals is not None and asks:
            signals.interruptible = True
        try:
            approval = policy(call)
        finally:
            if signals is not None:
                signals.interruptible = False
        if approval.approved:
            self.display.progress(f"running {call.name}")
        return approval
