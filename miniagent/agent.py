"""The agent loop: ``run_agent`` (spec Part III Chapter 3, DESIGN.md "The loop").

The model proposes tool calls; the loop decides whether they run, records every result, and
decides when to stop. Invariants, each tested:

- What is not committed does not exist: a turn's text and calls live in locals until its stream
  ends; cancel or an exception before the commit discards them.
- Nothing is committed after a cancel is seen: checkpoint 1 (after the session load), every
  stream event and checkpoint 2 (right after the stream), checkpoint 3 (after approval, before a
  tool starts), checkpoint 4 (after each recorded result).
- A tool that started is waited for and its real result recorded; cancelling is not undo.
- Every call id in a committed assistant message gets exactly one tool message, also after a
  cancel (``aborted before execution`` / ``aborted during execution``) or a failure
  (``approval failed`` / ``tool execution failed``, then ``not executed after an earlier failure``);
  on failure the original exception object is re-raised and no exception text is recorded.
- ``max_turns`` counts this run's requests only; the restored history does not use it up. The
  budgets (``max_total_tokens``, ``max_cost_usd``) count this run's ``usage`` and are checked
  before each request, after the previous turn's calls were all answered.
- Call ids are unique within the record: a call whose id repeats one already received (in this
  turn, an earlier one, or the restored history) gets ``unique_call_id``'s suffix as it arrives,
  so every result pairs with one call.
- A turn's reasoning blocks are committed with its text and calls, never on their own; every
  ``UsageEvent`` is added to ``RunResult.usage`` as it arrives (the tokens were spent, even
  when the turn is then dropped); a request whose stream brought none still counts, as a
  request whose usage is unknown (``Tally.add_unreported``), never as a free one.
- A cut or failed answer is never complete (DESIGN.md "Round 3 contracts"): a turn whose
  ``DoneEvent`` says it ended unnaturally (``DoneEvent.incomplete``) and that holds no tool
  call raises ``IncompleteResponseError`` after checkpoint 2, nothing of it committed; with tool
  calls it is committed (a cut call carries an input error, so its result says it was cut).
- Unattended runs (DESIGN.md "Round 3 contracts", ``miniagent.pending``): a hook's
  ``Approval.defer()`` stops the run ``deferred`` before that call, after one ``pending`` note;
  a later run asks the hook again for each pending call before anything else, and writes a
  ``started`` note before a pending call's tool runs, so it runs at most once, also across
  ``kill -9``. Notes stay in the record and never reach the model (``conversation``).
- ``max_repeats`` (``miniagent.repeats``): the same call with the same result that many times in
  a row stops the run ``no_progress`` before the next request.
- ``tracer`` (``miniagent.tracing``): the run, each request's stream and each answered call pass
  through the run's trace, which hands back what it was given; without one, no tracing work.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from ._log import INFO
from ._loop_logs import LoopLogs, log
from .budget import Budget, Tally
from .compaction import Compaction, Compactor, context_for
from .context import MessageWindow
from .errors import EmptyResponseError, IncompleteResponseError
from .messages import MISSING_RESULT, Message, Reasoning, ToolCall, unique_call_id
from .model import (
    DoneEvent,
    ModelClient,
    ModelEvent,
    ModelRequest,
    ReasoningEvent,
    TextEvent,
    ToolCallEvent,
    ToolSpec,
    UsageEvent,
)
from .output import OutputSchema
from .pending import INTERRUPTED_AFTER_START, note
from .repeats import Repeats, check_max_repeats
from .result import RunResult, StopReason, exit_code_for_stop_reason
from .resume import check_start, repair_open_calls
from .session import JSONLSession, PathLike, SessionStore
from .tools import Approval, BeforeToolCall, Tool, ToolResult, check_input
from .tracing import RunStart, RunTrace, TracedClient, Tracer

if TYPE_CHECKING:  # annotations only: the core never starts a thread
    import threading

__all__ = [
    "StopReason",
    "RunResult",
    "run_agent",
    "exit_code_for_stop_reason",
    "ABORTED_BEFORE_EXECUTION",
    "ABORTED_DURING_EXECUTION",
    "NOT_EXECUTED_AFTER_FAILURE",
    "TOOL_EXECUTION_FAILED",
    "APPROVAL_FAILED",
    "NOT_APPROVED",
    "MISSING_RESULT",
    "INTERRUPTED_AFTER_START",
]

# Literal texts of the contract (DESIGN.md, "The loop").
ABORTED_BEFORE_EXECUTION = "aborted before execution"
ABORTED_DURING_EXECUTION = "aborted during execution"
NOT_EXECUTED_AFTER_FAILURE = "not executed after an earlier failure"
TOOL_EXECUTION_FAILED = "tool execution failed"
APPROVAL_FAILED = "approval failed"
NOT_APPROVED = "tool call not approved"


def run_agent(
    *,
    client: ModelClient,
    system: str,
    tools: Sequence[Tool],
    user: str | None,
    max_turns: int,
    cancel: threading.Event | None = None,
    before_tool_call: BeforeToolCall | None = None,
    session_path: PathLike | None = None,
    context_max_chars: int | None = None,
    on_event: Callable[[ModelEvent], None] | None = None,
    on_message: Callable[[Message], None] | None = None,
    session_fsync: bool = False,
    session: SessionStore | None = None,
    max_total_tokens: int | None = None,
    max_cost_usd: float | None = None,
    output_schema: dict[str, Any] | Any | None = None,
    compaction: Compaction | None = None,
    max_repeats: int | None = None,
    tracer: Tracer | None = None,
) -> RunResult:
    """Run the agent loop in the caller's thread until it stops with one of the six stop reasons.

    Args:
        client: the model (``stream(request)`` yields events).
        system: the system prompt.
        tools: the tools the model may call (names must be unique).
        user: this run's user message; ``None`` goes on from the restored record without one
            (after pending calls, tool results or a user message; not after the model's answer).
            Calls that wait for a decision are always settled first: ``before_tool_call`` is
            asked again for each, in order (approve: a ``started`` note, then it runs and its
            result is recorded; refuse: the reason is recorded; defer: the run stops
            ``deferred`` again and ``user`` is not written); then ``user`` is recorded, if given.
        max_turns: the most model requests this run makes (>= 0); the last turn's tools still run.
        cancel: set it from any thread to stop; checked at the spec's four checkpoints and on
            every streamed event. ``None``: no cancellation.
        before_tool_call: approval hook asked before each call; ``None`` approves everything.
            ``Approval.defer()`` stops the run ``deferred`` before that call (a ``pending`` note
            is recorded; ``RunResult.pending`` lists it and the later calls of its turn).
        session_path: JSONL file to restore from and append to (a ``JSONLSession`` opened and
            locked for the run, closed at its end); ``None``: nothing persisted.
        context_max_chars: character budget of what is sent to the model (the record stays
            whole); ``None``: no trimming.
        on_event: sees each streamed event as it arrives (tentative; for live display).
        on_message: sees each message right after it is committed (memory and file).
        session_fsync: fsync the ``session_path`` file after every line (durability over speed).
        session: an open ``SessionStore`` to restore from and append to, instead of
            ``session_path``; the run does not close it, so the next run on the same store goes on
            from this one's record (a ``JSONLSession`` does not read its file again).
        max_total_tokens: stop with ``max_budget`` before a request once this run's
            ``usage.input_tokens + usage.output_tokens`` has reached it (an int >= 0); ``None``:
            no limit. Counts what the client reports in ``UsageEvent``s; a request that reported
            none makes the next check raise ``ValueError`` (its usage is unknown, never zero).
        max_cost_usd: the same for ``usage.cost_usd`` (US dollars, a finite number >= 0). A cost
            that cannot be known is never taken as zero: ``ValueError`` before anything is
            written when the client says up front it cannot price its model
            (``client.can_price()`` is false), else at the first check after a request whose
            usage came without a cost.
        output_schema: the final answer must be one JSON value valid against this JSON Schema
            (a dict), or against the schema of this type (a dataclass, a ``TypedDict``, any hint
            ``miniagent.schema`` describes; the output is then converted to it). An invalid
            answer gets a user message quoting the problem and the loop goes on within
            ``max_turns`` (DESIGN.md "Structured output"). ``None``: any text completes.
        compaction: before a request that would reach ``Compaction.trigger_tokens``, one summary
            request (counts against the budgets, not ``max_turns``) committed as a marked message;
            later requests send it and the newest whole units (``miniagent.compaction``).
        max_repeats: stop with ``no_progress`` before a request once this run has answered the
            same call (same tool name, same arguments as canonical JSON) with the same result
            that many times in a row (an int >= 2; calls of ``Tool.repeatable`` tools never
            count; ``miniagent.repeats``). ``None``: no such stop.
        tracer: sees the run, each model request and each answered tool call
            (``miniagent.tracing``; ``miniagent.otel.OtelTracer`` makes OpenTelemetry spans of
            them). ``None``: no tracing work at all.

    Returns:
        ``RunResult(messages, stop_reason, usage, output, pending)``: every message (restored
        ones first, notes included), the sum of this run's ``UsageEvent``s, the valid
        structured answer (``None`` without ``output_schema``) and the calls left pending.

    Raises:
        EmptyResponseError: a turn ended naturally with neither text nor calls (nothing
            committed).
        IncompleteResponseError: a turn without calls ended other than naturally: cut by the
            output-token limit or the context window, stopped by a content filter, refused, or
            ended by a provider error (``.reason``, ``.detail``, ``.text``; nothing committed).
        SessionError: the session has a bad line or is locked by another run.
        TypeError: ``session`` is not a ``SessionStore``, ``output_schema`` is neither a dict
            nor a type with a JSON Schema form, or ``compaction`` is not a ``Compaction``.
        ValueError: bad arguments (``max_turns`` not an int >= 0, duplicate tool names, both
            ``session`` and ``session_path`` (or ``session_fsync``) given, a bad
            ``max_total_tokens`` / ``max_cost_usd``, a cost budget the client cannot price, a
            budget whose requests came without usage, a context budget < 1, a ``user`` message
            larger than the context budget, ``user=None`` on a record with nothing to go on
            from, a ``max_repeats`` that is not an int >= 2 (each raised before anything is
            written), or, later, a newest unit larger than the context budget).
        OSError: appending to the session failed.
        Exception: whatever the model client, the approval hook or a tool raised, the original
            object, after the current and remaining calls were closed.
    """
    if isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 0:
        raise ValueError(f"max_turns must be an int >= 0, got {max_turns!r}")
    budget = Budget.checked(max_total_tokens, max_cost_usd, client)
    check_max_repeats(max_repeats)
    loop = _Loop(client, system, tools, cancel, before_tool_call, on_event, on_message)
    loop.budget = budget
    if max_repeats is not None:
        loop.repeats = Repeats(max_repeats, {t.name for t in tools if t.repeatable})
    if output_schema is not None:
        loop.output = OutputSchema.of(output_schema)
    loop.compaction = compaction
    if session is not None:  # the caller closes it
        _check_store(session, session_path, session_fsync)
    owned = JSONLSession(session_path, fsync=session_fsync) if session_path is not None else None
    store = session if owned is None else owned
    try:
        if tracer is None:
            return loop.run(user, max_turns, store, context_max_chars)
        with tracer.trace_run(RunStart(client, system, tools, user, max_turns, cancel)) as trace:
            loop.client, loop.trace = TracedClient(client, trace), trace
            result = loop.run(user, max_turns, store, context_max_chars)
            trace.finish(result)
            return result
    finally:
        if owned is not None:
            owned.close()


def _check_store(session: object, session_path: PathLike | None, session_fsync: bool) -> None:
    """Refuse ``session=`` together with the file options, or a ``session`` that is no store."""
    if session_path is not None or session_fsync:
        raise ValueError("pass either session= or session_path= (with session_fsync=), not both")
    if not isinstance(session, SessionStore):
        raise TypeError(
            f"session must be a SessionStore (e.g. JSONLSession(path)), not {type(session).__name__};"
            " a file path goes to session_path="
        )


class _Loop(LoopLogs):
    """One run's state and its named steps; ``run`` reads like the spec's loop."""

    def __init__(
        self,
        client: ModelClient,
        system: str,
        tools: Sequence[Tool],
        cancel: threading.Event | None,
        before_tool_call: BeforeToolCall | None,
        on_event: Callable[[ModelEvent], None] | None,
        on_message: Callable[[Message], None] | None,
    ) -> None:
        self.tools_by_name: dict[str, Tool] = {}
        for tool in tools:
            if tool.name in self.tools_by_name:
                raise ValueError(f"two tools are named {tool.name!r}")
            self.tools_by_name[tool.name] = tool
        self.specs = tuple(ToolSpec(t.name, t.description, t.input_schema, t.strict) for t in tools)
        self.client = client
        self.system = system
        self.cancel = cancel
        self.before_tool_call = before_tool_call
        self.on_event = on_event
        self.on_message = on_message
        self.messages: list[Message] = []  # the record: every committed message, notes included
        self.conversation: list[Message] = []  # what requests are built from: the record without notes
        self.session: SessionStore | None = None
        self.logging = log.enabled(INFO)  # whether the request/tool records can reach a handler
        self.usage = Tally()
        self.call_ids: set[str] | None = None  # every call id of the record, built on first use
        self.budget: Budget | None = None
        self.output: OutputSchema | None = None
        self.compaction: Compaction | None = None
        self.repeats: Repeats | None = None
        self.trace: RunTrace | None = None

    # --- the loop -------------------------------------------------------------------------------

    def run(
        self,
        user: str | None,
        max_turns: int,
        session: SessionStore | None,
        context_max_chars: int | None,
    ) -> RunResult:
        trimmer = context_for(
            self.conversation, context_max_chars, self.compaction, self.usage, self.system, self.specs
        )
        self.restore(session)
        if self.cancelled():  # checkpoint 1: nothing written
            return self.stop("aborted")
        message = None if user is None else Message("user", user)
        check_start(self.messages, message, trimmer)  # fails before any write
        try:
            self.close_open_calls()  # resume repair, then the pending calls (may stop deferred)
            if message is not None:
                self.record(message)
            for turn in range(1, max_turns + 1):
                if isinstance(trimmer, Compactor):
                    self.compact_if_due(trimmer)
                limit = self.limit_reached()
                if limit is not None:
                    return self.stop(limit)
                window = trimmer.window() if trimmer else MessageWindow(self.conversation)
                started = self.log_request(turn, window) if self.logging else 0.0
                text, calls, reasoning, ending = self.stream_turn(window)
                if self.logging:
                    self.log_request_done(turn, started, text, calls)
                if not calls:
                    _check_answer(text, ending)
                self.record(Message("assistant", text, tuple(calls), reasoning=reasoning))
                if not calls:
                    if self.output is None:
                        return self.stop("complete")
                    value, problem = self.output.parse(text, self.cancel)
                    if problem is None:
                        return self.stop("complete", value)
                    if self.cancelled():  # the check saw the cancel: no feedback is written
                        return self.stop("aborted")
                    self.record(Message("user", self.output.feedback(problem)))
                    continue
                self.run_tool_calls(calls)
        except _Aborted:
            return self.stop("aborted")
        except _Deferred as deferred:
            return self.stop("deferred", pending=deferred.calls)
        return self.stop("max_turns")

    def stream_turn(
        self, window: MessageWindow
    ) -> tuple[str, list[ToolCall], tuple[Reasoning, ...], DoneEvent | None]:
        """Stream one turn into locals (text, calls, reasoning, and the ``DoneEvent`` that said
        the turn was incomplete, if one did); nothing is committed here. The request counts in
        ``usage`` as unreported when no ``UsageEvent`` came and the stream ended or sent events.

        Raises ``_Aborted`` when cancelled during the stream or at checkpoint 2; other exceptions
        of the client propagate unless the run was cancelled meanwhile.
        """
        schema = self.output.schema if self.output is not None else None
        request = ModelRequest(self.system, window, self.specs, self.cancel, schema)
        parts: list[str] = []
        calls: list[ToolCall] = []
        reasoning: list[Reasoning] = []
        ending: DoneEvent | None = None
        events: Iterator[ModelEvent] | None = None
        cancel, on_event = self.cancel, self.on_event  # read once per turn, not per event
        reported = sent = False  # a UsageEvent came; the request got an answer (an event, or its end)
        try:
            events = iter(self.client.stream(request))
            for event in events:
                sent = True
                if cancel is not None and cancel.is_set():
                    raise _Aborted
                if isinstance(event, TextEvent):
                    parts.append(event.text)
                elif isinstance(event, ToolCallEvent):
                    event = self.unique_call(event)
                    calls.append(event.call)
                elif isinstance(event, UsageEvent):
                    self.usage.add(event.usage)
                    reported = True
                elif isinstance(event, ReasoningEvent):
                    reasoning.append(event.reasoning)
                elif isinstance(event, DoneEvent) and event.incomplete is not None:
                    ending = event
                if on_event is not None:
                    on_event(event)
            sent = True
        except Exception:
            if self.cancelled():
                raise _Aborted from None
            raise
        finally:
            _close(events)
            if sent and not reported:
                self.usage.add_unreported()
        if self.cancelled():  # checkpoint 2: a stream that ignored the cancel commits nothing
            raise _Aborted
        return "".join(parts), calls, tuple(reasoning), ending

    def unique_call(self, event: ToolCallEvent) -> ToolCallEvent:
        """``event`` with its call id made unique within the record (``unique_call_id``)."""
        taken = self.call_ids
        if taken is None:
            taken = self.call_ids = {c.id for m in self.messages for c in m.tool_calls}
        call = event.call
        if call.id not in taken:  # the usual case, without a call
            taken.add(call.id)
            return event
        unique = unique_call_id(call.id, taken)
        return ToolCallEvent(ToolCall(unique, call.name, call.input, call.input_error))

    def run_tool_calls(self, calls: list[ToolCall], resumed: bool = False) -> None:
        """Answer every call in order, each with exactly one tool message, unless the hook defers
        one (``_Deferred``). ``resumed``: the calls were pending (their deferral is recorded, and
        each tool's start is noted before it runs)."""
        for index, call in enumerate(calls):
            approval = self.ask_approval(calls, index)
            self.checkpoint(calls, index)  # checkpoint 3: the tool never starts
            if approval.deferred:
                self.defer(calls, index, approval.reason, resumed)
            if self.trace is None:
                content, is_error = self.tool_result(calls, index, approval, resumed)
            else:
                answer = partial(self.tool_result, calls, index, approval, resumed)
                content, is_error = self.trace.tool_call(call, approval, answer)
            self.record_result(call, content, is_error)
            if self.repeats is not None:
                self.repeats.answered(call, content, is_error)
            self.checkpoint(calls, index + 1)  # checkpoint 4: the real result is kept

    def defer(self, calls: list[ToolCall], index: int, reason: str, resumed: bool) -> None:
        """Stop before ``calls[index]``: it and the later calls stay pending, without a result.
        A first deferral records one ``pending`` note (a resumed call already has one)."""
        if not resumed:
            self.record(note(calls[index].id, "pending", reason))
        raise _Deferred(tuple(calls[index:]))

    def tool_result(
        self, calls: list[ToolCall], index: int, approval: Approval, resumed: bool = False
    ) -> tuple[str, bool]:
        """Refusal, unknown tool, bad input, or the tool's own result, as (content, is_error).
        A resumed call's ``started`` note is committed right before its tool runs."""
        call = calls[index]
        if not approval.approved:
            return approval.reason or NOT_APPROVED, True
        tool = self.tools_by_name.get(call.name)
        if tool is None:
            return f"unknown tool: {call.name}", True
        problem = call.input_error or check_input(tool.input_schema, call.input, cancel=self.cancel)
        if problem:
            self.checkpoint(calls, index)  # a check stopped by the cancel: the tool never starts
            return f"invalid input for {call.name}: {problem}", True
        if resumed:
            self.record(note(call.id, "started"))  # stored before the tool starts: at most once
        result = self.execute(calls, index, tool)
        return result.content, result.is_error

    # --- named steps ----------------------------------------------------------------------------

    def compact_if_due(self, context: Compactor) -> None:
        """Before a request, when compaction is due and no limit stops the run first (a budget,
        ``max_repeats``): the summary request, then its marked message is committed (``_Aborted``
        when cancelled)."""
        if not context.due() or self.limit_reached() is not None:
            return
        summary = context.summarise(self.client, self.system, self.cancel)
        if self.cancelled():
            raise _Aborted
        if summary is not None:
            self.record(summary)

    def cancelled(self) -> bool:
        return self.cancel is not None and self.cancel.is_set()

    def restore(self, session: SessionStore | None) -> None:
        """Load the session's record (the conversation: the record without its notes)."""
        self.session = session
        if session is not None:
            self.messages.extend(session.load())
            self.conversation.extend(m for m in self.messages if m.state is None)

    def limit_reached(self) -> StopReason | None:
        """The stop before a request: a budget reached, or the same call repeated to the limit."""
        if self.budget is not None and self.budget.reached(self.usage):
            return "max_budget"
        if self.repeats is not None and self.repeats.stalled:
            return "no_progress"
        return None

    def record(self, message: Message) -> None:
        """Commit: memory first, then the session file, then tell the observer."""
        self.messages.append(message)
        if message.state is None:
            self.conversation.append(message)
        if self.session is not None:
            self.session.append(message)
        if self.on_message is not None:
            self.on_message(message)

    def record_result(self, call: ToolCall, content: str, is_error: bool = False) -> None:
        self.record(Message("tool", content, (), call.id, is_error))

    def checkpoint(self, calls: list[ToolCall], start: int) -> None:
        """If cancelled, answer ``calls[start:]`` as aborted and stop the run."""
        if self.cancelled():
            self.close_aborted_calls(calls, start)
            raise _Aborted

    def ask_approval(self, calls: list[ToolCall], index: int) -> Approval:
        """Ask the hook; if it raises, close the calls (as aborted when cancelled) first."""
        if self.before_tool_call is None:
            return Approval(True)
        try:
            return self.before_tool_call(calls[index])
        except Exception:
            self.checkpoint(calls, index)
            self.close_failed_calls(calls, index, APPROVAL_FAILED)
            raise
        except BaseException:  # KeyboardInterrupt, SystemExit: nothing started
            self.close_aborted_calls(calls, index)
            raise

    def execute(self, calls: list[ToolCall], index: int, tool: Tool) -> ToolResult:
        """Run the tool; if it raises, close the calls (as aborted when cancelled) first."""
        call = calls[index]
        started = self.log_tool(tool, call) if self.logging else 0.0
        try:
            result = tool.execute(dict(call.input), self.cancel)
            if not isinstance(result, ToolResult):
                raise TypeError(f"tool {tool.name!r} returned {type(result).__name__}")
            if not isinstance(result.content, str):  # would not survive the session file
                kind = type(result.content).__name__
                raise TypeError(f"tool {tool.name!r} returned content of type {kind}")
            if self.logging:
                self.log_tool_done(tool, call, started, result)
            return result
        except Exception:
            if self.cancelled():
                self.close_cancelled_call(calls, index)
                raise _Aborted from None
            self.close_failed_calls(calls, index, TOOL_EXECUTION_FAILED)
            raise
        except BaseException:  # KeyboardInterrupt, SystemExit: it may have started
            self.close_cancelled_call(calls, index)
            raise

    def close_cancelled_call(self, calls: list[ToolCall], index: int) -> None:
        """The tool at ``index`` was stopped while running; the rest never started."""
        self.record_result(calls[index], ABORTED_DURING_EXECUTION, is_error=True)
        self.close_aborted_calls(calls, index + 1)

    def close_aborted_calls(self, calls: list[ToolCall], start: int) -> None:
        """Answer ``calls[start:]``, which never started, with ``aborted before execution``."""
        for call in calls[start:]:
            self.record_result(call, ABORTED_BEFORE_EXECUTION, is_error=True)

    def close_failed_calls(self, calls: list[ToolCall], failed: int, failure: str) -> None:
        """Answer the failed call with a generic text and the rest as not executed."""
        self.record_result(calls[failed], failure, is_error=True)
        for call in calls[failed + 1 :]:
            self.record_result(call, NOT_EXECUTED_AFTER_FAILURE, is_error=True)

    def close_open_calls(self) -> None:
        """Resume repair (``resume.repair_open_calls``: results for the calls cut off or started),
        then the pending calls are asked again."""
        results, pending = repair_open_calls(self.messages)
        for message in results:
            self.record(message)
        if pending:
            self.run_tool_calls(list(pending), resumed=True)

    def stop(self, reason: StopReason, output: Any = None, pending: tuple[ToolCall, ...] = ()) -> RunResult:
        log.info("stop reason: %s (%d messages in the record)", reason, len(self.messages))
        return RunResult(self.messages, reason, self.usage.total(), output, pending)


def _check_answer(text: str, ending: DoneEvent | None) -> None:
    """A turn without calls is an answer only when it ended naturally and holds text.

    Raises:
        IncompleteResponseError: the turn ended unnaturally (``ending``), with its text.
        EmptyResponseError: it ended naturally with no text.
    """
    if ending is not None and ending.incomplete is not None:
        raise IncompleteResponseError(ending.incomplete, ending.stop_reason or "", text)
    if not text:
        raise EmptyResponseError()


class _Aborted(Exception):
    """Internal: the run was cancelled and every open call has been answered."""


class _Deferred(Exception):
    """Internal: the hook deferred a call; ``calls`` are pending (recorded as such)."""

    def __init__(self, calls: tuple[ToolCall, ...]) -> None:
        super().__init__()
        self.calls = calls


def _close(events: Iterable[ModelEvent] | None) -> None:
    """Close an abandoned generator so its provider releases the connection."""
    close = getattr(events, "close", None)
    if close is not None:
        close()
