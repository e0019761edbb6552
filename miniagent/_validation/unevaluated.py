"""``unevaluatedProperties`` and ``unevaluatedItems`` (JSON Schema 2020-12, "Keywords for
Applying Subschemas Conditionally ... to Objects/Arrays", annotation collection).

A property (an item) is evaluated when a keyword of the same schema object, or of a sub-schema
applied in place to the same value that the value is valid against, looked at it:
``properties``, ``patternProperties``, ``additionalProperties``, a nested
``unevaluatedProperties`` (``prefixItems``, ``items``, ``contains`` -- the items it matched --,
the older ``items`` array with ``additionalItems``, a nested ``unevaluatedItems``), through
``allOf``, ``anyOf``, ``oneOf`` (each branch the value is valid against), ``if``/``then``/``else``,
``dependentSchemas`` and a local ``$ref``. ``not`` and a failing branch contribute nothing. The
unevaluated keyword checks the rest.

The sets are computed when the keyword is met, from the schema object that holds it (no state is
kept between keywords), so schemas without these keywords cost nothing.
"""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["Checker", "unevaluated_properties", "unevaluated_items"]


class Checker(Protocol):
    """What the evaluation needs from the running check (``validation._Context``)."""

    def check(self, schema: Any, value: Any, where: str) -> str | None:
        """The problem of ``value`` against ``schema``, or ``None``."""

    def resolve(self, reference: Any) -> Any:
        """The target of a ``$ref``, or ``None`` when it cannot be followed."""

    def search(self, pattern: Any, text: str) -> bool | None:
        """Whether the ECMA-262 ``pattern`` matches in ``text`` (``None`` for a bad pattern)."""

    def spend(self, amount: int) -> None:
        """Count work (the check may stop on a cancel or a deadline)."""


_ALL = None  # every property / item was evaluated


def _in_place(schema: dict[str, Any], value: Any, where: str, ctx: Checker) -> list[Any]:
    """The sub-schemas applied in place to ``value`` that it is valid against (annotations come
    only from those)."""
    applied: list[Any] = []
    subs = schema.get("allOf")
    if isinstance(subs, list):
        applied.extend(subs)
    for key in ("anyOf", "oneOf"):
        subs = schema.get(key)
        if isinstance(subs, list):
            ctx.spend(len(subs))
            applied.extend(sub for sub in subs if ctx.check(sub, value, where) is None)
    if "if" in schema:
        if ctx.check(schema["if"], value, where) is None:
            applied.extend((schema["if"], schema.get("then", True)))
        else:
            applied.append(schema.get("else", True))
    dependent = schema.get("dependentSchemas")
    if isinstance(dependent, dict) and isinstance(value, dict):
        applied.extend(sub for key, sub in dependent.items() if key in value)
    if "$ref" in schema:
        target = ctx.resolve(schema["$ref"])
        if target is not None:
            applied.append(target)
    return applied


def _evaluated_properties(
    schema: Any, value: dict[str, Any], where: str, ctx: Checker, nested: bool
) -> set[str] | None:
    """The names evaluated by ``schema`` (valid for ``value``), or ``_ALL``. ``nested``: a
    sub-schema, whose own ``unevaluatedProperties`` evaluates all (not so for the schema object
    whose keyword is being checked)."""
    if type(schema) is not dict:
        return set()
    if "additionalProperties" in schema or (nested and "unevaluatedProperties" in schema):
        return _ALL
    names: set[str] = set()
    properties = schema.get("properties")
    if isinstance(properties, dict):
        names.update(key for key in value if key in properties)
    patterns = schema.get("patternProperties")
    if isinstance(patterns, dict):
        ctx.spend(len(value) * len(patterns))
        names.update(key for key in value if any(ctx.search(p, key) for p in patterns))
    for sub in _in_place(schema, value, where, ctx):
        found = _evaluated_properties(sub, value, where, ctx, True)
        if found is _ALL:
            return _ALL
        names |= found
    return names


def _evaluated_items(
    schema: Any, value: list[Any], where: str, ctx: Checker, nested: bool
) -> set[int] | None:
    """The indexes evaluated by ``schema`` (valid for ``value``), or ``_ALL`` (see above)."""
    if type(schema) is not dict:
        return set()
    items = schema.get("items")
    if nested and "unevaluatedItems" in schema:
        return _ALL
    if ("items" in schema and not isinstance(items, list)) or "additionalItems" in schema:
        return _ALL
    indexes: set[int] = set()
    prefix = items if isinstance(items, list) else schema.get("prefixItems")
    if isinstance(prefix, list):
        indexes.update(range(min(len(prefix), len(value))))
    if "contains" in schema:
        ctx.spend(len(value))
        contains = schema["contains"]
        indexes.update(i for i, item in enumerate(value) if ctx.check(contains, item, where) is None)
    for sub in _in_place(schema, value, where, ctx):
        found = _evaluated_items(sub, value, where, ctx, True)
        if found is _ALL:
            return _ALL
        indexes |= found
    return indexes


def unevaluated_properties(
    extra: Any, schema: dict[str, Any], value: Any, where: str, ctx: Checker
) -> str | None:
    """The ``unevaluatedProperties`` keyword of ``schema``: each property no other keyword
    evaluated must be valid against ``extra`` (``false``: there must be none)."""
    if type(value) is not dict or extra is True:
        return None
    evaluated = _evaluated_properties(schema, value, where, ctx, False)
    if evaluated is _ALL:
        return None
    ctx.spend(len(value))
    for key, item in value.items():
        if key in evaluated:
            continue
        if extra is False:
            return f"{where}: unknown property {key!r} (no keyword of the schema allows it)"
        problem = ctx.check(extra, item, f"{where}.{key}")
        if problem:
            return problem
    return None


def unevaluated_items(extra: Any, schema: dict[str, Any], value: Any, where: str, ctx: Checker) -> str | None:
    """The ``unevaluatedItems`` keyword of ``schema`` (as ``unevaluated_properties``, for the
    items of an array)."""
    if type(value) is not list or extra is True:
        return None
    evaluated = _evaluated_items(schema, value, where, ctx, False)
    if evaluated is _ALL:
        return None
    ctx.spend(len(value))
    for index, item in enumerate(value):
        if index in evaluated:
            continue
        if extra is False:
            return f"{where}[{index}]: no more items are allowed (no keyword of the schema allows it)"
        problem = ctx.check(extra, item, f"{where}[{index}]")
        if problem:
            return problem
    return None
