"""How a turn ended: a provider's stop reason read as a natural end or as an ``IncompleteReason``.

DESIGN.md "Round 3 contracts" (a cut or failed answer is never complete). The words come from
each API's documentation: OpenAI-compatible ``finish_reason`` (OpenAI ``stop``, ``length``,
``tool_calls``, ``content_filter``, ``function_call``; OpenRouter and Mistral ``error``; Mistral
``model_length``; Together ``eos``; Text Generation Inference ``eos_token`` and
``stop_sequence``), the OpenAI Responses API (``completed``; an ``incomplete`` response's
``incomplete_details.reason``: ``max_output_tokens``, ``content_filter``), Anthropic
``stop_reason`` (``end_turn``, ``stop_sequence``, ``tool_use``,
``max_tokens``, ``model_context_window_exceeded``, ``refusal``; ``pause_turn``, which only server
tools cause and miniagent sends none, is unknown here), llama.cpp's ``/completion``
``stop_type`` (``eos``, ``word``, ``limit``) and the Gemini API's ``finishReason`` (``STOP``,
``MAX_TOKENS``, ``SAFETY``, ``RECITATION``, ``BLOCKLIST``, ``PROHIBITED_CONTENT``, ``SPII``,
``IMAGE_SAFETY``, ``MALFORMED_FUNCTION_CALL``...; ``LANGUAGE``, ``OTHER`` and the rest are
unknown here) and Bedrock Converse's ``stopReason`` (``end_turn``, ``tool_use``,
``stop_sequence``, ``max_tokens``, ``guardrail_intervened``, ``content_filtered``,
``malformed_model_output``, ``malformed_tool_use``, ``model_context_window_exceeded``).

Invariants:

- No stop reason at all is a natural end (many OpenAI-compatible servers end with ``[DONE]``
  and no ``finish_reason``); the stream mappers already refuse a stream cut before its end.
- A word not known to be natural is never taken for one: an unknown word is
  ``"provider_error"`` (the word itself stays in ``DoneEvent.stop_reason``), so a new way of
  failing is never committed as an answer.
- A tool call of a turn that ended unnaturally, whose arguments are not a whole JSON object, was
  cut: it is kept with the input error ``cut_call_problem`` (it never runs; the model reads why
  and can retry in smaller pieces), or dropped when even its name did not arrive.
"""

from __future__ import annotations

from ..errors import IncompleteReason
from ..messages import ToolCall

__all__ = ["NATURAL_ENDINGS", "UNNATURAL_ENDINGS", "cut_call", "cut_call_problem", "turn_ending"]

NATURAL_ENDINGS = frozenset(
    (
        "stop",
        "completed",
        "tool_calls",
        "function_call",
        "eos",
        "eos_token",
        "stop_sequence",
        "end_turn",
        "tool_use",
        "word",
    )
)
"""Stop reasons (lower case) of a turn that ended as the model meant it to."""

UNNATURAL_ENDINGS: dict[str, IncompleteReason] = {
    "length": "max_output_tokens",
    "max_output_tokens": "max_output_tokens",
    "max_tokens": "max_output_tokens",
    "limit": "max_output_tokens",
    "model_length": "context_window",
    "model_context_window_exceeded": "context_window",
    "content_filter": "content_filter",
    "safety": "content_filter",
    "recitation": "content_filter",
    "blocklist": "content_filter",
    "prohibited_content": "content_filter",
    "spii": "content_filter",
    "image_safety": "content_filter",
    "image_prohibited_content": "content_filter",
    "image_recitation": "content_filter",
    "malformed_function_call": "provider_error",
    "guardrail_intervened": "content_filter",
    "content_filtered": "content_filter",
    "malformed_model_output": "provider_error",
    "malformed_tool_use": "provider_error",
    "refusal": "refusal",
    "error": "provider_error",
}
"""Known stop reasons (lower case) of a turn that did not end as the model meant it to."""


def turn_ending(stop_reason: str | None) -> IncompleteReason | None:
    """``None`` for a natural end (or no stop reason), else why the turn is incomplete.

    Args:
        stop_reason: the provider's word, as it sent it (compared in lower case).

    Returns:
        ``None``, or one of ``"max_output_tokens"``, ``"context_window"``,
        ``"content_filter"``, ``"refusal"``, ``"provider_error"`` (also for a word not in
        either table).
    """
    if not stop_reason:
        return None
    word = stop_reason.strip().lower()
    if word in NATURAL_ENDINGS:
        return None
    return UNNATURAL_ENDINGS.get(word, "provider_error")


def cut_call_problem(reason: IncompleteReason, stop_reason: str | None) -> str:
    """The input error of a tool call whose arguments were cut when the turn ended (the loop
    records it as the call's error result, ``invalid input for NAME: ...``; the model reads it).

    Args:
        reason: how the turn ended (``turn_ending``'s result, not ``None``).
        stop_reason: the provider's word, shown as it came.
    """
    said = f" (stop reason {stop_reason!r})" if stop_reason else ""
    if reason == "max_output_tokens":
        return (
            f"the arguments were cut off by the output token limit{said} before they were complete, "
            "so the call was not run; retry with shorter arguments (split the work over several calls)"
        )
    return (
        f"the arguments were cut off when the answer ended{said} before they were complete, "
        "so the call was not run"
    )


def cut_call(call_id: str, name: str, reason: IncompleteReason, stop_reason: str | None) -> ToolCall | None:
    """The call whose arguments the end of the turn cut: its id and name, no input and the input
    error ``cut_call_problem`` (so it never runs); ``None`` when not even its name arrived."""
    if not name:
        return None
    return ToolCall(call_id, name, {}, cut_call_problem(reason, stop_reason))
