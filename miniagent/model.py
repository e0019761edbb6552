"""What the loop says to a model and what it hears back.

A ``ModelClient`` turns one ``ModelRequest`` into a synchronous stream (any iterable, usually a
generator) of ``ModelEvent``s:

- ``TextEvent``: a piece of the assistant's text, as it arrives.
- ``ToolCallEvent``: one whole tool call, emitted once its arguments are complete.
- ``ReasoningEvent``: one whole reasoning ("thinking") block, when it closes.
- ``UsageEvent``: what one request used (tokens, cost), when the server reports it.
- ``DoneEvent``: the provider mapping finished cleanly, with how the turn ended. The end of the
  iteration is what ends a turn (spec: "done is a no-op for the loop"); the loop reads only
  ``DoneEvent.incomplete``, so that a cut or failed answer is never committed as complete.

Invariants a client must keep: events are tentative until the iteration ends; a client that is
abandoned mid-stream is closed (``close()`` on a generator) so it can release its connection; a
client watches ``request.cancel`` while it blocks, so cancelling does not wait for the network.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from .errors import IncompleteReason
from .messages import Message, Reasoning, ToolCall
from .usage import Usage

if TYPE_CHECKING:  # annotations only: the core never starts a thread
    import threading

__all__ = [
    "TextEvent",
    "ToolCallEvent",
    "DoneEvent",
    "ProviderDoneEvent",
    "ReasoningEvent",
    "UsageEvent",
    "ModelEvent",
    "ToolSpec",
    "ModelRequest",
    "ModelClient",
]


@dataclass(frozen=True, slots=True)
class TextEvent:
    """A delta of assistant text (characters), in stream order."""

    text: str
    type: Literal["text"] = field(default="text", init=False)


@dataclass(frozen=True, slots=True)
class ToolCallEvent:
    """One complete tool call requested by the model."""

    call: ToolCall
    type: Literal["tool_call"] = field(default="tool_call", init=False)


@dataclass(frozen=True, slots=True)
class DoneEvent:
    """The provider mapping closed the stream cleanly (no half-open block), and how the turn ended.

    Args:
        stop_reason: the provider's own finish reason when known (``"end_turn"``,
            ``"tool_calls"``, ``"length"``, ...), as it sent it.
        incomplete: ``None`` when the turn ended naturally (or the provider did not say), else
            why it did not (``IncompleteReason``: ``"max_output_tokens"``, ``"context_window"``,
            ``"content_filter"``, ``"refusal"``, ``"provider_error"``), as each provider maps
            its own stop reasons. The loop reads it: a turn marked incomplete that holds no
            tool call raises ``IncompleteResponseError`` instead of being committed (DESIGN.md
            "Round 3 contracts"); a turn is incomplete when any ``DoneEvent`` of its stream says so.
    """

    stop_reason: str | None = None
    incomplete: IncompleteReason | None = None
    type: Literal["done"] = field(default="done", init=False)


@dataclass(frozen=True, slots=True)
class ProviderDoneEvent(DoneEvent):
    """The ``DoneEvent`` of a provider's stream, which also names the response (for traces:
    ``gen_ai.response.model``, ``gen_ai.response.id``; the loop reads only what a ``DoneEvent``
    holds). A subclass, so that a plain ``DoneEvent`` (a scripted model's) costs no more to make.

    Args:
        stop_reason, incomplete: as ``DoneEvent``'s.
        model: the model that answered, as the server named it (``model`` of OpenAI's chunks,
            Anthropic's ``message_start``, the Responses API's ``response``, Gemini's
            ``modelVersion``), ``None`` when it did not say.
        response_id: the server's id of the response (``chatcmpl-...``, ``msg_...``,
            ``resp_...``, Gemini's ``responseId``), ``None`` when it gave none.
    """

    model: str | None = None
    response_id: str | None = None


@dataclass(frozen=True, slots=True)
class ReasoningEvent:
    """One whole reasoning block of the model, emitted when the block closes (Anthropic
    ``content_block_stop`` of a ``thinking`` / ``redacted_thinking`` block; OpenAI-compatible
    servers: when ``reasoning_content`` / ``reasoning`` deltas give way to the answer or the
    stream ends). The loop keeps it with the turn and commits it on ``Message.reasoning``;
    ``on_event`` shows it (tentative, like text)."""

    reasoning: Reasoning
    type: Literal["reasoning"] = field(default="reasoning", init=False)


@dataclass(frozen=True, slots=True)
class UsageEvent:
    """What one model request used (``usage.requests == 1``), as the server reported it.

    The loop adds it to ``RunResult.usage`` as it arrives, also for a turn that is not
    committed (the tokens were spent)."""

    usage: Usage
    type: Literal["usage"] = field(default="usage", init=False)


ModelEvent = TextEvent | ToolCallEvent | ReasoningEvent | UsageEvent | DoneEvent


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """What the model is told about a tool: its name, a description and a JSON Schema of its input.

    ``strict``: the schema is in OpenAI's strict-mode form (``@tool(strict=True)``) and providers
    that can enforce it should (OpenAI-compatible: ``"strict": true`` on the function, when the
    schema keeps every strict rule: ``output.strict_compatible``). Providers send the schema in
    the form their API takes (``providers._schemas``); the loop checks inputs against this one.
    """

    name: str
    description: str
    input_schema: dict[str, Any]
    strict: bool = False


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """One request to the model.

    Args:
        system: the system prompt.
        messages: the (possibly trimmed) history, oldest first. Read-only, and valid only while
            ``stream()`` runs: the loop passes a view of its record, not a copy. Copy it (e.g.
            ``list(request.messages)``) to keep it.
        tools: the tools the model may call.
        cancel: the run's cancel event, or ``None``. A client should stop blocking soon after it
            is set (the loop also checks it on every event).
        output_schema: the JSON Schema the final answer must match (``run_agent(output_schema=)``,
            DESIGN.md "Structured output"), or ``None``. Clients that can constrain the output
            ask for it natively; the loop checks the answer either way.
    """

    system: str
    messages: Sequence[Message]
    tools: tuple[ToolSpec, ...] = ()
    cancel: threading.Event | None = None
    output_schema: dict[str, Any] | None = None


class ModelClient(Protocol):
    """Anything with a ``stream(request)`` method that yields ``ModelEvent``s.

    ``stream`` may raise (e.g. ``ProviderError``) before or during the iteration; the loop then
    commits nothing of that turn and re-raises (or returns ``aborted`` when cancelled).
    """

    def stream(self, request: ModelRequest) -> Iterable[ModelEvent]:
        """Yield the events of one assistant turn for ``request``."""
        ...
