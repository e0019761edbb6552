"""JSON type names and the JSON Schema check of a decoded JSON value (standard library only).

- ``json_type_name(value)``: the one place that names the JSON type of a decoded value
  (``"string"``, ``"integer"``, ``"number"``, ``"boolean"``, ``"array"``, ``"object"``, ``"null"``);
  error texts of the input check and of the providers' argument decoding use it.
- ``check_value(schema, value, where, cancel=, timeout=)``: ``None`` when ``value`` is valid
  against ``schema``, else one line saying where and what is wrong. Semantics are JSON Schema
  2020-12 (the keywords listed in its docstring); the test suite runs the official
  JSON-Schema-Test-Suite cases of those keywords and compares verdicts with the ``jsonschema``
  package.
- ``schema_problem(schema)``: ``None`` for a well-formed schema, else where it is not: wrong
  types, a ``pattern`` that is not an ECMA-262 expression miniagent can run (``--output-schema``
  refuses such a file before the run).

Invariants:

- The check never raises, for any schema or value: a keyword it does not know is not checked, a
  ``$ref`` it cannot resolve accepts, a pattern it cannot run is not checked (``schema_problem``
  reports it).
- It is bounded: a check that the ``cancel`` event stops, or that runs past ``timeout`` seconds,
  ends within a few tens of milliseconds with a problem saying so. Work is counted as it goes
  (items, properties, sub-schemas, each pattern search by its bound on backtracking) and every
  ``context.POLL_EVERY`` units the event and the clock are read (the clock starts at the first
  such look, so a check too small to reach one never reads it). A value or schema nested too
  deeply for the interpreter's stack gets a problem saying so, whatever the caller's own depth.
- Patterns and time: ``re`` backtracks, and nothing can stop a search from another thread. So
  every pattern gets a bound on its backtracking from its structure (``ecma_regex``: exponential
  when a repeated part holds another repeat, an alternation or a back reference, else a power of
  the text's length); a search whose bound is small runs in this process, any other in a child
  process that is killed on the cancel or the timeout (``_validation.bounded_search``). No
  pattern is refused for its shape and no text is cut: the verdict is ``re``'s, and a search that
  would outlast the run ends with it.
- ``pattern`` is ECMA-262 (``$`` is the end of the text, ``\\d`` is ``[0-9]``, ...:
  ``miniagent._validation.ecma_regex``); ``multipleOf`` is exact decimal arithmetic on the
  numbers as written (``0.07`` is a multiple of ``0.01``), for numbers of any size.
- It reads the schema as given, without compiling it (patterns are translated once per text and
  cached), so a caller may build schemas freely; one call costs about a microsecond for a small
  tool input (the loop runs it before every tool call, see ``bench/loop.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ._validation.context import UNRESOLVED, Context, Stop, on_a_fresh_stack, resolve
from ._validation.schema_problem import schema_problem
from ._validation.types import JSON_TYPE_NAMES, JSON_TYPES, accept, is_number, json_type_name
from ._validation.unevaluated import unevaluated_items, unevaluated_properties
from ._validation.values import first_duplicate, is_multiple, json_equal
from ._validation.values import show as _show

if TYPE_CHECKING:
    import threading

__all__ = [
    "JSON_TYPE_NAMES",
    "CHECK_TIMEOUT",
    "json_type_name",
    "json_equal",
    "check_value",
    "object_problems",
    "schema_problem",
]

CHECK_TIMEOUT = 10.0
"""Seconds one ``check_value`` call may take by default before it stops with a problem."""

class _Context(Context):
    """A ``Context`` whose ``check`` is this module's."""

    __slots__ = ()

    def check(self, schema: Any, value: Any, where: str) -> str | None:
        return _check(schema, value, where, self)


def _in_enum(value: Any, choices: Any) -> bool:
    if type(value) is str:  # a str equals only a str: the fast path of most enums
        return value in choices
    return any(json_equal(value, choice) for choice in choices)


# The Python type that always has a JSON type name (the fast test of ``type``; other values, such
# as 1.0 for "integer", take the full test).
_EXACT_TYPES: dict[Any, type] = {
    "object": dict,
    "string": str,
    "array": list,
    "boolean": bool,
    "integer": int,
    "number": float,
    "null": type(None),
}

# --- keywords -----------------------------------------------------------------------------------
# Each keyword function: (keyword's value, the whole schema node, value, where, context) -> problem.

Keyword = Callable[[Any, dict[str, Any], Any, str, _Context], "str | None"]


def _type(expected: Any, schema: dict[str, Any], value: Any, where: str, ctx: _Context) -> str | None:
    if isinstance(expected, list):
        if any(JSON_TYPES.get(name, accept)(value) for name in expected):
            return None
        names = " or ".join(str(name) for name in expected)
    elif JSON_TYPES.get(expected, accept)(value):
        return None
    else:
        names = str(expected)
    return f"{where}: expected {names}, got {json_type_name(value)}"


def _enum(choices: Any, schema: dict[str, Any], value: Any, where: str, ctx: _Context) -> str | None:
    if not isinstance(choices, list) or _in_enum(value, choices):
        return None
    return f"{where}: {_show(value)} is not one of {', '.join(_show(c) for c in choices)}"


def _const(const: Any, schema: dict[str, Any], value: Any, where: str, ctx: _Context) -> str | None:
    if json_equal(value, const):
        return None
    return f"{where}: expected {_show(const)}, got {_show(value)}"


def _bounds(kind: str) -> Keyword:
    def check(limit: Any, schema: dict[str, Any], value: Any, where: str, ctx: _Context) -> str | None:
        if not is_number(value) or not is_number(limit):
            return None
        if kind == "minimum" and value < limit:
            return f"{where}: {_show(value)} is less than the minimum {_show(limit)}"
        if kind == "maximum" and value > limit:
            return f"{where}: {_show(value)} is greater than the maximum {_show(limit)}"
        if kind == "exclusiveMinimum" and value <= limit:
            return f"{where}: {_show(value)} must be greater than {_show(limit)}"
        if kind == "exclusiveMaximum" and value >= limit:
            return f"{where}: {_show(value)} must be less than {_show(limit)}"
        return None

    return check


def _multiple_of(divisor: Any, schema: dict[str, Any], value: Any, where: str, ctx: _Context) -> str | None:
    if not is_number(value) or not is_number(divisor) or divisor <= 0:
        return None
    if is_multiple(value, divisor):
        return None
    return f"{where}: {_show(value)} is not a multiple of {_show(divisor)}"


def _sizes(kind: str, of: type, unit: str) -> Keyword:
    def check(limit: Any, schema: dict[str, Any], value: Any, where: str, ctx: _Context) -> str | None:
        if not isinstance(value, of) or not is_number(limit):
            return None
        size = len(value)  # type: ignore[arg-type]  # an instance of ``of``
        if kind == "min" and size < limit:
            return f"{where}: has {size} {unit}, at least {limit} expected"
        if kind == "max" and size > limit:
            return f"{where}: has {size} {unit}, at most {limit} expected"
        return None

    return check


def _pattern(pattern: Any, schema: dict[str, Any], value: Any, where: str, ctx: _Context) -> str | None:
    if not isinstance(value, str) or not isinstance(pattern, str):
        return None
    if ctx.search(pattern, value) is not False:  # found, or a pattern miniagent cannot run
        return None
    return f"{where}: {_show(value)} does not match the pattern {pattern!r}"


# --- objects --------------------------------------------------------------------------------------


def _required(names: Any, schema: dict[str, Any], value: Any, where: str, ctx: _Context) -> str | None:
    if not isinstance(value, dict) or not isinstance(names, list):
        return None
    missing = [str(name) for name in names if name not in value]
    if not missing:
        return None
    plural = "y" if len(missing) == 1 else "ies"
    return f"{where}: missing required propert{plural} {', '.join(missing)}"


def _properties(properties: Any, schema: dict[str, Any], value: Any, where: str, ctx: _Context) -> str | None:
    if not isinstance(value, dict) or not isinstance(properties, dict):
        return None
    ctx.spend(len(value))
    for key, item in value.items():
        if key in properties:
            problem = _check(properties[key], item, f"{where}.{key}", ctx)
            if problem:
                return problem
    return None


def _pattern_properties(
    patterns: Any, schema: dict[str, Any], value: Any, where: str, ctx: _Context
) -> str | None:
    if not isinstance(value, dict) or not isinstance(patterns, dict):
        return None
    for pattern, subschema in patterns.items():
        ctx.spend(len(value))
        for key, item in value.items():
            if ctx.search(pattern, key):
                problem = _check(subschema, item, f"{where}.{key}", ctx)
                if problem:
                    return problem
    return None


def _additional_properties(
    extra: Any, schema: dict[str, Any], value: Any, where: str, ctx: _Context
) -> str | None:
    if not isinstance(value, dict) or extra is True:
        return None
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        properties = {}
    patterns = schema.get("patternProperties")
    ctx.spend(len(value))
    for key, item in value.items():
        if key in properties:
            continue
        if isinstance(patterns, dict) and any(ctx.search(p, key) for p in patterns):
            continue
        if extra is False:
            allowed = ", ".join(properties) or "none"
            return f"{where}: unknown property {key!r} (allowed: {allowed})"
        problem = _check(extra, item, f"{where}.{key}", ctx)
        if problem:
            return problem
    return None


def _property_names(names: Any, schema: dict[str, Any], value: Any, where: str, ctx: _Context) -> str | None:
    if not isinstance(value, dict):
        return None
    ctx.spend(len(value))
    for key in value:
        problem = _check(names, key, f"{where} (property name {key!r})", ctx)
        if problem:
            return problem
    return None


def _dependent_required(
    dependencies: Any, schema: dict[str, Any], value: Any, where: str, ctx: _Context
) -> str | None:
    if not isinstance(value, dict) or not isinstance(dependencies, dict):
        return None
    for key, needed in dependencies.items():
        if key in value and isinstance(needed, list):
            missing = [str(name) for name in needed if name not in value]
            if missing:
                return f"{where}: {key!r} needs {', '.join(missing)} as well"
    return None


def _dependent_schemas(
    dependencies: Any, schema: dict[str, Any], value: Any, where: str, ctx: _Context
) -> str | None:
    if not isinstance(value, dict) or not isinstance(dependencies, dict):
        return None
    for key, subschema in dependencies.items():
        if key in value:
            problem = _check(subschema, value, where, ctx)
            if problem:
                return problem
    return None


# --- arrays ---------------------------------------------------------------------------------------


def _prefix_items(prefix: Any, schema: dict[str, Any], value: Any, where: str, ctx: _Context) -> str | None:
    if not isinstance(value, list) or not isinstance(prefix, list):
        return None
    ctx.spend(min(len(prefix), len(value)))
    for index, (subschema, item) in enumerate(zip(prefix, value, strict=False)):
        problem = _check(subschema, item, f"{where}[{index}]", ctx)
        if problem:
            return problem
    return None


def _items(items: Any, schema: dict[str, Any], value: Any, where: str, ctx: _Context) -> str | None:
    if not isinstance(value, list):
        return None
    if isinstance(items, list):  # the older tuple form: items[i] for item i, then additionalItems
        problem = _prefix_items(items, schema, value, where, ctx)
        if problem or "additionalItems" not in schema:
            return problem
        start, items = len(items), schema["additionalItems"]
    else:
        prefix = schema.get("prefixItems")
        start = len(prefix) if isinstance(prefix, list) else 0
    if items is True or len(value) <= start:
        return None
    if items is False:
        return f"{where}: at most {start} items allowed, got {len(value)}"
    ctx.spend(len(value) - start)
    for index in range(start, len(value)):
        problem = _check(items, value[index], f"{where}[{index}]", ctx)
        if problem:
            return problem
    return None


def _unique_items(unique: Any, schema: dict[str, Any], value: Any, where: str, ctx: _Context) -> str | None:
    if unique is not True or not isinstance(value, list):
        return None
    pair = first_duplicate(value, ctx.spend)
    if pair is None:
        return None
    return f"{where}: items {pair[0]} and {pair[1]} are equal; items must be unique"


def _contains(subschema: Any, schema: dict[str, Any], value: Any, where: str, ctx: _Context) -> str | None:
    if not isinstance(value, list):
        return None
    ctx.spend(len(value))
    count = sum(1 for item in value if _check(subschema, item, where, ctx) is None)
    low = schema.get("minContains", 1)
    high = schema.get("maxContains")
    if is_number(low) and count < low:
        return f"{where}: {count} items match 'contains', at least {low} expected"
    if high is not None and is_number(high) and count > high:
        return f"{where}: {count} items match 'contains', at most {high} expected"
    return None


# --- combinations and references ------------------------------------------------------------------


def _all_of(schemas: Any, schema: dict[str, Any], value: Any, where: str, ctx: _Context) -> str | None:
    if not isinstance(schemas, list):
        return None
    ctx.spend(len(schemas))
    for subschema in schemas:
        problem = _check(subschema, value, where, ctx)
        if problem:
            return problem
    return None


def _any_of(schemas: Any, schema: dict[str, Any], value: Any, where: str, ctx: _Context) -> str | None:
    if not isinstance(schemas, list):
        return None
    ctx.spend(len(schemas))
    problems = []
    for subschema in schemas:
        problem = _check(subschema, value, where, ctx)
        if problem is None:
            return None
        problems.append(problem)
    return _none_matched(problems, value, where)


def _one_of(schemas: Any, schema: dict[str, Any], value: Any, where: str, ctx: _Context) -> str | None:
    if not isinstance(schemas, list):
        return None
    ctx.spend(len(schemas))
    problems: list[str] = []
    matched: list[int] = []
    for index, subschema in enumerate(schemas):
        problem = _check(subschema, value, where, ctx)
        if problem is None:
            matched.append(index)
        else:
            problems.append(problem)
    if len(matched) == 1:
        return None
    if not matched:
        return _none_matched(problems, value, where)
    forms = ", ".join(str(i) for i in matched)
    return f"{where}: matches {len(matched)} of the oneOf forms ({forms}); exactly one is allowed"


def _none_matched(problems: list[str], value: Any, where: str) -> str:
    """One text for 'none of the alternatives matched'. Alternatives that only named another
    type are merged (``input.x: expected integer or string, got array``); when some alternative
    had the right type, only those deeper problems are told (e.g. a nullable object's field)."""
    head = f"{where}: expected "
    tail = f", got {json_type_name(value)}"
    wrong_type = [p for p in problems if p.startswith(head) and p.endswith(tail)]
    deeper = [p for p in problems if p not in wrong_type]
    if not deeper:
        names = [p[len(head) : len(p) - len(tail)] for p in wrong_type]
        return f"{head}{' or '.join(names)}{tail}"
    if len(deeper) == 1:
        return deeper[0]
    return f"{where}: matches none of the allowed forms: " + " | ".join(deeper)


def _not(subschema: Any, schema: dict[str, Any], value: Any, where: str, ctx: _Context) -> str | None:
    if _check(subschema, value, where, ctx) is not None:
        return None
    return f"{where}: {_show(value)} matches a form that is not allowed"


def _if(condition: Any, schema: dict[str, Any], value: Any, where: str, ctx: _Context) -> str | None:
    branch = "then" if _check(condition, value, where, ctx) is None else "else"
    if branch not in schema:
        return None
    return _check(schema[branch], value, where, ctx)


def _ref(reference: Any, schema: dict[str, Any], value: Any, where: str, ctx: _Context) -> str | None:
    ctx.spend(1)
    target = resolve(reference, ctx.root)
    return None if target is UNRESOLVED else _check(target, value, where, ctx)


_KEYWORDS: dict[str, Keyword] = {
    "type": _type,
    "enum": _enum,
    "const": _const,
    "minimum": _bounds("minimum"),
    "maximum": _bounds("maximum"),
    "exclusiveMinimum": _bounds("exclusiveMinimum"),
    "exclusiveMaximum": _bounds("exclusiveMaximum"),
    "multipleOf": _multiple_of,
    "minLength": _sizes("min", str, "characters"),
    "maxLength": _sizes("max", str, "characters"),
    "pattern": _pattern,
    "required": _required,
    "properties": _properties,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties,
    "propertyNames": _property_names,
    "minProperties": _sizes("min", dict, "properties"),
    "maxProperties": _sizes("max", dict, "properties"),
    "dependentRequired": _dependent_required,
    "dependentSchemas": _dependent_schemas,
    "unevaluatedProperties": unevaluated_properties,
    "prefixItems": _prefix_items,
    "items": _items,
    "minItems": _sizes("min", list, "items"),
    "maxItems": _sizes("max", list, "items"),
    "uniqueItems": _unique_items,
    "contains": _contains,
    "unevaluatedItems": unevaluated_items,
    "allOf": _all_of,
    "anyOf": _any_of,
    "oneOf": _one_of,
    "not": _not,
    "if": _if,
    "$ref": _ref,
}


def _check(schema: Any, value: Any, where: str, ctx: _Context) -> str | None:
    if type(schema) is not dict:
        if schema is False:
            return f"{where}: no value is allowed here"
        return None  # true, or not a schema: accepts
    for key, argument in schema.items():
        # The keywords of every tool schema are inlined: this runs before every tool call.
        if key == "type":
            if type(argument) is str and (
                type(value) is _EXACT_TYPES.get(argument) or JSON_TYPES.get(argument, accept)(value)
            ):
                continue
            problem = _type(argument, schema, value, where, ctx)
        elif key == "description":
            continue
        elif key == "properties":
            if type(value) is not dict or type(argument) is not dict:
                continue
            ctx.budget -= len(value)
            if ctx.budget < 0:
                ctx.spend(0)
            for name, item in value.items():
                if name in argument:
                    problem = _check(argument[name], item, f"{where}.{name}", ctx)
                    if problem:
                        return problem
            continue
        elif key == "required":
            if type(value) is not dict or type(argument) is not list:
                continue
            for name in argument:
                if name not in value:
                    return _required(argument, schema, value, where, ctx)
            continue
        elif key == "additionalProperties" and argument is False and type(value) is dict:
            properties = schema.get("properties")
            if type(properties) is dict and "patternProperties" not in schema:
                for name in value:
                    if name not in properties:
                        return _additional_properties(argument, schema, value, where, ctx)
                continue
            problem = _additional_properties(argument, schema, value, where, ctx)
        else:
            keyword = _KEYWORDS.get(key)
            if keyword is None:
                continue
            problem = keyword(argument, schema, value, where, ctx)
        if problem:
            return problem
    return None


def check_value(
    schema: Any,
    value: Any,
    where: str = "input",
    *,
    cancel: threading.Event | None = None,
    timeout: float | None = CHECK_TIMEOUT,
) -> str | None:
    """Check a decoded JSON value against a JSON Schema (2020-12 semantics).

    Checked keywords: ``type`` (a name or a list), ``enum``, ``const``, ``minimum``, ``maximum``,
    ``exclusiveMinimum``, ``exclusiveMaximum``, ``multipleOf`` (exact decimal arithmetic),
    ``minLength``, ``maxLength`` (characters), ``pattern`` (ECMA-262, see the module docstring),
    ``required``, ``properties``, ``patternProperties``, ``additionalProperties``,
    ``propertyNames``, ``minProperties``, ``maxProperties``, ``dependentRequired``,
    ``dependentSchemas``, ``unevaluatedProperties``, ``prefixItems``, ``items`` (also the older
    array form with ``additionalItems``), ``minItems``, ``maxItems``, ``uniqueItems``,
    ``contains`` (with ``minContains``/``maxContains``), ``unevaluatedItems``, ``allOf``,
    ``anyOf``, ``oneOf``, ``not``, ``if``/``then``/``else``, and local ``$ref`` (``#/$defs/...``,
    any JSON pointer). Boolean schemas (``true``/``false``) too. Not checked: ``format``,
    ``content*`` (annotations in 2020-12), ``$dynamicRef``, ``$anchor`` and ``$id`` references,
    a ``$ref`` to another document, and a pattern that is not ECMA-262 or that ``re`` cannot run
    (lookbehind of variable width, ``\\p{Script=...}``).

    Args:
        schema: the JSON Schema (a dict or a boolean).
        value: the decoded JSON value.
        where: the name of the value in the error text (``input`` for a tool's arguments).
        cancel: when set, the check stops (within a few tens of milliseconds) with the
            problem ``"<where>: the check was cancelled"``.
        timeout: seconds the check may take (``None``: no limit); past it the check stops with
            a problem saying so.

    Returns:
        ``None`` when the value is valid, else one line naming the first problem found, e.g.
        ``input.path: expected string, got integer``.
    """
    ctx = _Context(schema, cancel, timeout)
    try:
        try:
            return _check(schema, value, where, ctx)
        except RecursionError:
            return on_a_fresh_stack(_check, schema, value, where, ctx)
    except Stop as stop:
        return f"{where}: {stop}"
    except RecursionError:
        return f"{where}: the value or the schema nests too deeply to check"


def object_problems(
    schema: Any,
    value: Any,
    where: str = "input",
    *,
    limit: int = 10,
    cancel: threading.Event | None = None,
    timeout: float | None = CHECK_TIMEOUT,
) -> list[str]:
    """Every problem of an object against an object schema: one per property (each checked as
    ``check_value`` would, ``$ref`` resolved against ``schema``), then the first of the object's
    own keywords (``required``, ``additionalProperties``...). For a value that is not an object,
    or a schema without ``properties``: ``check_value``'s one problem. At most ``limit``
    problems; an empty list when the value is valid. Arguments as ``check_value``.
    """
    properties = schema.get("properties") if type(schema) is dict else None
    if type(value) is not dict or type(properties) is not dict:
        problem = check_value(schema, value, where, cancel=cancel, timeout=timeout)
        return [] if problem is None else [problem]
    ctx = _Context(schema, cancel, timeout)
    problems: list[str] = []
    own = {**schema, "properties": dict.fromkeys(properties, True)}
    checks = [(properties[name], value[name], f"{where}.{name}") for name in properties if name in value]
    for subschema, item, place in [*checks, (own, value, where)]:
        try:
            try:
                problem = _check(subschema, item, place, ctx)
            except RecursionError:
                problem = on_a_fresh_stack(_check, subschema, item, place, ctx)
        except Stop as stop:
            return [*problems, f"{where}: {stop}"][:limit]
        except RecursionError:
            problem = f"{place}: the value or the schema nests too deeply to check"
        if problem and problem not in problems:
            problems.append(problem)
    return problems[:limit]
