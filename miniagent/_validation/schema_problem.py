"""``schema_problem``: whether a JSON Schema is well formed as far as types go (standard library
only). ``miniagent.validation`` re-exports it; ``--output-schema`` refuses a file it objects to
before the run. Sub-schemas are found at the places JSON Schema 2020-12 puts them (maps, single
places, lists; the draft 4-7 tuple form of ``items`` too)."""

from __future__ import annotations

from typing import Any

from .context import on_a_fresh_stack
from .types import JSON_TYPE_NAMES, json_type_name

__all__ = ["schema_problem"]


def _pattern_problem(pattern: Any, where: str) -> str | None:
    if not isinstance(pattern, str):
        return f"{where} must be a string"
    from .ecma_regex import PatternError, translate

    try:
        translate(pattern)
    except PatternError as error:
        return f"{where}: {pattern!r} is not an ECMA-262 pattern miniagent can run ({error})"
    return None


_SUBSCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SUBSCHEMAS = (
    "items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames",
    "unevaluatedItems", "unevaluatedProperties", "additionalItems",
)  # fmt: skip
_SUBSCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
_TUPLE_FORMS = ("items", "additionalItems")  # a list of schemas there is the draft 4-7 tuple form


def _schema_problem(schema: Any, where: str) -> str | None:
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
    if "pattern" in schema and (problem := _pattern_problem(schema["pattern"], f"{where}.pattern")):
        return problem
    for key in _SUBSCHEMA_MAPS:
        mapping = schema.get(key)
        if mapping is None:
            continue
        if not isinstance(mapping, dict):
            return f"{where}.{key} must be an object of schemas"
        for name, sub in mapping.items():
            if key == "patternProperties" and (problem := _pattern_problem(name, f"{where}.{key}")):
                return problem
            if problem := _schema_problem(sub, f"{where}.{key}.{name}"):
                return problem
    for key in _SUBSCHEMAS:
        tuple_form = key in _TUPLE_FORMS and isinstance(schema.get(key), list)
        if key in schema and not tuple_form and (problem := _schema_problem(schema[key], f"{where}.{key}")):
            return problem
    for key in (*_SUBSCHEMA_LISTS, *_TUPLE_FORMS):
        subs = schema.get(key)
        if key not in schema or (key in _TUPLE_FORMS and not isinstance(subs, list)):
            continue
        if not isinstance(subs, list):
            return f"{where}.{key} must be a list of schemas"
        for index, sub in enumerate(subs):
            if problem := _schema_problem(sub, f"{where}.{key}[{index}]"):
                return problem
    return None


def schema_problem(schema: Any, where: str = "schema") -> str | None:
    """``None`` when ``schema`` is a well-formed JSON Schema as far as types go, else one line
    saying where it is not: a ``type`` that is not one of ``JSON_TYPE_NAMES`` (``"objekt"``),
    a sub-schema that is neither an object nor a boolean, ``required`` that is not a list of
    strings, a ``pattern`` (or a ``patternProperties`` name) that is not an ECMA-262 expression
    miniagent can run. Catches the typos that would otherwise make every answer invalid (or every
    answer valid). Never raises: a schema nested too deeply for the stack is a problem too.
    """
    try:
        try:
            return _schema_problem(schema, where)
        except RecursionError:
            return on_a_fresh_stack(_schema_problem, schema, where)
    except RecursionError:
        return f"{where} nests too deeply to check"
