"""The record of a conversation: messages and the tool calls inside them.

Invariants (spec, "Record the message first"):

- A ``Message`` is a committed fact. The loop creates one only after the stream that produced it
  has ended; nothing tentative is ever a ``Message``.
- An ``assistant`` message may carry tool calls; every call id in it is answered by exactly one
  ``tool`` message whose ``tool_call_id`` is that id.
- Messages are immutable (frozen dataclasses), so handing the record to observers, providers and
  callers cannot change it.
- A ``tool`` message whose ``state`` is set is a note about its call, not its result: the record
  keeps it (every store persists it, as one more message), the loop never sends it to a model, and
  it never counts as the call's answer (``miniagent.pending`` reads them).

The JSON form (one object per session line) is ``message_to_json`` / ``message_from_json``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from ._json import loads

__all__ = [
    "Role",
    "CallState",
    "CALL_STATES",
    "ToolCall",
    "Reasoning",
    "Message",
    "Summary",
    "MISSING_RESULT",
    "unique_call_id",
    "message_to_json",
    "message_from_json",
    "call_to_json",
    "call_from_json",
    "json_text",
    "json_utf8",
]

Role = Literal["user", "assistant", "tool"]
_ROLES = frozenset(("user", "assistant", "tool"))

CallState = Literal["pending", "approved", "denied", "started"]
"""What a note (a ``tool`` message with ``state``) says about its call (``miniagent.pending``):
``pending`` the run stopped before it (``Approval.defer``); ``approved`` / ``denied`` a decision
recorded for a pending call; ``started`` a pending call is about to execute."""
CALL_STATES: frozenset[str] = frozenset(("pending", "approved", "denied", "started"))

MISSING_RESULT = "no result was recorded for this tool call"
"""The one repair text for a call that has no tool message: the error result the loop records on
resume (the previous process died between the call and its result) and the one a provider adds
when it pairs a trimmed or foreign history for its API."""


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool request proposed by the model.

    Args:
        id: the provider's call id (unique within the conversation).
        name: the tool name the model asked for (may name no known tool).
        input: the arguments, a JSON object decoded to a ``dict``.
        input_error: set by a provider when the model's arguments could not be decoded into a
            JSON object (e.g. ``"arguments are not valid JSON: ..."``); ``input`` is then ``{}``.
            The loop answers such a call with this text as an error result and never executes it.
    """

    id: str
    name: str
    input: dict[str, Any]
    input_error: str | None = None


@dataclass(frozen=True, slots=True)
class Reasoning:
    """One block of the model's reasoning ("thinking"), kept so it can be replayed verbatim.

    Args:
        text: the reasoning text (characters): Anthropic ``thinking`` (from ``thinking_delta``
            pieces), or ``reasoning_content`` / ``reasoning`` of OpenAI-compatible servers
            (DeepSeek, vLLM, llama.cpp, OpenRouter).
        signature: Anthropic's ``signature`` of a ``thinking`` block (from ``signature_delta``);
            the API checks it when the block is sent back. ``None`` for other servers.
        redacted_data: the opaque ``data`` of an Anthropic ``redacted_thinking`` block (its
            ``text`` is then empty); ``None`` otherwise.
        origin: who produced ``data``: the provider's wire format and server (e.g.
            ``"chat-completions https://openrouter.ai/api/v1"``); ``None`` for a block without
            provider-specific fields.
        data: that provider's fields, a JSON object kept opaque (DESIGN.md "Round 3 contracts":
            "sent back only to the provider that produced it"), e.g. the name of the field the
            text came in, OpenRouter's ``reasoning_details``, Gemini's per-call
            ``extra_content``; ``None`` when there are none. Never read by the loop.
    """

    text: str = ""
    signature: str | None = None
    redacted_data: str | None = None
    origin: str | None = None
    data: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True, init=False)
class Message:
    """One committed message.

    Args:
        role: ``"user"``, ``"assistant"`` or ``"tool"``.
        content: the text (characters). For a tool message, the tool result.
        tool_calls: assistant only: the calls the model requested, in order.
        tool_call_id: tool only: the id of the call this message answers.
        is_error: tool only: the result reports a failure (refusal, unknown tool, bad input,
            an error result of the tool, or a closing text after cancel or failure).
        reasoning: assistant only: the reasoning blocks the model sent with this turn, in the
            order it sent them; providers replay them as their API requires (DESIGN.md, "Round 2
            contracts"). Committed with the turn's text and calls, never on its own.
        state: tool only: ``None`` for a result; else this message is a note about the call
            ``tool_call_id`` (``CallState``; ``content`` holds its reason), kept in the record
            and never sent to a model (``miniagent.pending``).
    """

    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    is_error: bool = False
    reasoning: tuple[Reasoning, ...] = ()
    state: CallState | None = None

    def __init__(
        self,
        role: Role,
        content: str = "",
        tool_calls: tuple[ToolCall, ...] = (),
        tool_call_id: str | None = None,
        is_error: bool = False,
        reasoning: tuple[Reasoning, ...] = (),
        state: CallState | None = None,
    ) -> None:
        """Set the fields (what the dataclass ``__init__`` does, through the slot descriptors:
        a frozen dataclass's own ``__init__`` pays ``object.__setattr__`` per field, and the loop
        builds two messages per turn; BENCHMARKS.md, "Per-turn loop overhead")."""
        _set_role(self, role)
        _set_content(self, content)
        _set_tool_calls(self, tool_calls)
        _set_tool_call_id(self, tool_call_id)
        _set_is_error(self, is_error)
        _set_reasoning(self, reasoning)
        _set_state(self, state)

    @property
    def is_note(self) -> bool:
        """Whether this is a note about a call (``state`` set), not a message of the conversation."""
        return self.state is not None

    def to_json(self) -> dict[str, Any]:
        """The JSON object of this message (``message_to_json``: the session line's object), a
        dict of JSON types that crosses process boundaries (Celery, a queue, a web API)."""
        return message_to_json(self)

    @classmethod
    def from_json(cls, data: Any) -> Message:
        """The message of a JSON object (a dict, or its JSON text as ``str`` / ``bytes``).

        Raises:
            ValueError: not JSON, or not a well-formed message (the text says which field).
        """
        if isinstance(data, (str, bytes, bytearray)):
            data = loads(data)  # depth-safe (miniagent._json)
        return message_from_json(data)


@dataclass(frozen=True, slots=True, init=False)
class Summary(Message):
    """A compaction summary (``miniagent.compaction``): a user message whose ``content`` stands
    for the conversation before the ``kept`` messages recorded just before it. The requests after
    it send this message, then those messages, then the later ones; providers send it as the
    user message it is. A subclass, so that every other message costs nothing more to build.

    Args:
        content: the summary as the model reads it (characters).
        kept: how many of the messages recorded just before it are still sent as they are
            (an int >= 0).
    """

    kept: int = 0

    def __init__(self, content: str, kept: int) -> None:
        """Set the fields (``role`` is ``"user"``; the other fields keep their defaults)."""
        Message.__init__(self, "user", content)
        _set_kept(self, kept)


def unique_call_id(call_id: str, taken: set[str]) -> str:
    """``call_id`` itself when it is not in ``taken``, else the first of ``call_id_2``,
    ``call_id_3``, ... that is not; the result is added to ``taken``.

    The one rule that keeps call ids unique within a record (a server that repeats an id within
    a turn or across turns): deterministic, and valid for every API's id alphabet when the id
    was (``[a-zA-Z0-9_-]``).
    """
    unique = call_id
    number = 2
    while unique in taken:
        unique = f"{call_id}_{number}"
        number += 1
    taken.add(unique)
    return unique


# Building messages while loading a session: ``object.__new__`` plus the slot descriptors give the
# very object the dataclass ``__init__`` gives (same fields, same values), at about half the cost
# of a frozen ``__init__`` (which goes through ``object.__setattr__`` per field). Loading 100,000
# messages does this 100,000 times.
_new = object.__new__


def _setter(cls: type, name: str) -> Callable[[object, object], None]:
    setter: Callable[[object, object], None] = cls.__dict__[name].__set__  # the slot's descriptor
    return setter


_set_role = _setter(Message, "role")
_set_content = _setter(Message, "content")
_set_tool_calls = _setter(Message, "tool_calls")
_set_tool_call_id = _setter(Message, "tool_call_id")
_set_is_error = _setter(Message, "is_error")
_set_reasoning = _setter(Message, "reasoning")
_set_state = _setter(Message, "state")
_set_kept = _setter(Summary, "kept")
_set_call_id = _setter(ToolCall, "id")
_set_call_name = _setter(ToolCall, "name")
_set_call_input = _setter(ToolCall, "input")
_set_call_input_error = _setter(ToolCall, "input_error")


def _message(
    role: str,
    content: str,
    tool_calls: tuple[ToolCall, ...],
    tool_call_id: str | None,
    is_error: bool,
    reasoning: tuple[Reasoning, ...] = (),
    state: str | None = None,
) -> Message:
    """``Message(role, content, tool_calls, tool_call_id, is_error, reasoning, state)`` for
    already-checked values."""
    message = _new(Message)
    _set_role(message, role)
    _set_content(message, content)
    _set_tool_calls(message, tool_calls)
    _set_tool_call_id(message, tool_call_id)
    _set_is_error(message, is_error)
    _set_reasoning(message, reasoning)
    _set_state(message, state)
    return message


def message_to_json(message: Message) -> dict[str, Any]:
    """Return the JSON object of ``message`` (a dict of JSON types), defaults left out.

    Shape: ``{"role", "content"}`` plus ``"tool_calls": [{"id", "name", "input"[, "input_error"]}]``
    for an assistant message with calls, ``"reasoning": [{["text"][, "signature"]
    [, "redacted_data"][, "origin", "data"]}]`` for one with reasoning (empty or ``None`` fields
    left out),
    ``"tool_call_id"``, ``"is_error"`` (only when true) and ``"state"`` (only for a note) for a
    tool message, and ``"summary_kept"`` for a ``Summary``.
    """
    data: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        data["tool_calls"] = [call_to_json(call) for call in message.tool_calls]
    if message.reasoning:
        data["reasoning"] = [_reasoning_to_json(r) for r in message.reasoning]
    if message.tool_call_id is not None:
        data["tool_call_id"] = message.tool_call_id
    if message.is_error:
        data["is_error"] = True
    if message.state is not None:
        data["state"] = message.state
    if isinstance(message, Summary):
        data["summary_kept"] = message.kept
    return data


def call_to_json(call: ToolCall) -> dict[str, Any]:
    """The JSON object of one tool call: ``{"id", "name", "input"[, "input_error"]}`` (as in a
    message's ``tool_calls``)."""
    item: dict[str, Any] = {"id": call.id, "name": call.name, "input": call.input}
    if call.input_error is not None:
        item["input_error"] = call.input_error
    return item


def call_from_json(data: Any) -> ToolCall:
    """The tool call of ``call_to_json``'s object.

    Raises:
        ValueError: not a JSON object with a string ``id`` and ``name``, an object ``input`` and
            a string (or absent) ``input_error``.
    """
    return _call_from_json(data)


def json_utf8(data: Any) -> bytes:
    """Compact JSON of ``data`` encoded as UTF-8 (one encode: the session writes these bytes).

    Non-ASCII characters are kept as they are, unless the data holds a lone surrogate (a file
    name decoded with ``surrogateescape``, a ``"\\ud800"`` escape from a model), which has no
    UTF-8 form: then the whole text uses ASCII escapes, which load back as the same string.
    """
    try:
        return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(data, separators=(",", ":")).encode("ascii")


def json_text(data: Any) -> str:
    """``json_utf8`` as text: compact JSON that always has a UTF-8 form (for ``--json`` lines).

    DEL and the C1 controls (U+007F..U+009F: ``\\x9b`` starts an escape sequence on many
    terminals), which JSON may hold raw, are written as ``\\u`` escapes: the same JSON value, and
    no text that can drive a terminal (JSON already escapes U+0000..U+001F).
    """
    text = json_utf8(data).decode("utf-8")
    if text.isascii() and "\x7f" not in text:
        return text
    return _RAW_CONTROLS.sub(lambda found: f"\\u{ord(found.group()):04x}", text)


_RAW_CONTROLS = re.compile("[\x7f-\x9f]")


def message_from_json(data: Any) -> Message:
    """Build a ``Message`` from its JSON object (as ``message_to_json`` writes it).

    A line written before a field existed loads with that field's default (no ``reasoning``:
    no reasoning blocks; a block without ``origin`` and ``data``: no provider-specific fields).
    A user message with ``summary_kept`` is a ``Summary``; code that predates it loads it as a
    plain user message.

    Raises:
        ValueError: ``data`` is not a well-formed message (the text says which field is wrong).
    """
    if type(data) is not dict:
        raise ValueError("not a JSON object")
    get = data.get
    role = get("role")
    if role not in _ROLES:
        raise ValueError(f"bad role: {role!r}")
    content = get("content", "")
    if type(content) is not str:
        raise ValueError("content is not a string")
    if role == "tool":
        call_id = get("tool_call_id")
        if type(call_id) is not str:
            raise ValueError("tool message without a string tool_call_id")
        is_error = get("is_error", False)
        if type(is_error) is not bool:
            raise ValueError("is_error is not a boolean")
        state = get("state")
        if state is not None and (type(state) is not str or state not in CALL_STATES):
            raise ValueError(f"bad tool message state: {state!r}")
        return _message("tool", content, (), call_id, is_error, (), state)
    if role == "user":
        kept = get("summary_kept")
        if kept is None:
            return _message("user", content, (), None, False)
        if type(kept) is not int or kept < 0:
            raise ValueError("summary_kept is not an int >= 0")
        return Summary(content, kept)
    raw_calls = get("tool_calls", ())
    if type(raw_calls) is not list and raw_calls != ():
        raise ValueError("tool_calls is not a list")
    calls = tuple([_call_from_json(c) for c in raw_calls])
    raw_reasoning = get("reasoning")
    if raw_reasoning is None:
        return _message("assistant", content, calls, None, False)
    if type(raw_reasoning) is not list:
        raise ValueError("reasoning is not a list")
    reasoning = tuple([_reasoning_from_json(r) for r in raw_reasoning])
    return _message("assistant", content, calls, None, False, reasoning)


def _reasoning_to_json(block: Reasoning) -> dict[str, Any]:
    data: dict[str, Any] = {}
    if block.text:
        data["text"] = block.text
    if block.signature is not None:
        data["signature"] = block.signature
    if block.redacted_data is not None:
        data["redacted_data"] = block.redacted_data
    if block.data is not None:
        data["origin"] = block.origin
        data["data"] = block.data
    return data


def _reasoning_from_json(data: Any) -> Reasoning:
    if type(data) is not dict:
        raise ValueError("reasoning block is not a JSON object")
    text, signature, redacted = data.get("text", ""), data.get("signature"), data.get("redacted_data")
    if type(text) is not str:
        raise ValueError("reasoning text is not a string")
    if signature is not None and type(signature) is not str:
        raise ValueError("reasoning signature is not a string")
    if redacted is not None and type(redacted) is not str:
        raise ValueError("reasoning redacted_data is not a string")
    opaque = data.get("data")
    if opaque is None:
        return Reasoning(text, signature, redacted)
    origin = data.get("origin")
    if type(opaque) is not dict:
        raise ValueError("reasoning data is not a JSON object")
    if origin is not None and type(origin) is not str:
        raise ValueError("reasoning origin is not a string")
    return Reasoning(text, signature, redacted, origin, opaque)


def _call_from_json(data: Any) -> ToolCall:
    if type(data) is not dict:
        raise ValueError("tool call is not a JSON object")
    call_id, name, call_input = data.get("id"), data.get("name"), data.get("input", {})
    if type(call_id) is not str or type(name) is not str:
        raise ValueError("tool call without a string id and name")
    if type(call_input) is not dict:
        raise ValueError("tool call input is not a JSON object")
    input_error = data.get("input_error")
    if input_error is not None and type(input_error) is not str:
        raise ValueError("tool call input_error is not a string")
    call = _new(ToolCall)
    _set_call_id(call, call_id)
    _set_call_name(call, name)
    _set_call_input(call, call_input)
    _set_call_input_error(call, input_error)
    return call
