"""OpenTelemetry spans of runs, per the GenAI semantic conventions (extra ``otel``).

``run_agent(..., tracer=OtelTracer())`` makes, for each run, an ``invoke_agent`` span (kind
INTERNAL) whose children are one ``chat {model}`` span (kind CLIENT) per model request and one
``execute_tool {name}`` span (kind INTERNAL) per answered tool call. This module imports
``opentelemetry`` (the API only); nothing else of miniagent imports it, so ``import miniagent``
never does. Configuring an SDK and an exporter is the application's business (the CLI does it
from the standard ``OTEL_*`` variables: ``miniagent.cli.tracing``).

Invariants:

- No content by default: message texts, the system prompt, tool arguments and tool results go on
  spans only when content capture is on (``capture_content=True``, or
  ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`` read when the tracer is made).
  Exception texts never go on spans (a tool's exception may quote anything): a failure is its
  ``error.type`` (the exception's qualified class name) and an ERROR status without a message.
- ``error.type``: the qualified name of the exception's nearest public class
  (``miniagent.errors.ProviderError``, ``ValueError``; a provider's HTTP status also goes in
  ``http.response.status_code``), or one of our own values: ``cancelled`` (the run's cancel
  event was set: a request or a tool call cut short), ``stream_closed`` (the loop stopped reading
  a stream for another reason), ``not_approved`` (a refused call), ``tool_error`` (a call
  answered with an error result: unknown tool, invalid input, the tool's own error).
- Each span is current while its work runs (the run's span for the whole run, a request's while
  its stream is read, a call's while it runs), so spans of instrumented libraries underneath
  (HTTP, MCP) nest under it; the run's span is a child of the context current at the call
  (e.g. one extracted from ``TRACEPARENT``).
- miniagent's own attributes are named ``miniagent.*``: ``miniagent.stop_reason``,
  ``miniagent.usage.cost_usd``, ``miniagent.usage.requests``, ``miniagent.incomplete_reason``,
  ``miniagent.error.reason``, ``miniagent.pending_calls``, ``miniagent.tool.approved``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from . import __version__
from . import _genai_content as content
from .messages import Message, ToolCall
from .model import (
    DoneEvent,
    ModelEvent,
    ModelRequest,
    ProviderDoneEvent,
    TextEvent,
    ToolCallEvent,
    UsageEvent,
)
from .result import RunResult
from .tools import Approval
from .tracing import RunStart
from .usage import Usage

if TYPE_CHECKING:
    from .tracing import Tracer

__all__ = ["OtelTracer"]

SCOPE = "miniagent"


class OtelTracer:
    """A ``miniagent.tracing.Tracer`` that makes OpenTelemetry GenAI spans; share one freely.

    Args:
        tracer_provider: where spans go (an SDK ``TracerProvider``); ``None``: the global one
            (``opentelemetry.trace.set_tracer_provider``; a no-op until an application sets one).
        capture_content: put contents on spans (``gen_ai.system_instructions``,
            ``gen_ai.input.messages``, ``gen_ai.output.messages``, ``gen_ai.tool.definitions``,
            ``gen_ai.tool.call.arguments``, ``gen_ai.tool.call.result``); ``None``: as
            ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` says now (``true``: on).
        agent_name: ``gen_ai.agent.name``, also in the run span's name
            (``invoke_agent {agent_name}``); ``None``: the span is named ``invoke_agent``.
        provider_name: ``gen_ai.provider.name``; ``None``: from the client's class (``openai``,
            ``anthropic``, ``gcp.gemini``, ``aws.bedrock``, ``azure.ai.openai``, ...).
        parent: the context every run's span is a child of (e.g. one a W3C propagator extracted
            from a ``traceparent``); ``None``: the context current when the run starts.
    """

    def __init__(
        self,
        tracer_provider: trace.TracerProvider | None = None,
        *,
        capture_content: bool | None = None,
        agent_name: str | None = None,
        provider_name: str | None = None,
        parent: otel_context.Context | None = None,
    ) -> None:
        self.tracer = trace.get_tracer(SCOPE, __version__, tracer_provider)
        if capture_content is None:
            capture_content = content.capture_content_from_env()
        self.capture_content = capture_content
        self.agent_name = agent_name
        self.provider_name = provider_name
        self.parent = parent

    def trace_run(self, run: RunStart) -> _RunTrace:
        """The trace of one run (``miniagent.tracing.RunTrace``)."""
        return _RunTrace(self, run)


class _RunTrace:
    """One run: the ``invoke_agent`` span and its children."""

    def __init__(self, owner: OtelTracer, run: RunStart) -> None:
        self.tracer = owner.tracer
        self.capture = owner.capture_content
        self.run = run
        model = getattr(run.client, "model", None)
        self.model = str(model) if model else None
        self.common: dict[str, Any] = {
            "gen_ai.provider.name": owner.provider_name or content.provider_name(run.client),
        }
        if self.model:
            self.common["gen_ai.request.model"] = self.model
        server = content.server_of(run.client)
        if server is not None:
            self.common["server.address"], self.common["server.port"] = server
        self.agent_name = owner.agent_name
        self.parent = owner.parent
        self.tools = {tool.name: tool for tool in run.tools}
        self.span: Span | None = None
        self.token: object = None

    def cancelled(self) -> bool:
        return self.run.cancel is not None and self.run.cancel.is_set()

    # --- the run --------------------------------------------------------------------------------

    def __enter__(self) -> _RunTrace:
        attributes = {"gen_ai.operation.name": "invoke_agent", **self.common}
        name = "invoke_agent"
        if self.agent_name:
            attributes["gen_ai.agent.name"] = self.agent_name
            name = f"invoke_agent {self.agent_name}"
        if self.capture:
            attributes["gen_ai.system_instructions"] = content.system_instructions(self.run.system)
            attributes["gen_ai.tool.definitions"] = content.tool_definitions(self.run.tools)
            if self.run.user is not None:
                attributes["gen_ai.input.messages"] = content.input_messages([Message("user", self.run.user)])
        self.span = self.tracer.start_span(
            name, context=self.parent, kind=SpanKind.INTERNAL, attributes=attributes
        )
        self.token = otel_context.attach(trace.set_span_in_context(self.span))
        return self

    def finish(self, result: RunResult) -> None:
        """Record the run's stop reason and this run's usage."""
        span = self.span
        if span is None:
            return
        span.set_attribute("miniagent.stop_reason", result.stop_reason)
        span.set_attributes(_usage_attributes(result.usage))
        if result.pending:
            span.set_attribute("miniagent.pending_calls", len(result.pending))
        if self.capture and result.stop_reason == "complete" and result.messages:
            last = result.messages[-1]
            span.set_attribute("gen_ai.output.messages", content.output_messages(last.content, (), None))

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: Any) -> None:
        span, self.span = self.span, None
        if span is None:
            return
        if error is not None:
            _failed(span, "cancelled" if self.cancelled() else _error_type(error))
            _error_details(span, error)
        otel_context.detach(self.token)  # type: ignore[arg-type]
        span.end()

    # --- one model request -----------------------------------------------------------------------

    def model_request(
        self, request: ModelRequest, stream: Callable[[ModelRequest], Iterable[ModelEvent]]
    ) -> Iterator[ModelEvent]:
        """Yield ``stream(request)``'s events inside a ``chat {model}`` span (current meanwhile)."""
        name = f"chat {self.model}" if self.model else "chat"
        span = self.tracer.start_span(name, kind=SpanKind.CLIENT, attributes=self.chat_start(request))
        token = otel_context.attach(trace.set_span_in_context(span))
        turn = _Turn(self.capture)
        events: Iterable[ModelEvent] | None = None
        started = time.monotonic()
        try:
            events = stream(request)
            for event in events:
                if turn.first:
                    turn.first = False
                    span.set_attribute("gen_ai.response.time_to_first_chunk", time.monotonic() - started)
                turn.see(event)
                yield event
            if self.cancelled():  # a client that stops at a cancel ends its stream early
                _failed(span, "cancelled")
        except GeneratorExit:
            _failed(span, "cancelled" if self.cancelled() else "stream_closed")
            raise
        except BaseException as error:
            _failed(span, "cancelled" if self.cancelled() else _error_type(error))
            _error_details(span, error)
            raise
        finally:
            _close(events)
            turn.record(span)
            otel_context.detach(token)
            span.end()

    def chat_start(self, request: ModelRequest) -> dict[str, Any]:
        attributes: dict[str, Any] = {"gen_ai.operation.name": "chat", **self.common}
        attributes["gen_ai.request.stream"] = True
        if request.output_schema is not None:
            attributes["gen_ai.output.type"] = "json"
        if self.capture:
            attributes["gen_ai.system_instructions"] = content.system_instructions(request.system)
            attributes["gen_ai.input.messages"] = content.input_messages(request.messages)
            if request.tools:
                attributes["gen_ai.tool.definitions"] = content.tool_definitions(request.tools)
        return attributes

    # --- one tool call ---------------------------------------------------------------------------

    def tool_call(
        self, call: ToolCall, approval: Approval, answer: Callable[[], tuple[str, bool]]
    ) -> tuple[str, bool]:
        """Return ``answer()`` inside an ``execute_tool {name}`` span (current meanwhile)."""
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.provider.name": self.common["gen_ai.provider.name"],
            "gen_ai.tool.name": call.name,
            "gen_ai.tool.call.id": call.id,
            "gen_ai.tool.type": "function",
            "miniagent.tool.approved": approval.approved,
        }
        tool = self.tools.get(call.name)
        if tool is not None and tool.description:
            attributes["gen_ai.tool.description"] = tool.description
        if self.capture:
            attributes["gen_ai.tool.call.arguments"] = content.tool_arguments(call)
        with self.tracer.start_as_current_span(
            f"execute_tool {call.name}",
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            try:
                text, is_error = answer()
            except BaseException as error:
                _failed(span, "cancelled" if self.cancelled() else _error_type(error))
                raise
            if is_error:
                _failed(span, "tool_error" if approval.approved else "not_approved")
            if self.capture:
                span.set_attribute("gen_ai.tool.call.result", text)
            return text, is_error


class _Turn:
    """What one request's stream told: usage, the ending and (capturing) the answer."""

    def __init__(self, capture: bool) -> None:
        self.capture = capture
        self.first = True
        self.usage: Usage | None = None
        self.done: DoneEvent | None = None
        self.text: list[str] = []
        self.calls: list[ToolCall] = []

    def see(self, event: ModelEvent) -> None:
        if isinstance(event, UsageEvent):
            self.usage = event.usage if self.usage is None else self.usage + event.usage
        elif isinstance(event, DoneEvent):  # the first, unless a later one says "incomplete"
            if self.done is None or (event.incomplete is not None and self.done.incomplete is None):
                self.done = event
        elif self.capture:
            if isinstance(event, TextEvent):
                self.text.append(event.text)
            elif isinstance(event, ToolCallEvent):
                self.calls.append(event.call)

    def record(self, span: Span) -> None:
        done = self.done
        finish = done.stop_reason if done is not None else None
        if finish:
            span.set_attribute("gen_ai.response.finish_reasons", [finish])
        if isinstance(done, ProviderDoneEvent):
            if done.model:
                span.set_attribute("gen_ai.response.model", done.model)
            if done.response_id:
                span.set_attribute("gen_ai.response.id", done.response_id)
        if done is not None and done.incomplete is not None:
            span.set_attribute("miniagent.incomplete_reason", done.incomplete)
        if self.usage is not None:
            span.set_attributes(_usage_attributes(self.usage))
        if self.capture and (self.text or self.calls):
            answer = content.output_messages("".join(self.text), self.calls, finish)
            span.set_attribute("gen_ai.output.messages", answer)


def _usage_attributes(usage: Usage) -> dict[str, Any]:
    """The conventions' usage attributes (cached tokens are part of the input tokens, reasoning
    tokens part of the output tokens) and miniagent's cost and request count."""
    attributes: dict[str, Any] = {
        "gen_ai.usage.input_tokens": usage.input_tokens,
        "gen_ai.usage.output_tokens": usage.output_tokens,
        "miniagent.usage.requests": usage.requests,
    }
    if usage.cache_read_tokens:
        attributes["gen_ai.usage.cache_read.input_tokens"] = usage.cache_read_tokens
    if usage.cache_write_tokens:
        attributes["gen_ai.usage.cache_creation.input_tokens"] = usage.cache_write_tokens
    if usage.reasoning_tokens:
        attributes["gen_ai.usage.reasoning.output_tokens"] = usage.reasoning_tokens
    if usage.cost_usd is not None:
        attributes["miniagent.usage.cost_usd"] = usage.cost_usd
    return attributes


def _error_type(error: BaseException) -> str:
    """The qualified name of the exception's nearest public class (``builtins`` left out):
    ``ValueError``, ``miniagent.errors.ProviderError`` for a private subclass of it."""
    for kind in type(error).__mro__:
        module = kind.__module__
        if not any(part.startswith("_") for part in (*module.split("."), kind.__qualname__)):
            return kind.__qualname__ if module == "builtins" else f"{module}.{kind.__qualname__}"
    return "_OTHER"


def _error_details(span: Span, error: BaseException) -> None:
    """What a miniagent error says beyond its class: an incomplete answer's reason, a provider's
    HTTP status (never its message)."""
    reason = getattr(error, "reason", None)
    if isinstance(reason, str):
        span.set_attribute("miniagent.error.reason", reason)
    status = getattr(error, "status", None)
    if isinstance(status, int) and not isinstance(status, bool):
        span.set_attribute("http.response.status_code", status)


def _failed(span: Span, error_type: str) -> None:
    span.set_attribute("error.type", error_type)
    span.set_status(Status(StatusCode.ERROR))


def _close(events: Iterable[ModelEvent] | None) -> None:
    """Close the client's stream (the loop closed ours), so its provider releases the connection."""
    close = getattr(events, "close", None)
    if close is not None:
        close()


if TYPE_CHECKING:  # mypy checks that an OtelTracer is a Tracer (run_agent's tracer=)
    _IS_A_TRACER: Tracer = OtelTracer()
