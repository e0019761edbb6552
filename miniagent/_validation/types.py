"""JSON type names of decoded values, as JSON Schema 2020-12 defines the types (standard library
only): ``JSON_TYPES`` maps each name to its test, ``json_type_name`` names a value's type."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["JSON_TYPE_NAMES", "JSON_TYPES", "accept", "is_integer", "is_number", "json_type_name"]

JSON_TYPE_NAMES = ("string", "integer", "number", "boolean", "array", "object", "null")


def is_integer(value: Any) -> bool:
    """JSON Schema 2020-12: any number with a zero fractional part is an integer (1.0 too)."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


def is_number(value: Any) -> bool:
    """An int or a float, not a bool."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def accept(value: Any) -> bool:
    """The test of a type name JSON does not have: every value passes (not checked)."""
    return True


JSON_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": is_integer,
    "number": is_number,
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
        if JSON_TYPES[name](value):
            return name
    return type(value).__name__
