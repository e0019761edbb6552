"""The Hermes ``<tool_call>`` markup, read back from streamed text.

Small models (and llama.cpp's parser when it misses a block) write tool calls as text:
``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``. A block the server's parser missed
(single quotes, a trailing comma, two blocks in a row) arrives as plain ``content``.
``ToolCallMarkup`` splits streamed text into prose and ``<tool_call>`` blocks, and
``parse_tool_call_block`` reads a block leniently (JSON, else a Python-style literal: single
quotes, trailing commas, ``True``/``true``); a block that still cannot be read becomes a call with
an ``input_error`` (never prose), so the model is told and the markup is never a final answer.

Used by the OpenAI-compatible client (``tool_call_markup=True``) and taught to the embedded
model by its chat template (``local/template.py``).
"""

from __future__ import annotations

import ast
import re
import warnings
from typing import Any

from .._json import JSONDepthError, loads
from ._decode import nonfinite_problem, parse_tool_input

__all__ = ["OPEN_TAG", "CLOSE_TAG", "ToolCallMarkup", "parse_tool_call_block"]

OPEN_TAG = "<tool_call>"
CLOSE_TAG = "</tool_call>"


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
