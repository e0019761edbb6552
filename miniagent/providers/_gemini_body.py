"""The body of a Gemini API ``streamGenerateContent`` request: the record as ``contents``, with the
thought signatures sent back on the parts that carried them.

Wire format: https://ai.google.dev/api/generate-content (``contents`` of ``user`` and ``model``
turns made of parts, ``systemInstruction``, ``tools[].functionDeclarations``,
``generationConfig``), https://ai.google.dev/gemini-api/docs/function-calling (``functionCall``
and ``functionResponse`` parts; the responses of one turn together in the next ``user`` turn) and
https://ai.google.dev/gemini-api/docs/thought-signatures (each signature goes back on the part
that carried it; Gemini 3 refuses a function call of the current turn without its signature).

What a Gemini turn leaves in the record, all under ``Reasoning.origin == gemini_origin(base_url)``
and with the ``"model"`` that made it (a signature is only checked by the model that made it):

- each run of thought parts (``thought: true``): ``Reasoning(text, origin=..., data={"thought":
  true, "model": ...[, "thoughtSignature": ...]})``;
- when the turn's parts cannot be rebuilt from the message alone (a signature on a text or
  function call part, a call that came without an id, parts out of the usual order): one block
  ``Reasoning("", origin=..., data={"model": ..., "parts": [...]})`` listing the parts in order:
  ``{"thought": j}`` (the j-th thought block above), ``{"text": n}`` (the next ``n`` characters of
  the message's text), ``{"call": i}`` (its i-th tool call; ``"id": null`` when the API gave it no
  id, so the record's made-up id is never sent), each with the ``thoughtSignature`` it carried.

Invariants:

- These fields go back only to the same origin, and thoughts and signatures only to the same
  model (another model gets the parts' order and ids, no signature); reasoning of another
  provider is never sent, and neither is a layout that no longer matches its message.
- The first ``functionCall`` part of every ``model`` turn carries a signature: its own, else the
  documented placeholder ``SKIP_SIGNATURE`` (a turn of another provider or model, a session
  from before signatures), which the API accepts in place of one.
- One record always gives one body (no per-request values), so the prefix stays byte-stable.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..messages import Message, Reasoning, ToolCall
from ..model import ToolSpec
from ..output import with_output_instruction
from ._history import pair_tool_messages
from ._schemas import gemini_parameters

__all__ = [
    "SKIP_SIGNATURE",
    "TRIMMED_PLACEHOLDER",
    "build_contents",
    "build_gemini_body",
    "gemini_origin",
]

SKIP_SIGNATURE = "skip_thought_signature_validator"
"""The signature the thought-signatures guide gives for a function call whose own signature is
not known (history from another model): the API then skips the check."""

TRIMMED_PLACEHOLDER = "(earlier conversation omitted)"
"""Text of the user turn put first when the history does not start with a user message (after
trimming or a resume): a function call turn must follow a user turn."""


def gemini_origin(base_url: str) -> str:
    """The ``Reasoning.origin`` of what the Gemini API at ``base_url`` sent."""
    return f"gemini {base_url}"


def build_gemini_body(
    system: str,
    messages: Iterable[Message],
    tools: Iterable[ToolSpec],
    *,
    origin: str,
    model: str,
    temperature: float | None = None,
    max_tokens: int | None = None,
    output_schema: dict[str, Any] | None = None,
    include_thoughts: bool = False,
    extra_body: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON body of a ``streamGenerateContent`` request.

    Shape: ``{"contents"[, "systemInstruction": {"parts": [{"text"}]}][, "tools":
    [{"functionDeclarations": [{"name", "description", "parametersJsonSchema"}]}]]
    [, "generationConfig"]}``; ``contents`` as ``build_contents`` makes them, each schema as the
    API takes it (``_schemas.gemini_parameters``); a blank system prompt is not sent.
    ``generationConfig`` holds ``temperature``, ``maxOutputTokens`` (``max_tokens``),
    ``thinkingConfig.includeThoughts`` (``include_thoughts``: thought summaries in the stream)
    and, for ``output_schema``, ``responseMimeType: "application/json"`` with
    ``responseJsonSchema``; the API refuses that together with function declarations
    ("Function calling with a response mime type: 'application/json' is unsupported"), so with
    tools the schema goes into the system prompt instead (the loop checks the answer either way).
    ``extra_body`` is merged last; its ``generationConfig`` into this one, key by key.
    """
    specs = [
        {
            "name": spec.name,
            "description": spec.description,
            "parametersJsonSchema": gemini_parameters(spec.input_schema),
        }
        for spec in tools
    ]
    native = output_schema is not None and not specs
    instruction = with_output_instruction(system, None if native else output_schema)
    body: dict[str, Any] = {"contents": build_contents(messages, origin, model)}
    if instruction.strip():
        body["systemInstruction"] = {"parts": [{"text": instruction}]}
    if specs:
        body["tools"] = [{"functionDeclarations": specs}]
    config: dict[str, Any] = {}
    if temperature is not None:
        config["temperature"] = temperature
    if max_tokens is not None:
        config["maxOutputTokens"] = max_tokens
    if include_thoughts:
        config["thinkingConfig"] = {"includeThoughts": True}
    if native:
        config["responseMimeType"] = "application/json"
        config["responseJsonSchema"] = output_schema
    if config:
        body["generationConfig"] = config
    for key, value in (extra_body or {}).items():
        if key == "generationConfig" and isinstance(value, Mapping):
            body["generationConfig"] = {**body.get("generationConfig", {}), **value}
        else:
            body[key] = value
    return body


def build_contents(messages: Iterable[Message], origin: str, model: str) -> list[dict[str, Any]]:
    """Map the history to ``contents`` the API accepts, for ``model`` at ``origin``.

    - calls and results are paired first (``pair_tool_messages``: dangling results dropped,
      unanswered calls answered with an error result, repeated ids made unique);
    - a user message becomes a ``user`` turn with one ``text`` part (blank ones are left out);
    - an assistant message becomes a ``model`` turn: its parts as they came when its layout
      block is there and fits (see the module docstring), else its thought parts, its text and
      its ``functionCall`` parts (``{"name", "args"[, "id"]}``), in that order; thoughts and
      signatures only when ``model`` made them; the first call gets ``SKIP_SIGNATURE`` when it
      has no signature of its own;
    - the results of a turn become ``functionResponse`` parts (``{"name", "response": {"output":
      text}}``, ``{"error": text}`` for an error result, with the call's ``id`` when it was sent
      with one) of one ``user`` turn, in the order of the calls' results;
    - consecutive turns of one role are merged; when the first turn is not a ``user`` turn, a
      ``user`` turn ``TRIMMED_PLACEHOLDER`` is put first.

    Returns:
        A list of ``{"role": "user" | "model", "parts": [part, ...]}``.
    """
    turns: list[dict[str, Any]] = []
    called: dict[str, tuple[str, str | None]] = {}  # wire call id -> (name, id sent or None)

    def add(role: str, parts: list[dict[str, Any]]) -> None:
        if not parts:
            return
        if turns and turns[-1]["role"] == role:
            turns[-1]["parts"].extend(parts)
        else:
            turns.append({"role": role, "parts": parts})

    for message in pair_tool_messages(messages):
        if message.role == "user":
            if message.content.strip():
                add("user", [{"text": message.content}])
        elif message.role == "assistant":
            called.clear()
            add("model", _model_parts(message, origin, model, called))
        else:
            add("user", _response_parts(message, called))
    if not turns or turns[0]["role"] != "user":
        turns.insert(0, {"role": "user", "parts": [{"text": TRIMMED_PLACEHOLDER}]})
    return turns


def _response_parts(message: Message, called: dict[str, tuple[str, str | None]]) -> list[dict[str, Any]]:
    """The ``functionResponse`` part of one tool message (none when it answers no known call)."""
    name, sent_id = called.get(message.tool_call_id or "", ("", None))
    if not name:
        return []
    response: dict[str, Any] = {
        "name": name,
        "response": {"error" if message.is_error else "output": message.content},
    }
    if sent_id is not None:
        response = {"id": sent_id, **response}
    return [{"functionResponse": response}]


def _model_parts(
    message: Message, origin: str, model: str, called: dict[str, tuple[str, str | None]]
) -> list[dict[str, Any]]:
    """The parts of one ``model`` turn; ``called`` gets each call's name and sent id."""
    thoughts = [block for block in message.reasoning if _is_thought(block, origin)]
    layout, layout_model = _layout(message, origin, len(thoughts))
    if layout is None:
        layout = [{"thought": j} for j in range(len(thoughts))]
        if message.content:
            layout.append({"text": len(message.content)})
        layout.extend({"call": i} for i in range(len(message.tool_calls)))
    parts: list[dict[str, Any]] = []
    position = 0
    for entry in layout:
        signature = entry.get("thoughtSignature") if layout_model == model else None
        if "thought" in entry:
            block = thoughts[entry["thought"]]
            if block.data is None or block.data.get("model") != model:
                continue  # another model's thoughts: not sent
            part = _thought_part(block)
        elif "text" in entry:
            part = {"text": message.content[position : position + entry["text"]]}
            position += entry["text"]
        else:
            call = message.tool_calls[entry["call"]]
            sent_id = None if "id" in entry else call.id
            part = {"functionCall": _function_call(call, sent_id)}
            called[call.id] = (call.name, sent_id)
        if isinstance(signature, str) and signature:
            part["thoughtSignature"] = signature
        if part.get("text") == "" and "thoughtSignature" not in part:
            continue  # an empty text or thought part without a signature says nothing
        parts.append(part)
    first_call = next((part for part in parts if "functionCall" in part), None)
    if first_call is not None and "thoughtSignature" not in first_call:
        first_call["thoughtSignature"] = SKIP_SIGNATURE
    return parts


def _function_call(call: ToolCall, sent_id: str | None) -> dict[str, Any]:
    function: dict[str, Any] = {"name": call.name, "args": call.input}
    if sent_id is not None:
        function = {"id": sent_id, **function}
    return function


def _is_thought(block: Reasoning, origin: str) -> bool:
    return block.origin == origin and block.data is not None and block.data.get("thought") is True


def _thought_part(block: Reasoning) -> dict[str, Any]:
    """A thought block as the part it came in (its signature on it)."""
    part: dict[str, Any] = {"text": block.text, "thought": True}
    signature = block.data.get("thoughtSignature") if block.data is not None else None
    if isinstance(signature, str) and signature:
        part["thoughtSignature"] = signature
    return part


def _layout(message: Message, origin: str, thoughts: int) -> tuple[list[dict[str, Any]] | None, Any]:
    """The entries of the message's layout block of ``origin`` and the model that made them,
    when they fit the message exactly (every thought block and call once, text lengths adding
    up to the text), else ``(None, None)``."""
    data = next(
        (b.data for b in reversed(message.reasoning) if b.origin == origin and b.data and "parts" in b.data),
        None,
    )
    entries = data.get("parts") if data is not None else None
    if data is None or not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        return None, None
    text = 0
    seen_thoughts: list[Any] = []
    seen_calls: list[Any] = []
    for entry in entries:
        if _count(entry.get("text")) is not None:
            text += entry["text"]
        elif _count(entry.get("thought")) is not None:
            seen_thoughts.append(entry["thought"])
        elif _count(entry.get("call")) is not None:
            seen_calls.append(entry["call"])
        else:
            return None, None
    fits = (
        text == len(message.content)
        and sorted(seen_thoughts) == list(range(thoughts))
        and sorted(seen_calls) == list(range(len(message.tool_calls)))
    )
    return (entries, data.get("model")) if fits else (None, None)


def _count(value: Any) -> int | None:
    """``value`` when it is a non-negative ``int`` (not a ``bool``), else ``None``."""
    return value if type(value) is int and value >= 0 else None
