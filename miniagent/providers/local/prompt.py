"""The prompt of the embedded model's native client (``LocalChatClient``): demos and turns.

Invariants:

- The prompt is ChatML (SmolLM2's format). It starts with a FIXED PREFIX that depends only on
  the tools (names, parameters, first sentence of each description): a short system turn that
  lists the tools, then a few-shot demo for each built-in tool the request offers (a user request,
  the assistant's ``<tool_call>``, the ``tool`` turn with the result, a one-line answer quoting
  it) and one demo of refusing an impossible task. The caller's system prompt and the
  conversation come after it, so the prefix's evaluated state can be saved once and reused by
  later runs (see ``LocalChatClient``).
- The demo chosen for the last user request (``choose.nearest_demo``) is shown once more right before
  that request: the model copies the closest example best. It depends only on that request, so
  the prompt of the turns that answer one request grows by appending (llama.cpp reuses its
  evaluation of the earlier part).
- Every reply is constrained by a grammar (``grammar``): one tool call, written exactly
  as ``render_call`` writes the demos' calls, or an answer.
- Tool results longer than ``TOOL_RESULT_CHARS`` are cut in the prompt (with a note); the record
  keeps them whole.

Why: at 135M parameters the model follows demos, not instructions.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..._attached import split_attached
from ...messages import Message
from ...model import ToolSpec
from .choose import demo_fits, nearest_demo
from .demos import DEMOS, MORE_DEMOS, REFUSAL, Demo

__all__ = [
    "nearest_demo",
    "TOOL_RESULT_CHARS",
    "prefix",
    "render",
    "render_call",
]

TOOL_RESULT_CHARS = 1500
"""Most characters of one tool result shown to the model (the rest is cut with a note)."""

_INSTRUCTIONS = """\
You are a helpful assistant that uses tools. Tools:
{tools}
To use a tool, reply with only:
<tool_call>
{{"name": "TOOL", "arguments": {{...}}}}
</tool_call>
Always use a tool first; never guess. After the tool result, answer in one line that quotes it."""


def _interleaved() -> list[Demo]:
    """``MORE_DEMOS`` then ``DEMOS`` (one per tool, ``read_file`` last): two phrasings per tool,
    so the model learns to take the path from the request, not from the nearest example."""
    return [*(d for d in MORE_DEMOS if d.tool), *DEMOS]


def _demo_turns(demo: Demo) -> list[str]:
    if not demo.tool:  # answered at once
        return [_turn("user", demo.user), _turn("assistant", demo.answer)]
    return [
        _turn("user", demo.user),
        _turn("assistant", render_call(demo.tool, demo.arguments)),
        _turn("tool", demo.result),
        _turn("assistant", demo.answer),
    ]


def _first_sentence(text: str) -> str:
    text = " ".join(text.split())
    end = text.find(". ")
    return text if end < 0 else text[: end + 1]


def _signature(spec: ToolSpec) -> str:
    properties = spec.input_schema.get("properties")
    required = set(spec.input_schema.get("required") or ())
    names = []
    if isinstance(properties, dict):
        names = [name if name in required else f"{name}?" for name in properties]
    return f"- {spec.name}({', '.join(names)}): {_first_sentence(spec.description)}"


def render_call(name: str, arguments: Any) -> str:
    """The ``<tool_call>`` block of one call, exactly as the grammar makes the model write it."""
    payload = f'{{"name": {json.dumps(name)}, "arguments": {json.dumps(arguments, ensure_ascii=False)}}}'
    return f"<tool_call>\n{payload}\n</tool_call>"


def _turn(role: str, text: str) -> str:
    return f"<|im_start|>{role}\n{text}<|im_end|>\n"


def prefix(tools: Sequence[ToolSpec]) -> str:
    """The fixed start of every prompt for ``tools`` (system turn and demos); ``""`` without tools."""
    if not tools:
        return ""
    by_name = {spec.name: spec for spec in tools}
    parts = [_turn("system", _INSTRUCTIONS.format(tools="\n".join(_signature(s) for s in tools)))]
    for demo in [REFUSAL, *(d for d in _interleaved() if demo_fits(d, by_name))]:
        parts += _demo_turns(demo)
    return "".join(parts)


def _cut(text: str) -> str:
    if len(text) <= TOOL_RESULT_CHARS:
        return text
    return f"{text[:TOOL_RESULT_CHARS]}\n[... {len(text) - TOOL_RESULT_CHARS} more characters not shown]"


def last_request(messages: Sequence[Message]) -> str:
    """The text of the last user message of ``messages`` (``""`` without one), without a text
    attached to it (``_attached``): the request's words choose the demo and its guards, never the
    words of a piped log ("we will copy config.txt to backup.txt" refused a summary as a
    two-step request)."""
    text = next((m.content for m in reversed(messages) if m.role == "user"), "")
    return split_attached(text)[0]


def attached_text(message: Message | None) -> str | None:
    """The text attached to ``message`` when it is a user message with one (``_attached``)."""
    if message is None or message.role != "user":
        return None
    return split_attached(message.content)[1]


def render(
    system: str, messages: Sequence[Message], tools: Sequence[ToolSpec], demo: Demo | None = None
) -> tuple[str, str]:
    """Return ``(prefix, rest)``: the prompt is ``prefix + rest`` and ends with the open
    assistant turn. Without tools there is no prefix and ``system`` is the first turn. ``demo``
    (the demo nearest the last request) is shown again right before the last user message: the
    model copies the nearest example best."""
    fixed = prefix(tools)
    last_user = max((i for i, m in enumerate(messages) if m.role == "user"), default=-1)
    parts: list[str] = []
    if system.strip():
        parts.append(_turn("system", system.strip()))
    elif not tools:
        parts.append(_turn("system", "You are a helpful assistant."))
    for index, message in enumerate(messages):
        if index == last_user and demo is not None and demo.tool and not demo.custom:
            parts += _demo_turns(demo)
        if message.role == "assistant":
            blocks = [message.content] if message.content else []
            blocks += [render_call(call.name, call.input) for call in message.tool_calls]
            parts.append(_turn("assistant", "\n".join(blocks)))
        elif message.role == "tool":
            parts.append(_turn("tool", _cut(message.content)))
        else:
            parts.append(_turn("user", message.content))
    parts.append("<|im_start|>assistant\n")
    return fixed, "".join(parts)
