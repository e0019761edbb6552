"""The chat template that lets the embedded SmolLM2-135M-Instruct model call tools.

Used by ``miniagent.providers.local`` as llama.cpp's ``chat_template`` (with ``use_jinja``). The
GGUF's own template is plain ChatML without tools, so llama.cpp would ignore ``tools`` and the
model would invent answers. This one (measured, see ``local.py``):

- lists the tools in a ``<tools>`` block of the system turn and asks for the Hermes form
  ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``, which llama.cpp's parser turns into
  OpenAI ``tool_calls`` deltas and Anthropic ``tool_use`` blocks;
- shows five short example exchanges (a write, four reads: request -> tool call -> ``tool`` turn
  with the content -> a one-line answer quoting it). With fewer examples the 135M model answered
  in prose without calling; the examples are only rendered when the request has tools;
- renders tool results as a ``tool`` turn (in a ``user`` turn the model copies the examples);
- appends `` (use a tool)`` to the last message when it is the user's and tools are offered, and
  says "Your first reply to a request is a <tool_call>": measured on six prompts, this doubled the
  smallest log-probability margin of the ``<`` (start of ``<tool_call>``) first token over the
  best prose token (0.22 -> 0.65 with the six built-in tools, 0.30 -> 0.76 with ``read_file``
  alone). Without it the margin was small enough that a prompt-cache hit (numerically slightly
  different logits) once flipped a call into a made-up answer.

The template engine (llama.cpp's minja/jinja) has no ``| list`` filter on mappings.

Reading the form back: llama.cpp's parser turns well-formed blocks into tool calls, but a block it
misses (single quotes, a trailing comma, two blocks in a row) arrives as plain ``content`` (issue
11, kind 7). ``ToolCallMarkup`` splits streamed text into prose and ``<tool_call>`` blocks, and
``parse_tool_call_block`` reads a block leniently (JSON, else a Python-style literal: single
quotes, trailing commas, ``True``/``true``); a block that still cannot be read becomes a call with
an ``input_error`` (never prose), so the model is told and the markup is never a final answer.
"""

from __future__ import annotations

import ast
import re
import warnings
from typing import Any

from .._json import JSONDepthError, loads
from ._decode import nonfinite_problem, parse_tool_input

__all__ = ["CHAT_TEMPLATE", "OPEN_TAG", "CLOSE_TAG", "ToolCallMarkup", "parse_tool_call_block"]

OPEN_TAG = "<tool_call>"
CLOSE_TAG = "</tool_call>"

CHAT_TEMPLATE: str = """{%- set ns = namespace(system="You are a helpful assistant.") -%}
{%- if messages and messages[0].role == "system" -%}{%- set ns.system = messages[0].content -%}{%- endif -%}
<|im_start|>system
{{ ns.system }}
{%- if tools %}

You can call tools. The tools are listed inside <tools></tools>:
<tools>
{% for tool in tools -%}
{{ (tool.function if tool.function is defined else tool) | tojson }}
{% endfor -%}
</tools>
To call a tool, reply with only:
<tool_call>
{"name": "TOOL_NAME", "arguments": {"ARGUMENT": "VALUE"}}
</tool_call>
Always call a tool first; never guess what a file contains. \
Your first reply to a request is a <tool_call>. \
The result comes back in a tool turn. Then answer the user in one short line that quotes the result.
{%- endif %}<|im_end|>
{% if tools -%}
<|im_start|>user
Save the text 'done' in status.txt<|im_end|>
<|im_start|>assistant
<tool_call>
{"name": "write_file", "arguments": {"path": "status.txt", "content": "done"}}
</tool_call><|im_end|>
<|im_start|>tool
wrote 4 characters to status.txt<|im_end|>
<|im_start|>assistant
Done: status.txt now contains "done".<|im_end|>
<|im_start|>user
Please read the file todo.txt and tell me what it says<|im_end|>
<|im_start|>assistant
<tool_call>
{"name": "read_file", "arguments": {"path": "todo.txt"}}
</tool_call><|im_end|>
<|im_start|>tool
Buy milk and eggs.<|im_end|>
<|im_start|>assistant
It says: "Buy milk and eggs."<|im_end|>
<|im_start|>user
Show me src/main.py<|im_end|>
<|im_start|>assistant
<tool_call>
{"name": "read_file", "arguments": {"path": "src/main.py"}}
</tool_call><|im_end|>
<|im_start|>tool
print('hi')<|im_end|>
<|im_start|>assistant
It says: "print('hi')"<|im_end|>
<|im_start|>user
Read data.csv<|im_end|>
<|im_start|>assistant
<tool_call>
{"name": "read_file", "arguments": {"path": "data.csv"}}
</tool_call><|im_end|>
<|im_start|>tool
a,b
1,2<|im_end|>
<|im_start|>assistant
It says: "a,b 1,2"<|im_end|>
<|im_start|>user
What is in docs/intro.md?<|im_end|>
<|im_start|>assistant
<tool_call>
{"name": "read_file", "arguments": {"path": "docs/intro.md"}}
</tool_call><|im_end|>
<|im_start|>tool
Welcome to the project.<|im_end|>
<|im_start|>assistant
It says: "Welcome to the project."<|im_end|>
{% endif -%}
{%- for message in messages -%}
{%- if message.role == "system" -%}
{%- elif message.role == "assistant" -%}
<|im_start|>assistant
{% if message.content %}{{ message.content }}{% endif %}
{%- if message.tool_calls %}
{%- for call in message.tool_calls %}
{%- set fn = call.function if call.function is defined else call %}
{%- if not loop.first or message.content %}
{% endif -%}
<tool_call>
{"name": "{{ fn.name }}", "arguments": \
{% if fn.arguments is string %}{{ fn.arguments }}{% else %}{{ fn.arguments | tojson }}{% endif %}}
</tool_call>
{%- endfor %}
{%- endif %}<|im_end|>
{% elif message.role == "tool" -%}
<|im_start|>tool
{{ message.content }}<|im_end|>
{% else -%}
<|im_start|>{{ message.role }}
{{ message.content }}\
{% if tools and loop.last and message.role == "user" %} (use a tool){% endif %}<|im_end|>
{% endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}
<|im_start|>assistant
{% endif -%}
"""


class ToolCallMarkup:
    """Splits streamed text into prose and the bodies of ``<tool_call>...</tool_call>`` blocks.

    ``feed`` returns the prose that is certainly outside a block (a tail that could be the start
    of ``<tool_call>`` is held back until the next piece) and the bodies of blocks that closed;
    ``finish`` returns the held-back prose and the body of a block left open at the end (taken
    as a block: a model that stops before ``</tool_call>`` still meant a call). Memory is the
    open block plus at most ``len(OPEN_TAG) - 1`` characters.
    """

    __slots__ = ("_inside", "_pending")

    def __init__(self) -> None:
        """Start outside any block."""
        self._pending = ""
        self._inside = False

    def feed(self, text: str) -> tuple[str, list[str]]:
        """Add a text delta; return ``(prose to show now, finished block bodies)``."""
        pending = self._pending + text
        prose: list[str] = []
        bodies: list[str] = []
        while True:
            if self._inside:
                end = pending.find(CLOSE_TAG)
                if end < 0:
                    break
                bodies.append(pending[:end])
                pending = pending[end + len(CLOSE_TAG) :]
                self._inside = False
            else:
                start = pending.find(OPEN_TAG)
                if start < 0:
                    keep = _partial_tag_length(pending)
                    prose.append(pending[: len(pending) - keep])
                    pending = pending[len(pending) - keep :]
                    break
                prose.append(pending[:start])
                pending = pending[start + len(OPEN_TAG) :]
                self._inside = True
        self._pending = pending
        return "".join(prose), bodies

    def finish(self) -> tuple[str, str | None]:
        """End of the stream: ``(held-back prose, body of a block left open or None)``."""
        pending, self._pending = self._pending, ""
        if self._inside:
            self._inside = False
            return "", pending
        return pending, None


def _partial_tag_length(text: str) -> int:
    """Length of the longest suffix of ``text`` that is a proper prefix of ``OPEN_TAG``."""
    for size in range(min(len(OPEN_TAG) - 1, len(text)), 0, -1):
        if OPEN_TAG.startswith(text[-size:]):
            return size
    return 0


_NAME = re.compile(r"""["']?name["']?\s*[:=]\s*["']([^"'\s]+)["']""")
_LITERALS = {"true": True, "false": False, "null": None, "True": True, "False": False, "None": None}


def parse_tool_call_block(body: str) -> tuple[str, dict[str, Any], str | None]:
    """Read the body of one ``<tool_call>`` block into ``(name, input, input_error)``.

    The body is ``{"name": NAME, "arguments": {...}}`` (``"parameters"`` is taken too; arguments
    may be JSON text holding the object). Read as JSON, else leniently as a literal in Python
    syntax (single quotes, trailing commas, ``True``/``False``/``None`` as well as
    ``true``/``false``/``null``; nothing is evaluated). When that fails, ``input`` is ``{}`` and
    ``input_error`` says why, e.g. ``"the <tool_call> block could not be read: ..."``; the name
    is then whatever ``"name": "..."`` the text holds, else ``""``.
    """
    value, problem = _lenient_value(body.strip())
    if problem is None and not isinstance(value, dict):
        problem = "it is not a JSON object"
    if problem is not None:
        found = _NAME.search(body)
        return (found.group(1) if found else ""), {}, f"the <tool_call> block could not be read: {problem}"
    assert isinstance(value, dict)
    name = value.get("name")
    if not isinstance(name, str) or not name:
        return "", {}, 'the <tool_call> block has no "name"'
    arguments = value.get("arguments", value.get("parameters", {}))
    if isinstance(arguments, str):
        return (name, *parse_tool_input(arguments))
    if not isinstance(arguments, dict):
        return name, {}, 'the <tool_call> block\'s "arguments" is not an object'
    nonfinite = nonfinite_problem(arguments)
    if nonfinite is not None:
        return name, {}, f"arguments are not valid JSON: {nonfinite}"
    return name, arguments, None


def _lenient_value(text: str) -> tuple[Any, str | None]:
    """``(value, None)`` from JSON or a Python-syntax literal, else ``(None, problem)``."""
    try:
        return loads(text), None
    except JSONDepthError as exc:
        return None, str(exc)
    except ValueError:
        pass
    try:
        with warnings.catch_warnings():  # e.g. "invalid escape sequence" in a Windows path
            warnings.simplefilter("ignore")
            tree = ast.parse(text, mode="eval")
        return _literal(tree.body), None
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return None, str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__


def _literal(node: ast.expr) -> Any:
    """The value of a literal expression: dicts, lists, tuples, strings, numbers, the names of
    ``_LITERALS``, a sign before a number.

    Raises:
        ValueError: anything else (a call, an operator, another name).
    """
    if isinstance(node, ast.Constant) and (node.value is None or isinstance(node.value, (str, int, float))):
        return node.value
    if isinstance(node, ast.Dict):
        if any(key is None for key in node.keys):  # {**x}
            raise ValueError("unexpected ** in a literal")
        keys = [_literal(key) for key in node.keys if key is not None]
        if not all(isinstance(key, str) for key in keys):
            raise ValueError("an object key is not a string")
        return dict(zip(keys, [_literal(value) for value in node.values], strict=True))
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_literal(item) for item in node.elts]
    if isinstance(node, ast.Name) and node.id in _LITERALS:
        return _LITERALS[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        operand = _literal(node.operand)
        if isinstance(operand, (int, float)) and not isinstance(operand, bool):
            return -operand if isinstance(node.op, ast.USub) else operand
    raise ValueError(f"unexpected {type(node).__name__} in a literal")
