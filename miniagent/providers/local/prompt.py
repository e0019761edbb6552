"""The prompt of the embedded model's native client (``LocalChatClient``): demos and turns.

Invariants:

- The prompt is ChatML (SmolLM2's format). It starts with a FIXED PREFIX that depends only on
  the tools (names, parameters, first sentence of each description): a short system turn that
  lists the tools, then a few-shot demo for each built-in tool the request offers (a user request,
  the assistant's ``<tool_call>``, the ``tool`` turn with the result, a one-line answer quoting
  it) and one demo of refusing an impossible task. The caller's system prompt and the
  conversation come after it, so the prefix's evaluated state can be saved once and reused by
  later runs (see ``LocalChatClient``).
- The demo nearest the last user request (``nearest_demo``) is shown once more right before
  that request: the model copies the closest example best. It depends only on that request, so
  the prompt of the turns that answer one request grows by appending (llama.cpp reuses its
  evaluation of the earlier part).
- Every reply is constrained by a grammar (``grammar``): one tool call, written exactly
  as ``render_call`` writes the demos' calls, or an answer.
- Tool results longer than ``TOOL_RESULT_CHARS`` are cut in the prompt (with a note); the record
  keeps them whole.

Why: at 135M parameters the model follows demos, not instructions; the demos also choose the
tool of a first reply (``nearest_demo``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..._attached import split_attached
from ...messages import Message
from ...model import ToolSpec
from .any_tool import nearest_tool
from .demos import DEMOS, MORE_DEMOS, REFUSAL, ROUTING_DEMOS, Demo
from .intent import WRITING_TOOLS, asks_about, asks_refused, choose_tool, cue_words, tells_to_change
from .spans import call_spans, edit_pairs, write_target
from .words import content_words as _words
from .words import file_names

FILE_TOOLS = frozenset(["read_file", "write_file", "edit_file"])
"""Built-in tools whose call needs a file the request names."""

__all__ = [
    "demo_tools",
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


def _intent_words(demo: Demo) -> set[str]:
    """The content words of ``demo``'s request that say what to do: without the words its call
    copies into its arguments (``"hi there"`` of "Write the text hi there into hi.txt." is what
    to write, not what to do)."""
    copied: set[str] = set()
    for value in demo.arguments.values():
        if isinstance(value, str):
            copied |= _words(value)
    return _words(demo.user) - copied


def nearest_demo(request: str, tools: Sequence[ToolSpec]) -> Demo | None:
    """The demo for ``request``: a ``custom`` demo of a tool no demo knows when it is nearer
    than every built-in demo (``any_tool.nearest_tool`` against the demos' shared intent words);
    else a demo of the built-in tool the request's cue words ask for (``intent.choose_tool``),
    the one of that tool nearest the request (``_demo_of``; a tool that reads or writes a file
    only when the request names one: "Show me all TODOs" is a search; an edit only when the
    request says what to replace with what, ``spans.edit_pairs``; a write only when it names the
    file the write goes to, ``spans.write_target``; a request to change a file that no write or
    edit fits gets no other tool: "Replace line 3 of notes.txt with hi" is refused, not read);
    else, when the request names
    a file and asks about it (``intent.asks_about``: a question, not "Send config.ini to Bob"),
    the ``read_file`` demo; else ``None`` (no tool is guessed)."""
    fitting = _fitting(tools)
    known = {demo.tool for demo in fitting}
    other, score = nearest_tool(request, [spec for spec in tools if spec.name not in known])
    if other is not None and score > _overlap(request, fitting):
        return Demo(request, other.name, {}, "", "", custom=True)
    offered = known if file_names(request) else known - FILE_TOOLS
    if not edit_pairs(request):
        offered = offered - {"edit_file"}  # an edit needs what to replace and with what
    if write_target(request) is None:
        offered = offered - {"write_file"}  # a write needs the file it goes to ("to x.txt")
    chosen = choose_tool(request, offered)
    if chosen is not None and tells_to_change(request) and chosen[0] not in WRITING_TOOLS:
        return None  # a change it cannot make is refused, never answered by a read
    if chosen is not None:
        return _demo_of(chosen[0], request, fitting)
    if file_names(request) and asks_about(request) and not asks_refused(request):
        return next((d for d in DEMOS if d.tool == "read_file" and d in fitting), None)
    return None


def _fitting(tools: Sequence[ToolSpec]) -> list[Demo]:
    by_name = {spec.name: spec for spec in tools}
    return [demo for demo in (*DEMOS, *MORE_DEMOS, *ROUTING_DEMOS) if _demo_fits(demo, by_name)]


def demo_tools(tools: Sequence[ToolSpec]) -> set[str]:
    """The names of ``tools`` some built-in demo shows (the tools the router chooses)."""
    return {demo.tool for demo in _fitting(tools)}


def _overlap(request: str, demos: Sequence[Demo]) -> int:
    """The most intent words (``_intent_words``) ``request`` shares with one of ``demos``."""
    wanted = _words(request)
    return max((len(wanted & _intent_words(demo)) for demo in demos), default=0)


def _demo_of(tool: str, request: str, demos: Sequence[Demo]) -> Demo:
    """The demo of ``tool`` nearest ``request``: one of the request's kind first (``_kind``: a
    listing of a named folder takes a demo with a ``path``, one of the project a demo without;
    a search for a definition, a marker comment or a word takes a demo of that search), then
    the one sharing most cue words (``intent.cue_words``), then the first."""
    wanted = set(cue_words(request))
    kind = _kind(tool, call_spans(tool, request), wanted)

    def score(demo: Demo) -> tuple[bool, int]:
        mine = _kind(tool, {k: [v] for k, v in demo.arguments.items()}, set(cue_words(demo.user)))
        return mine == kind, len(wanted & set(cue_words(demo.user)))

    return max((demo for demo in demos if demo.tool == tool), key=score)


def _kind(tool: str, spans: dict[str, Any], cues: set[str]) -> str:
    """What kind of call of ``tool`` a request (or demo) with these argument ``spans`` and cue
    words asks for: ``"path"`` or ``""`` for a listing; ``"marker"``, ``"define"`` or
    ``"word"`` for a search; ``""`` for other tools."""
    if tool == "list_dir":
        return "path" if "path" in spans else ""
    if tool == "grep":
        pattern = spans.get("pattern", [""])[0]
        if "marker" in cues or (pattern.isupper() and pattern.isalpha()):
            return "marker"
        return "define" if cues & {"define", "function", "class", "method"} else "word"
    return ""


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


def _demo_fits(demo: Demo, tools: dict[str, ToolSpec]) -> bool:
    spec = tools.get(demo.tool)
    if spec is None:
        return False
    properties = spec.input_schema.get("properties")
    return isinstance(properties, dict) and all(name in properties for name in demo.arguments)


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
    for demo in [REFUSAL, *(d for d in _interleaved() if _demo_fits(d, by_name))]:
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
