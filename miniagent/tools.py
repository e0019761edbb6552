"""Tools the model may call, their results, and the approval hook.

- ``Tool``: a name, a description, a JSON Schema of its input and an ``execute(input, cancel)``
  callable returning a ``ToolResult``. ``read_only`` tells approval policies that the tool changes
  nothing outside the process.
- ``@tool``: builds a ``Tool`` from a typed function: the name from the function, the description
  and per-argument texts from its docstring (Google style ``Args:``), the schema from the type hints.
- ``check_input(schema, input)``: the loop runs it before ``execute``; a mismatch becomes an error
  result telling the model what was wrong, and the tool does not run.
- ``Approval`` / ``BeforeToolCall``: the hook asked before each call (spec: approval comes before
  checkpoint 3; no hook means every call is approved).
"""

from __future__ import annotations

import inspect
import json
import re
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, overload

from .messages import ToolCall

if TYPE_CHECKING:  # annotations only: the core never starts a thread
    import threading

__all__ = ["ToolResult", "Tool", "Approval", "BeforeToolCall", "tool", "check_input"]


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a tool returns: text for the model and whether it reports a failure."""

    content: str
    is_error: bool = False


Execute = Callable[[dict[str, Any], "threading.Event | None"], ToolResult]


@dataclass(frozen=True, slots=True)
class Tool:
    """A tool the loop can execute.

    Args:
        name: the name the model uses (unique within one run).
        description: what the tool does, for the model.
        input_schema: a JSON Schema (``{"type": "object", "properties": ..., "required": ...}``).
        execute: ``execute(input, cancel) -> ToolResult``; ``input`` is the call's arguments
            (already checked against ``input_schema``), ``cancel`` the run's event or ``None``.
            A tool should return an error ``ToolResult`` for failures the model caused; raising is
            for bugs (the loop then closes the calls and re-raises, spec "approval / execute throws").
        read_only: ``True`` when the tool changes nothing outside the process.
    """

    name: str
    description: str
    input_schema: dict[str, Any]
    execute: Execute
    read_only: bool = False


@dataclass(frozen=True, slots=True)
class Approval:
    """The answer of a ``before_tool_call`` hook. ``reason`` is recorded when not approved."""

    approved: bool
    reason: str = ""


BeforeToolCall = Callable[[ToolCall], Approval]


# --- input checking -----------------------------------------------------------------------------

_JSON_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: (
        (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer())
    ),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}


def _json_type_name(value: Any) -> str:
    for name in ("boolean", "integer", "number", "string", "array", "object", "null"):
        if _JSON_TYPES[name](value):
            return name
    return type(value).__name__


def _accept(value: Any) -> bool:
    return True


def _type_matches(expected: Any, value: Any) -> bool:
    """Whether ``value`` has the JSON type ``expected`` (a name or a list of names; an unknown
    name accepts anything). Runs once per call per schema node: kept free of allocations."""
    if isinstance(expected, list):
        return any(_JSON_TYPES.get(name, _accept)(value) for name in expected)
    return _JSON_TYPES.get(expected, _accept)(value)


def check_input(schema: dict[str, Any], value: Any, where: str = "input") -> str | None:
    """Check ``value`` against the subset of JSON Schema that tool schemas use.

    Checked: ``type`` (a name or a list of names), ``enum``, ``required``, ``properties`` (each
    present property recursively), ``additionalProperties: false``, ``items`` of arrays. Other
    keywords are accepted without checking.

    Returns:
        ``None`` when the value fits, else one line saying where and what is wrong, e.g.
        ``input.path: expected string, got integer``.
    """
    expected = schema.get("type")
    if expected is not None and not _type_matches(expected, value):
        names = expected if isinstance(expected, list) else [expected]
        return f"{where}: expected {' or '.join(names)}, got {_json_type_name(value)}"
    if "enum" in schema and value not in schema["enum"]:
        choices = ", ".join(json.dumps(c) for c in schema["enum"])
        return f"{where}: {json.dumps(value)} is not one of {choices}"
    if isinstance(value, dict):
        missing = [k for k in schema.get("required", ()) if k not in value]
        if missing:
            return f"{where}: missing required propert{'y' if len(missing) == 1 else 'ies'} " + (
                ", ".join(missing)
            )
        properties = schema.get("properties", {})
        for key, item in value.items():
            if key in properties:
                problem = check_input(properties[key], item, f"{where}.{key}")
                if problem:
                    return problem
            elif schema.get("additionalProperties") is False:
                allowed = ", ".join(properties) or "none"
                return f"{where}: unknown property {key!r} (allowed: {allowed})"
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            problem = check_input(schema["items"], item, f"{where}[{index}]")
            if problem:
                return problem
    return None


# --- the @tool decorator --------------------------------------------------------------------------

_SCALARS: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


def _schema_for(annotation: Any) -> tuple[dict[str, Any], bool]:
    """Return (JSON Schema, accepts None) for a type hint."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        non_none = [a for a in args if a is not type(None)]
        optional = len(non_none) < len(args)
        if len(non_none) == 1:
            return _schema_for(non_none[0])[0], optional
        return {"anyOf": [_schema_for(a)[0] for a in non_none]}, optional
    if annotation in _SCALARS:
        return {"type": _SCALARS[annotation]}, False
    if origin is typing.Literal:
        return {"enum": list(args)}, False
    if annotation in (list, tuple) or origin in (list, tuple, set, frozenset):
        schema: dict[str, Any] = {"type": "array"}
        if args and args[-1] is not Ellipsis:
            schema["items"] = _schema_for(args[0])[0]
        return schema, False
    if annotation is dict or origin is dict:
        return {"type": "object"}, False
    if annotation is Any or annotation is inspect.Parameter.empty:
        return {}, False
    raise TypeError(f"@tool cannot describe the type {annotation!r} in JSON Schema")


_SECTION = r"^([A-Z][A-Za-z ]*):\s*$"
_ARG_LINE = r"^\s*(\*{0,2}\w+)\s*(\([^)]*\))?\s*:\s*(.*)$"
_ARGS_SECTIONS = frozenset(("Args", "Arguments", "Parameters"))


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into (description, {argument: text}).

    The description is the text before the first section header (``Args:``, ``Returns:``, ...).
    """
    description: list[str] = []
    arguments: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    arg_indent = 0
    # re.match caches the compiled patterns; compiling them at import would cost every
    # ``import miniagent``, not only programs that use @tool.
    for line in inspect.cleandoc(doc).splitlines():
        header = re.match(_SECTION, line)
        if header:
            section, current = header.group(1), None
            continue
        if section is None:
            description.append(line)
            continue
        if section not in _ARGS_SECTIONS or not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        match = re.match(_ARG_LINE, line)
        if match and (current is None or indent <= arg_indent):
            current, arg_indent = match.group(1).lstrip("*"), indent
            arguments[current] = match.group(3).strip()
        elif current is not None:
            arguments[current] = f"{arguments[current]} {line.strip()}".strip()
    return "\n".join(description).strip(), arguments


def _to_result(value: Any) -> ToolResult:
    if isinstance(value, ToolResult):
        return value
    if isinstance(value, str):
        return ToolResult(value)
    return ToolResult(json.dumps(value, ensure_ascii=False, default=str))


def _make_tool(
    function: Callable[..., Any],
    name: str | None,
    description: str | None,
    read_only: bool,
) -> Tool:
    if inspect.iscoroutinefunction(function) or inspect.isasyncgenfunction(function):
        raise TypeError(
            f"@tool needs a plain function; {function.__name__} is async (the loop is synchronous)"
        )
    signature = inspect.signature(function)
    hints = typing.get_type_hints(function)
    doc_text, doc_args = _parse_docstring(function.__doc__ or "")
    properties: dict[str, Any] = {}
    required: list[str] = []
    wants_cancel = False
    for parameter in signature.parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise TypeError(f"@tool does not support *args or **kwargs ({function.__name__})")
        annotation = hints.get(parameter.name, inspect.Parameter.empty)
        if parameter.name == "cancel":
            wants_cancel = True
            continue
        schema, nullable = _schema_for(annotation)
        if nullable and isinstance(schema.get("type"), str):
            schema = {**schema, "type": [schema["type"], "null"]}
        if parameter.name in doc_args:
            schema = {**schema, "description": doc_args[parameter.name]}
        properties[parameter.name] = schema
        if parameter.default is inspect.Parameter.empty:
            required.append(parameter.name)
    input_schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        input_schema["required"] = required
    input_schema["additionalProperties"] = False

    def execute(arguments: dict[str, Any], cancel: threading.Event | None) -> ToolResult:
        if wants_cancel:
            return _to_result(function(**arguments, cancel=cancel))
        return _to_result(function(**arguments))

    return Tool(
        name=name or function.__name__,
        description=description if description is not None else doc_text,
        input_schema=input_schema,
        execute=execute,
        read_only=read_only,
    )


@overload
def tool(function: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    *, name: str | None = None, description: str | None = None, read_only: bool = False
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    function: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    read_only: bool = False,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Turn a typed function into a ``Tool``. Use as ``@tool`` or ``@tool(read_only=True)``.

    - name: ``name`` or the function's name.
    - description: ``description`` or the docstring's text before its sections.
    - input schema: one property per parameter, typed from the hints (``str`` string, ``int``
      integer, ``float`` number, ``bool`` boolean, ``list[X]`` array, ``dict`` object,
      ``Literal[...]`` enum, ``X | None`` nullable); described by the docstring's ``Args:`` entry;
      required unless it has a default. Extra properties are refused.
    - A parameter named ``cancel`` is not part of the schema: it receives the run's
      ``threading.Event`` (or ``None``), for tools that can stop early.
    - Return value: a ``ToolResult`` as is, a ``str`` as the content, anything else as JSON.
      Exceptions propagate to the loop (which closes the calls and re-raises them).

    Raises:
        TypeError: a parameter type has no JSON Schema form, the function takes ``*args``, or it
            is ``async`` (the loop is synchronous).
    """
    if function is not None:
        return _make_tool(function, name, description, read_only)

    def decorate(inner: Callable[..., Any]) -> Tool:
        return _make_tool(inner, name, description, read_only)

    return decorate
