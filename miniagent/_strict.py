"""Whether OpenAI's strict mode accepts a JSON Schema: ``strict_problem(schema)``.

OpenAI "Structured Outputs", "Supported schemas" (function ``strict: true`` and
``response_format`` ``json_schema`` with ``strict: true``) refuses with a 400 any schema that breaks
one of its rules, so a schema is sent strict only when every rule holds (else non-strict, which
every schema may be). The rules, each checked here:

- the root is an object schema (``"type": "object"``), not an ``anyOf``;
- every object schema has ``properties``, lists every property in ``required`` and has
  ``additionalProperties: false``; every array schema has ``items``;
- only the supported keywords appear: ``type`` (``string``, ``number``, ``integer``, ``boolean``,
  ``object``, ``array``, ``null``, or a list of them), ``enum``, ``const``, ``anyOf``, ``$ref``,
  ``$defs`` / ``definitions``, ``description``, ``title``; for strings ``pattern`` and ``format``
  (``date-time``, ``time``, ``date``, ``duration``, ``email``, ``hostname``, ``ipv4``, ``ipv6``,
  ``uuid``); for numbers ``multipleOf``, ``maximum``, ``exclusiveMaximum``, ``minimum``,
  ``exclusiveMinimum``; for arrays ``minItems``, ``maxItems`` (so no ``allOf``, ``oneOf``,
  ``not``, ``if``/``then``/``else``, ``dependentRequired``, ``patternProperties``,
  ``minLength``, ``default``...);
- a ``$ref`` stands alone ("$ref cannot have keywords {'description'}") and points into the
  schema itself (``#``, ``#/$defs/Name``);
- every schema says what it is (``type``, ``anyOf``, ``enum``, ``const`` or ``$ref``); a
  ``pattern`` uses no look-around and no back-reference;
- limits: at most 5,000 object properties in all, 10 levels of nesting (the root is level 1;
  a property or an array's items is one level deeper than the schema holding it: OpenAI does
  not say how it counts, so this counts every level), 120,000 characters of property names,
  definition names, enum and const values together, 1,000 enum values in all, and 15,000
  characters for one string enum of more than 250 values.

Standard library only; never raises.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

__all__ = ["strict_problem"]

_TYPES = frozenset(("string", "number", "integer", "boolean", "object", "array", "null"))
_KEYWORDS = frozenset(
    (
        "type", "enum", "const", "anyOf", "$ref", "$defs", "definitions", "description", "title",
        "properties", "required", "additionalProperties",
        "items", "minItems", "maxItems",
        "pattern", "format",
        "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
    )
)  # fmt: skip
_FORMATS = frozenset(("date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"))
_SAYS_WHAT = ("type", "anyOf", "enum", "const", "$ref")
_UNSUPPORTED_REGEX = re.compile(r"\(\?<?[=!]|\\[1-9]|\\k<")

MAX_PROPERTIES = 5000
MAX_DEPTH = 10
MAX_STRING_CHARS = 120_000
MAX_ENUM_VALUES = 1000
LARGE_ENUM = 250
LARGE_ENUM_CHARS = 15_000


@dataclass
class _Totals:
    """What the limits count, over the whole schema."""

    root: dict[str, Any]
    properties: int = 0
    chars: int = 0
    enum_values: int = 0


def strict_problem(schema: Any) -> str | None:
    """``None`` when OpenAI's strict mode accepts ``schema``, else the first rule it breaks, e.g.
    ``"schema.properties.a: $ref cannot have keywords description"``."""
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return 'schema: the root must be {"type": "object"}'
    if "anyOf" in schema:
        return "schema: the root cannot be anyOf"
    totals = _Totals(schema)
    try:
        return _node(schema, "schema", 1, totals) or _limits(totals)
    except RecursionError:
        return "schema: nests too deeply"


def _limits(totals: _Totals) -> str | None:
    if totals.properties > MAX_PROPERTIES:
        return f"schema: {totals.properties} object properties, more than {MAX_PROPERTIES}"
    if totals.chars > MAX_STRING_CHARS:
        return f"schema: {totals.chars} characters of names and values, more than {MAX_STRING_CHARS}"
    if totals.enum_values > MAX_ENUM_VALUES:
        return f"schema: {totals.enum_values} enum values, more than {MAX_ENUM_VALUES}"
    return None


def _node(node: Any, where: str, depth: int, totals: _Totals) -> str | None:
    """The first rule ``node`` (at ``where``, at nesting level ``depth``) breaks, or ``None``."""
    if not isinstance(node, dict):
        return f"{where}: a schema must be an object"
    if depth > MAX_DEPTH:
        return f"{where}: more than {MAX_DEPTH} levels of nesting"
    unknown = sorted(set(node) - _KEYWORDS)
    if unknown:
        return f"{where}: {', '.join(unknown)} not supported in strict mode"
    if "$ref" in node:
        return _ref(node, where, totals)
    if not any(key in node for key in _SAYS_WHAT):
        return f"{where}: schema must have a 'type' key"
    kinds = node.get("type", [])
    kinds = kinds if isinstance(kinds, list) else [kinds]
    if not all(isinstance(kind, str) and kind in _TYPES for kind in kinds):
        return f"{where}.type: {node['type']!r} is not a supported type"
    return (
        _strings(node, where)
        or _choices(node, where, totals)
        or _definitions(node, where, depth, totals)
        or (_object(node, where, depth, totals) if "object" in kinds else None)
        or (_array(node, where, depth, totals) if "array" in kinds else None)
        or _any_of(node, where, depth, totals)
    )


def _ref(node: dict[str, Any], where: str, totals: _Totals) -> str | None:
    others = sorted(set(node) - {"$ref"})
    if others:
        return f"{where}: $ref cannot have keywords {', '.join(others)}"
    if not _resolves(node["$ref"], totals.root):
        return f"{where}.$ref: {node['$ref']!r} does not point into the schema"
    return None


def _resolves(reference: Any, root: dict[str, Any]) -> bool:
    """Whether ``reference`` is ``#`` or a JSON pointer to a schema of ``root``."""
    if not isinstance(reference, str) or not reference.startswith("#"):
        return False
    if reference == "#":
        return True
    if not reference.startswith("#/"):
        return False
    target: Any = root
    for part in reference[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(target, dict) or part not in target:
            return False
        target = target[part]
    return isinstance(target, dict)


def _strings(node: dict[str, Any], where: str) -> str | None:
    form = node.get("format")
    if form is not None and not (isinstance(form, str) and form in _FORMATS):
        return f"{where}.format: {form!r} is not a supported format"
    pattern = node.get("pattern")
    if pattern is not None and (not isinstance(pattern, str) or _UNSUPPORTED_REGEX.search(pattern)):
        return f"{where}.pattern: look-around and back-references are not supported"
    return None


def _choices(node: dict[str, Any], where: str, totals: _Totals) -> str | None:
    if "const" in node and isinstance(node["const"], str):
        totals.chars += len(node["const"])
    if "enum" not in node:
        return None
    values = node["enum"]
    if not isinstance(values, list) or not values:
        return f"{where}.enum must be a non-empty list"
    texts = [len(value) for value in values if isinstance(value, str)]
    totals.enum_values += len(values)
    totals.chars += sum(texts)
    if len(texts) > LARGE_ENUM and sum(texts) > LARGE_ENUM_CHARS:
        return f"{where}.enum: {len(texts)} strings of {sum(texts)} characters, more than {LARGE_ENUM_CHARS}"
    return None


def _definitions(node: dict[str, Any], where: str, depth: int, totals: _Totals) -> str | None:
    for key in ("$defs", "definitions"):
        if key not in node:
            continue
        definitions = node[key]
        if not isinstance(definitions, dict):
            return f"{where}.{key} must be an object of schemas"
        for name, sub in definitions.items():
            totals.chars += len(name)
            if problem := _node(sub, f"{where}.{key}.{name}", depth, totals):
                return problem
    return None


def _object(node: dict[str, Any], where: str, depth: int, totals: _Totals) -> str | None:
    properties = node.get("properties")
    if not isinstance(properties, dict):
        return f"{where}: object schema missing properties"
    if node.get("additionalProperties") is not False:
        return f"{where}: additionalProperties must be false"
    required = node.get("required", [])
    if not _lists_all(required, properties):
        return f"{where}.required must list every property"
    totals.properties += len(properties)
    for name, sub in properties.items():
        totals.chars += len(name)
        if problem := _node(sub, f"{where}.properties.{name}", depth + 1, totals):
            return problem
    return None


def _lists_all(required: Any, properties: dict[str, Any]) -> bool:
    """Whether ``required`` names every property once and nothing else."""
    if not isinstance(required, list) or not all(isinstance(name, str) for name in required):
        return False
    return len(required) == len(properties) and set(required) == set(properties)


def _array(node: dict[str, Any], where: str, depth: int, totals: _Totals) -> str | None:
    if "items" not in node:
        return f"{where}: array schema missing items"
    return _node(node["items"], f"{where}.items", depth + 1, totals)


def _any_of(node: dict[str, Any], where: str, depth: int, totals: _Totals) -> str | None:
    if "anyOf" not in node:
        return None
    branches = node["anyOf"]
    if not isinstance(branches, list) or not branches:
        return f"{where}.anyOf must be a non-empty list of schemas"
    for index, sub in enumerate(branches):
        if problem := _node(sub, f"{where}.anyOf[{index}]", depth, totals):
            return problem
    return None
