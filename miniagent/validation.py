"""JSON type names and the JSON Schema check of a decoded JSON value (standard library only).

- ``json_type_name(value)``: the one place that names the JSON type of a decoded value
  (``"string"``, ``"integer"``, ``"number"``, ``"boolean"``, ``"array"``, ``"object"``, ``"null"``);
  error texts of the input check and of the providers' argument decoding use it.
- ``check_value(schema, value, where)``: ``None`` when ``value`` is valid against ``schema``, else
  one line saying where and what is wrong. Semantics are JSON Schema 2020-12 (the keywords listed
  in its docstring); the test suite compares every verdict with the ``jsonschema`` package.
- ``schema_problem(schema)``: ``None`` for a well-formed schema, else where its types are wrong
  (``--output-schema`` refuses such a file before the run).

Invariants: the check never raises for any schema or value (a schema keyword it does not know is
not checked; a ``$ref`` it cannot resolve accepts); it reads the schema as given, without compiling
or caching it, so a caller may build schemas freely; one call costs about a microsecond for a
small tool input (the loop runs it before every tool call, see ``bench/loop.py``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

__all__ = ["JSON_TYPE_NAMES", "json_type_name", "check_value", "schema_problem"]

JSON_TYPE_NAMES = ("string", "integer", "number", "boolean", "array", "object", "null")

_SHOW_MAX = 60  # characters of a value quoted in an error text


def _is_integer(value: Any) -> bool:
    # JSON Schema 2020-12: any number with a zero fractional part is an integer (1.0 too).
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


_JSON_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": _is_integer,
    "number": _is_number,
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}


def json_type_name(value: Any) -> str:
    """The JSON type of a decoded JSON value: one of ``JSON_TYPE_NAMES``.

    A number with a zero fractional part is ``"integer"`` (JSON Schema 2020-12); a Python value
    that JSON cannot hold gets its Python type name (e.g. ``"tuple"``).
    """
    for name in ("boolean", "integer", "number", "string", "array", "object", "null"):
        if _JSON_TYPES[name](value):
            return name
    return type(value).__name__


def _accept(value: Any) -> bool:
    return True


def _show(value: Any) -> str:
    """A value as JSON for an error text, shortened to about ``_SHOW_MAX`` characters."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= _SHOW_MAX else text[: _SHOW_MAX - 3] + "..."


def json_equal(a: Any, b: Any) -> bool:
    """Equality of two decoded JSON values as JSON Schema defines it (``enum``, ``const``,
    ``uniqueItems``): ``1 == 1.0``, but ``true != 1`` and ``false != 0``, also inside arrays and
    objects."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, list):
        if not isinstance(b, list) or len(a) != len(b):
            return False
        return all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return (
            isinstance(b, dict)
            and a.keys() == b.keys()
            and all(json_equal(item, b[key]) for key, item in a.items())
        )
    if isinstance(b, (list, dict)):
        return False
    return bool(a == b)


def _in_enum(value: Any, choices: Any) -> bool:
    if type(value) is str:  # a str equals only a str: the fast path of most enums
        return value in choices
    return any(json_equal(value, choice) for choice in choices)


# --- keywords -----------------------------------------------------------------------------------
# Each keyword function: (keyword's value, the whole schema node, value, where, root) -> problem.

Keyword = Callable[[Any, dict[str, Any], Any, str, Any], "str | None"]


def _type(expected: Any, schema: dict[str, Any], value: Any, where: str, root: Any) -> str | None:
    if isinstance(expected, list):
        if any(_JSON_TYPES.get(name, _accept)(value) for name in expected):
            return None
        names = " or ".join(str(name) for name in expected)
    elif _JSON_TYPES.get(expected, _accept)(value):
        return None
    else:
        names = str(expected)
    return f"{where}: expected {names}, got {json_type_name(value)}"


def _enum(choices: Any, schema: dict[str, Any], value: Any, where: str, root: Any) -> str | None:
    if not isinstance(choices, list) or _in_enum(value, choices):
        return None
    return f"{where}: {_show(value)} is not one of {', '.join(_show(c) for c in choices)}"


def _const(const: Any, schema: dict[str, Any], value: Any, where: str, root: Any) -> str | None:
    if json_equal(value, const):
        return None
    return f"{where}: expected {_show(const)}, got {_show(value)}"


def _bounds(kind: str) -> Keyword:
    def check(limit: Any, schema: dict[str, Any], value: Any, where: str, root: Any) -> str | None:
        if not _is_number(value) or not _is_number(limit):
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


def _multiple_of(divisor: Any, schema: dict[str, Any], value: Any, where: str, root: Any) -> str | None:
    if not _is_number(value) or not _is_number(divisor) or divisor <= 0:
        return None
    if isinstance(divisor, float):  # the same arithmetic as the jsonschema package
        quotient = value / divisor
        try:
            failed = int(quotient) != quotient
        except OverflowError:
            failed = True
    else:
        failed = bool(value % divisor)
    return f"{where}: {_show(value)} is not a multiple of {_show(divisor)}" if failed else None


def _sizes(kind: str, of: type, unit: str) -> Keyword:
    def check(limit: Any, schema: dict[str, Any], value: Any, where: str, root: Any) -> str | None:
        if not isinstance(value, of) or not _is_number(limit):
            return None
        size = len(value)  # type: ignore[arg-type]  # an instance of ``of``
        if kind == "min" and size < limit:
            return f"{where}: has {size} {unit}, at least {limit} expected"
        if kind == "max" and size > limit:
            return f"{where}: has {size} {unit}, at most {limit} expected"
        return None

    return check


def _pattern(pattern: Any, schema: dict[str, Any], value: Any, where: str, root: Any) -> str | None:
    if not isinstance(value, str) or not isinstance(pattern, str):
        return None
    try:
        found = re.search(pattern, value)  # re caches compiled patterns
    except re.error:
        return None  # not a pattern Python can read: not checked
    return None if found else f"{where}: {_show(value)} does not match the pattern {pattern!r}"


# --- objects --------------------------------------------------------------------------------------


def _required(names: Any, schema: dict[str, Any], value: Any, where: str, root: Any) -> str | None:
    if not isinstance(value, dict) or not isinstance(names, list):
        return None
    missing = [str(name) for name in names if name not in value]
    if not missing:
        return None
    plural = "y" if len(missing) == 1 else "ies"
    return f"{where}: missing required propert{plural} {', '.join(missing)}"


def _properties(properties: Any, schema: dict[str, Any], value: Any, where: str, root: Any) -> str | None:
    if not isinstance(value, dict) or not isinstance(properties, dict):
        return None
    for key, item in value.items():
        if key in properties:
            problem = _check(properties[key], item, f"{where}.{key}", root)
            if problem:
                return problem
    return None


def _pattern_properties(
    patterns: Any, schema: dict[str, Any], value: Any, where: str, root: Any
) -> str | None:
    if not isinstance(value, dict) or not isinstance(patterns, dict):
        return None
    for pattern, subschema in patterns.items():
        for key, item in value.items():
            if _search(pattern, key):
                problem = _check(subschema, item, f"{where}.{key}", root)
                if problem:
                    return problem
    return None


def _search(pattern: Any, text: str) -> bool:
    try:
        return re.search(pattern, text) is not None
    except (re.error, TypeError):
        return False


def _additional_properties(
    extra: Any, schema: dict[str, Any], value: Any, where: str, root: Any
) -> str | None:
    if not isinstance(value, dict) or extra is True:
        return None
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        properties = {}
    patterns = schema.get("patternProperties")
    for key, item in value.items():
        if key in properties:
            continue
        if isinstance(patterns, dict) and any(_search(p, key) for p in patterns):
            continue
        if extra is False:
            allowed = ", ".join(properties) or "none"
            return f"{where}: unknown property {key!r} (allowed: {allowed})"
        problem = _check(extra, item, f"{where}.{key}", root)
        if problem:
            return problem
    return None


def _property_names(names: Any, schema: dict[str, Any], value: Any, where: str, root: Any) -> str | None:
    if not isinstance(value, dict):
        return None
    for key in value:
        problem = _check(names, key, f"{where} (property name {key!r})", root)
        if problem:
            return problem
    return None


def _dependent_required(
    dependencies: Any, schema: dict[str, Any], value: Any, where: str, root: Any
) -> str | None:
    if not isinstance(value, dict) or not isinstance(dependencies, dict):
        return None
    for key, needed in dependencies.items():
        if key in value and isinstance(needed, list):
            missing = [str(name) for name in needed if name not in value]
            if missing:
                return f"{where}: {key!r} needs {', '.join(missing)} as well"
    return None


# --- arrays ---------------------------------------------------------------------------------------


def _prefix_items(prefix: Any, schema: dict[str, Any], value: Any, where: str, root: Any) -> str | None:
    if not isinstance(value, list) or not isinstance(prefix, list):
        return None
    for index, (subschema, item) in enumerate(zip(prefix, value, strict=False)):
        problem = _check(subschema, item, f"{where}[{index}]", root)
        if problem:
            return problem
    return None


def _items(items: Any, schema: dict[str, Any], value: Any, where: str, root: Any) -> str | None:
    if not isinstance(value, list):
        return None
    if isinstance(items, list):  # the older tuple form: items[i] for item i, then additionalItems
        problem = _prefix_items(items, schema, value, where, root)
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
    for index in range(start, len(value)):
        problem = _check(items, value[index], f"{where}[{index}]", root)
        if problem:
            return problem
    return None


def _unique_items(unique: Any, schema: dict[str, Any], value: Any, where: str, root: Any) -> str | None:
    if unique is not True or not isinstance(value, list):
        return None
    for i, first in enumerate(value):
        for j in range(i + 1, len(value)):
            if json_equal(first, value[j]):
                return f"{where}: items {i} and {j} are equal; items must be unique"
    return None


def _contains(subschema: Any, schema: dict[str, Any], value: Any, where: str, root: Any) -> str | None:
    if not isinstance(value, list):
        return None
    count = sum(1 for item in value if _check(subschema, item, where, root) is None)
    low = schema.get("minContains", 1)
    high = schema.get("maxContains")
    if _is_number(low) and count < low:
        return f"{where}: {count} items match 'contains', at least {low} expected"
    if high is not None and _is_number(high) and count > high:
        return f"{where}: {count} items match 'contains', at most {high} expected"
    return None


# --- combinations and references ------------------------------------------------------------------


def _all_of(schemas: Any, schema: dict[str, Any], value: Any, where: str, root: Any) -> str | None:
    if not isinstance(schemas, list):
        return None
    for subschema in schemas:
        problem = _check(subschema, value, where, root)
        if problem:
            return problem
    return None


def _any_of(schemas: Any, schema: dict[str, Any], value: Any, where: str, root: Any) -> str | None:
    if not isinstance(schemas, list):
        return None
    problems = []
    for subschema in schemas:
        problem = _check(subschema, value, where, root)
        if problem is None:
            return None
        problems.append(problem)
    return _none_matched(problems, value, where)


def _one_of(schemas: Any, schema: dict[str, Any], value: Any, where: str, root: Any) -> str | None:
    if not isinstance(schemas, list):
        return None
    problems: list[str] = []
    matched: list[int] = []
    for index, subschema in enumerate(schemas):
        problem = _check(subschema, value, where, root)
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


def _not(subschema: Any, schema: dict[str, Any], value: Any, where: str, root: Any) -> str | None:
    if _check(subschema, value, where, root) is not None:
        return None
    return f"{where}: {_show(value)} matches a form that is not allowed"


def _if(condition: Any, schema: dict[str, Any], value: Any, where: str, root: Any) -> str | None:
    branch = "then" if _check(condition, value, where, root) is None else "else"
    if branch not in schema:
        return None
    return _check(schema[branch], value, where, root)


def _ref(reference: Any, schema: dict[str, Any], value: Any, where: str, root: Any) -> str | None:
    target = _resolve(reference, root)
    return None if target is _UNRESOLVED else _check(target, value, where, root)


_UNRESOLVED = object()


def _resolve(reference: Any, root: Any) -> Any:
    """Follow a local ``$ref`` (``#``, ``#/$defs/Name``, any JSON pointer into the root schema);
    anything else is ``_UNRESOLVED`` (not checked)."""
    if not isinstance(reference, str) or not reference.startswith("#"):
        return _UNRESOLVED
    node = root
    pointer = reference[1:]
    if "%" in pointer:  # a URI fragment may be percent-encoded
        from urllib.parse import unquote

        pointer = unquote(pointer)
    if not pointer:
        return node
    if not pointer.startswith("/"):
        return _UNRESOLVED  # an anchor name: not supported
    for part in pointer[1:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return _UNRESOLVED
    return node


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
    "prefixItems": _prefix_items,
    "items": _items,
    "minItems": _sizes("min", list, "items"),
    "maxItems": _sizes("max", list, "items"),
    "uniqueItems": _unique_items,
    "contains": _contains,
    "allOf": _all_of,
    "anyOf": _any_of,
    "oneOf": _one_of,
    "not": _not,
    "if": _if,
    "$ref": _ref,
}


def _check(schema: Any, value: Any, where: str, root: Any) -> str | None:
    if type(schema) is not dict:
        if schema is False:
            return f"{where}: no value is allowed here"
        return None  # true, or not a schema: accepts
    for key, argument in schema.items():
        # The keywords of every tool schema are inlined: this runs before every tool call.
        if key == "type":
            if type(argument) is str and _JSON_TYPES.get(argument, _accept)(value):
                continue
            problem = _type(argument, schema, value, where, root)
        elif key == "description":
            continue
        elif key == "properties":
            if type(value) is not dict or type(argument) is not dict:
                continue
            for name, item in value.items():
                if name in argument:
                    problem = _check(argument[name], item, f"{where}.{name}", root)
                    if problem:
                        return problem
            continue
        elif key == "required":
            if type(value) is not dict or type(argument) is not list:
                continue
            for name in argument:
                if name not in value:
                    return _required(argument, schema, value, where, root)
            continue
        elif key == "additionalProperties" and argument is False and type(value) is dict:
            properties = schema.get("properties")
            if type(properties) is dict and "patternProperties" not in schema:
                for name in value:
                    if name not in properties:
                        return _additional_properties(argument, schema, value, where, root)
                continue
            problem = _additional_properties(argument, schema, value, where, root)
        else:
            keyword = _KEYWORDS.get(key)
            if keyword is None:
                continue
            problem = keyword(argument, schema, value, where, root)
        if problem:
            return problem
    return None


def check_value(schema: Any, value: Any, where: str = "input") -> str | None:
    """Check a decoded JSON value against a JSON Schema (2020-12 semantics).

    Checked keywords: ``type`` (a name or a list), ``enum``, ``const``, ``minimum``, ``maximum``,
    ``exclusiveMinimum``, ``exclusiveMaximum``, ``multipleOf``, ``minLength``, ``maxLength``
    (characters), ``pattern`` (Python ``re.search``), ``required``, ``properties``,
    ``patternProperties``, ``additionalProperties``, ``propertyNames``, ``minProperties``,
    ``maxProperties``, ``dependentRequired``, ``prefixItems``, ``items`` (also the older array
    form with ``additionalItems``), ``minItems``, ``maxItems``, ``uniqueItems``, ``contains``
    (with ``minContains``/``maxContains``), ``allOf``, ``anyOf``, ``oneOf``, ``not``,
    ``if``/``then``/``else``, and local ``$ref`` (``#/$defs/...``, any JSON pointer). Boolean
    schemas (``true``/``false``) too. Other keywords (``format``, ``description``, ...) are not
    checked; neither is a ``$ref`` to another document.

    Args:
        schema: the JSON Schema (a dict or a boolean).
        value: the decoded JSON value.
        where: the name of the value in the error text (``input`` for a tool's arguments).

    Returns:
        ``None`` when the value is valid, else one line naming the first problem found, e.g.
        ``input.path: expected string, got integer``.
    """
    try:
        return _check(schema, value, where, schema)
    except RecursionError:
        return f"{where}: the value or the schema nests too deeply to check"


_SUBSCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SUBSCHEMAS = (
    "items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames",
    "unevaluatedItems", "unevaluatedProperties", "additionalItems",
)  # fmt: skip
_SUBSCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
_TUPLE_FORMS = ("items", "additionalItems")  # a list of schemas there is the draft 4-7 tuple form


def schema_problem(schema: Any, where: str = "schema") -> str | None:
    """``None`` when ``schema`` is a well-formed JSON Schema as far as types go, else one line
    saying where it is not: a ``type`` that is not one of ``JSON_TYPE_NAMES`` (``"objekt"``),
    a sub-schema that is neither an object nor a boolean, ``required`` that is not a list of
    strings. Catches the typos that would otherwise make every answer invalid (or every answer
    valid). Never raises.
    """
    if isinstance(schema, bool):
        return None
    if not isinstance(schema, dict):
        return f"{where} must be an object or a boolean, not {json_type_name(schema)}"
    kinds = schema.get("type")
    if kinds is not None:
        for kind in kinds if isinstance(kinds, list) else [kinds]:
            if kind not in JSON_TYPE_NAMES:
                return f"{where}.type: {kind!r} is not a JSON type (one of {', '.join(JSON_TYPE_NAMES)})"
    required = schema.get("required")
    if required is not None and not (
        isinstance(required, list) and all(isinstance(r, str) for r in required)
    ):
        return f"{where}.required must be a list of property names"
    for key in _SUBSCHEMA_MAPS:
        mapping = schema.get(key)
        if mapping is None:
            continue
        if not isinstance(mapping, dict):
            return f"{where}.{key} must be an object of schemas"
        for name, sub in mapping.items():
            if problem := schema_problem(sub, f"{where}.{key}.{name}"):
                return problem
    for key in _SUBSCHEMAS:
        tuple_form = key in _TUPLE_FORMS and isinstance(schema.get(key), list)
        if key in schema and not tuple_form and (problem := schema_problem(schema[key], f"{where}.{key}")):
            return problem
    for key in (*_SUBSCHEMA_LISTS, *_TUPLE_FORMS):
        subs = schema.get(key)
        if key not in schema or (key in _TUPLE_FORMS and not isinstance(subs, list)):
            continue
        if not isinstance(subs, list):
            return f"{where}.{key} must be a list of schemas"
        for index, sub in enumerate(subs):
            if problem := schema_problem(sub, f"{where}.{key}[{index}]"):
                return problem
    return None
