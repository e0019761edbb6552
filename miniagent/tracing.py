"""What ``run_agent(tracer=...)`` tells a tracer: the run, each model request, each tool call.

A ``Tracer`` is long-lived (one for many runs, in any threads); ``Tracer.trace_run`` opens one
run's ``RunTrace``, a context manager the loop enters around the whole run. The OpenTelemetry
tracer (``miniagent.otel.OtelTracer``, extra ``otel``) is one implementation; this module is the
standard-library contract the loop depends on.

Invariants:

- Without a tracer the loop does no tracing work: the client is not wrapped, the tools' calls go
  straight to the tool, and the only cost is one ``is None`` test per answered call.
- Every model request of the run (the compaction summary request too) reaches
  ``RunTrace.model_request`` as the stream the loop reads: the tracer's iterator is closed by the
  loop when it stops reading (end, cancel, error), so a request's trace always ends.
- Every answered tool call (run, refused, unknown, invalid input) reaches ``RunTrace.tool_call``
  after its approval and before its result is recorded; a deferred call does not (it is not
  answered). What the tracer's callables return or raise is what the loop gets.
- The run's end reaches ``RunTrace.finish`` with its ``RunResult``, or the context manager's
  exit with the exception that ended the run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from .messages import ToolCall
from .model import ModelClient, ModelEvent, ModelRequest

if TYPE_CHECKING:  # annotations only
    import threading

    from .result import RunResult
    from .tools import Approval, Tool

__all__ = ["RunStart", "RunTrace", "TracedClient", "Tracer"]


@dataclass(frozen=True)
class RunStart:
    """What is known when a run starts (``run_agent``'s arguments).

    Args:
        client: the model client (its ``model`` and ``base_url`` attributes, when it has them,
            name the model and the server).
        system: the system prompt.
        tools: the tools the model may call.
        user: this run's user message (``None``: the run goes on from its session).
        max_turns: the most model requests of the run.
        cancel: the run's cancel event, or ``None``; set means a request or a call that ends
            early was cancelled.
    """

    client: ModelClient
    system: str
    tools: Sequence[Tool]
    user: str | None
    max_turns: int
    cancel: threading.Event | None


class RunTrace(Protocol):
    """One run's trace, entered around the whole run (``with trace:``); its ``__exit__`` sees
    the exception that ended the run, if one did."""

    def __enter__(self) -> RunTrace: ...

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: Any) -> None: ...

    def model_request(
        self, request: ModelRequest, stream: Callable[[ModelRequest], Iterable[ModelEvent]]
    ) -> Iterator[ModelEvent]:
        """Call ``stream(request)`` and yield its events unchanged; the loop closes the iterator
        when it stops reading. Exceptions of ``stream`` propagate unchanged."""
        ...

    def tool_call(
        self, call: ToolCall, approval: Approval, answer: Callable[[], tuple[str, bool]]
    ) -> tuple[str, bool]:
        """Return ``answer()``: the call's result as ``(content, is_error)`` (refusal, unknown
        tool, bad input, or the tool's own result). Exceptions of ``answer`` propagate unchanged."""
        ...

    def finish(self, result: RunResult) -> None:
        """The run returned ``result`` (any stop reason)."""
        ...


class Tracer(Protocol):
    """Opens one ``RunTrace`` per run; must be safe to share between threads."""

    def trace_run(self, run: RunStart) -> RunTrace:
        """The trace of the run about to start."""
        ...


class TracedClient:
    """``client`` with each ``stream(request)`` passed through ``trace.model_request``; every
    other attribute is the client's own (``can_price``, ``model``, ``close``...)."""

    def __init__(self, client: ModelClient, trace: RunTrace) -> None:
        self._client = client
        self._trace = trace

    def stream(self, request: ModelRequest) -> Iterator[ModelEvent]:
        """The traced stream of one request (``RunTrace.model_request``)."""
        return self._trace.model_request(request, self._client.stream)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)
