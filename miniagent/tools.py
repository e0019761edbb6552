"""Tools the model may call, their results, and the approval hook.

- ``Tool``: a name, a description, a JSON Schema of its input and an ``execute(input, cancel)``
  callable returning a ``ToolResult``. ``read_only`` tells approval policies that the tool changes
  nothing outside the process.
- ``@tool``: builds a ``Tool`` from a typed function: the name from the function, the description
  and per-argument texts from its docstring (Google style ``Args:``), the schema from the type hints
  (``miniagent.schema``); ``strict=True`` gives OpenAI's strict-mode form.
- ``check_input(schema, input)`` (``miniagent.validation``): the loop runs it before ``execute``;
  a mismatch becomes an error result telling the model what was wrong, and the tool does not run.
- ``Approval`` / ``BeforeToolCall``: the hook asked before each call (spec: approval comes before
  checkpoint 3; no hook means every call is approved). ``Approval.defer()`` postpones a call: the
  run stops ``deferred`` before it, and a later run asks again (DESIGN.md "Unattended runs").
- ``TOOL_OUTPUT_CHARS`` / ``tool_output_chars(context_max_chars)``: the one cap of a tool result
  that the built-in tools (``toolbox.default_tools``), MCP servers and the CLI share.
"""

from __future__ import annotations

import inspect
import json
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, overload

from .messages import ToolCall
from .validation import check_value, object_problems

if TYPE_CHECKING:  # annotations only: the core never starts a thread
    import threading

__all__ = [
    "ToolResult",
    "Tool",
    "Approval",
    "BeforeToolCall",
    "tool",
    "check_input",
    "TOOL_OUTPUT_CHARS",
    "MIN_TOOL_OUTPUT_CHARS",
    "tool_output_chars",
]

TOOL_OUTPUT_CHARS = 30_000
"""The cap of one tool result in characters when no context budget asks for less: the default of
``toolbox.default_tools(max_output_chars=)`` and of the MCP servers' ``max_result_chars``."""

MIN_TOOL_OUTPUT_CHARS = 200
"""The smallest cap of one tool result in characters that the toolbox and MCP servers accept."""


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
        strict: ``input_schema`` is in OpenAI's strict-mode form and providers that can enforce
            it should (OpenAI-compatible: ``"strict": true`` on the function, only when the schema
            keeps every strict rule, ``output.strict_compatible``; else it goes non-strict).
        repeatable: ``True`` for a tool whose same call may rightly give the same result again
            and again (a poll: "is the job done?"); its calls never count towards
            ``run_agent(max_repeats=...)``.
    """

    name: str
    description: str
    input_schema: dict[str, Any]
    execute: Execute
    read_only: bool = False
    strict: bool = False
    repeatable: bool = False


@dataclass(frozen=True, slots=True)
class Approval:
    """The answer of a ``before_tool_call`` hook. ``reason`` is recorded when not approved.

    Args:
        approved: the call may run.
        reason: why not (recorded as the call's error result; ``tool call not approved`` when
            empty); for a deferred call, why it waits (kept in the record's ``pending`` note).
        deferred: the decision is postponed (build it with ``Approval.defer``): the run stops
            with stop reason ``deferred`` before this call starts; it and the later calls of its
            turn stay pending, with no result, until a later run asks again
            (``run_agent(user=None)``). ``approved`` is then false, so code that only reads
            ``approved`` never runs a deferred call.
    """

    approved: bool
    reason: str = ""
    deferred: bool = False

    @classmethod
    def defer(cls, reason: str = "") -> Approval:
        """``Approval(False, reason, deferred=True)``: postpone the call (DESIGN.md "Unattended
        runs"). ``reason``: why it waits, for the person who will decide (characters)."""
        return cls(False, reason, True)


BeforeToolCall = Callable[[ToolCall], Approval]


def tool_output_chars(context_max_chars: int | None) -> int:
    """The cap of one tool result in characters for a run with context budget
    ``context_max_chars`` (characters; ``None``: no budget).

    Returns:
        ``TOOL_OUTPUT_CHARS``, or half of the budget when that is smaller (never below
        ``MIN_TOOL_OUTPUT_CHARS``), so that a tool call and its result always fit in what is sent.
    """
    if context_max_chars is None:
        return TOOL_OUTPUT_CHARS
    return max(MIN_TOOL_OUTPUT_CHARS, min(TOOL_OUTPUT_CHARS, context_max_chars // 2))


# --- input checking -----------------------------------------------------------------------------

MAX_PROBLEMS = 10
"""Most problems ``check_input`` reports for one call's arguments."""


def check_input(
    schema: dict[str, Any], value: Any, where: str = "input", *, cancel: threading.Event | None = None
) -> str | None:
    """Check a tool call's decoded arguments against the tool's ``input_schema``.

    The loop runs it before ``execute``; a problem becomes an error result the model reads (the
    tool does not run). JSON Schema 2020-12: the keywords the ``@tool`` decorator emits and those
    written by hand (``anyOf``, ``oneOf``, ``allOf``, ``const``, ``enum``, bounds, lengths,
    ``pattern``, item counts, nested objects, local ``$ref``/``$defs``); the full list is in
    ``miniagent.validation.check_value``, which also bounds the time it takes: ``cancel`` (the
    run's event) stops it, as does ``validation.CHECK_TIMEOUT``.

    Returns:
        ``None`` when the value fits, else one line saying where and what is wrong, e.g.
        ``input.path: expected string, got integer``; for an object, every problem found among
        its properties, joined by ``"; "`` (at most ``MAX_PROBLEMS``), so that the model can fix
        all of them in one turn.
    """
    first = check_value(schema, value, where, cancel=cancel)
    if first is None:  # the usual case: one pass
        return None
    return "; ".join(object_problems(schema, value, where, limit=MAX_PROBLEMS, cancel=cancel)) or first



# --- the @tool decorator --------------------------------------------------------------------------


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
    strict: bool,
    repeatable: bool = False,
) -> Tool:
    # Imported here: ``import miniagent`` does not pay for the schema builder (bench/startup.py).
    from .schema import ConversionError, Field, describe_object, parse_docstring

    if inspect.iscoroutinefunction(function) or inspect.isasyncgenfunction(function):
        raise TypeError(
            f"@tool needs a plain function; {function.__name__} is async (the loop is synchronous)"
        )
    signature = inspect.signature(function)
    hints = typing.get_type_hints(function)
    doc_text, doc_args = parse_docstring(function.__doc__ or "")
    fields = []
    wants_cancel = False
    for parameter in signature.parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise TypeError(f"@tool does not support *args or **kwargs ({function.__name__})")
        if parameter.name == "cancel":
            wants_cancel = True
            continue
        annotation = hints.get(parameter.name, inspect.Parameter.empty)
        required = parameter.default is inspect.Parameter.empty
        fields.append(Field(parameter.name, annotation, required, doc_args.get(parameter.name)))
    try:
        arguments_form = describe_object(fields, strict=strict)
    except TypeError as exc:
        raise TypeError(f"@tool {function.__name__}: {exc}") from None
    convert = arguments_form.convert

    def execute(arguments: dict[str, Any], cancel: threading.Event | None) -> ToolResult:
        if convert is not None:
            try:
                arguments = convert(arguments)
            except ConversionError as exc:  # a date or base64 text that does not parse
                return ToolResult(f"invalid input: {exc}", is_error=True)
        if wants_cancel:
            return _to_result(function(**arguments, cancel=cancel))
        return _to_result(function(**arguments))

    return Tool(
        name=name or function.__name__,
        description=description if description is not None else doc_text,
        input_schema=arguments_form.schema,
        execute=execute,
        read_only=read_only,
        strict=strict,
        repeatable=repeatable,
    )


@overload
def tool(function: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    read_only: bool = False,
    strict: bool = False,
    repeatable: bool = False,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    function: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    read_only: bool = False,
    strict: bool = False,
    repeatable: bool = False,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Turn a typed function into a ``Tool``. Use as ``@tool`` or ``@tool(read_only=True)``.

    - name: ``name`` or the function's name.
    - description: ``description`` or the docstring's text before its sections.
    - input schema: one property per parameter, typed from the hints (``miniagent.schema``:
      ``str`` string, ``int`` integer, ``float`` number, ``bool`` boolean, ``list[X]``,
      ``tuple[X, ...]``, ``set[X]`` arrays with ``items``, fixed ``tuple[X, Y]`` with
      ``prefixItems``, ``dict[str, X]`` object, ``Literal[...]`` and ``enum.Enum`` enums,
      ``X | Y`` anyOf, ``X | None`` nullable, dataclasses and ``TypedDict`` nested objects;
      ``pathlib.Path``, ``datetime``/``date``/``time`` (ISO 8601) and ``bytes`` (base64) as
      strings);
      described by the docstring's ``Args:`` entry; required unless it has a default. Extra
      properties are refused.
    - The function receives converted values: an Enum member, a dataclass instance, a tuple, a
      set, a ``Path``, a ``datetime``, ``bytes`` where its hints say so; a string that does not
      parse as its type (``"2024-13-45"`` as a date) is answered with an error result naming the
      parameter, and the function is not called.
    - ``strict=True``: the schema is OpenAI's strict-mode form (every property required, a
      parameter with a default is nullable and ``null`` means the default,
      ``additionalProperties: false`` everywhere) and ``Tool.strict`` asks providers to enforce it.
    - ``repeatable=True``: ``Tool.repeatable`` (a poll; its calls never count towards
      ``max_repeats``).
    - A parameter named ``cancel`` is not part of the schema: it receives the run's
      ``threading.Event`` (or ``None``), for tools that can stop early.
    - Return value: a ``ToolResult`` as is, a ``str`` as the content, anything else as JSON.
      Exceptions propagate to the loop (which closes the calls and re-raises them).

    Raises:
        TypeError: a parameter type has no JSON Schema form (or no strict one), the function
            takes ``*args``, or it is ``async`` (the loop is synchronous).
    """
    if function is not None:
        return _make_tool(function, name, description, read_only, strict, repeatable)

    def decorate(inner: Callable[..., Any]) -> Tool:
        return _make_tool(inner, name, description, read_only, strict, repeatable)

    return decorate
