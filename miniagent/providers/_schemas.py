"""Tool schemas as each API accepts them, whatever their source (``@tool``, an MCP server, a dict).

Only the request body carries these forms: the ``Tool`` keeps its own schema and the loop checks
every input against it, so a form that describes the input less closely (a flattened root) never
lets a bad input through. Each function is pure and deterministic: it returns its argument itself
when nothing needs to change (a walk, no copy), else a changed copy (the argument is never
modified), and one schema always gives one result (the request prefix stays byte-stable for
prompt caches).

The rules, as each API words its 400:

- OpenAI chat completions, ``function.parameters`` (``openai_parameters``): the root is an object
  schema ("schema must be a JSON Schema of 'type: \\"object\\"'"); every object schema has
  ``properties`` ("object schema missing properties"), every array schema ``items`` ("array schema
  missing items"), at any depth. ``response_format`` (``openai_response_schema``): the same for
  objects and arrays; its root may be any schema.
- Anthropic Messages, ``input_schema`` (``anthropic_input_schema``): the root is an object schema
  ("input_schema.type: Field required") without ``oneOf``, ``allOf`` or ``anyOf`` ("input_schema
  does not support oneOf, allOf, or anyOf at the top level").
- Gemini API, ``functionDeclarations[].parametersJsonSchema`` (``gemini_parameters``): JSON Schema
  (not the OpenAPI-subset ``parameters``, which has no field for ``additionalProperties``,
  ``$ref``, ``const``, a list ``type``...: "Unknown name ... Cannot find field"); the schema "must
  describe an object where the properties are the parameters to the function" (the
  ``FunctionDeclaration`` reference), so the root is an object schema without a top-level
  combination. ``generationConfig.responseJsonSchema`` takes any JSON Schema as it is.

A root that is a combination becomes one object schema (``object_root``): the properties of every
branch (a property whose branches differ: the ``anyOf``, or ``allOf`` for an ``allOf``, of its
forms), required what every branch of an ``anyOf``/``oneOf`` requires and what any branch of an
``allOf`` requires; local ``$ref`` branches are followed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = [
    "anthropic_input_schema",
    "gemini_parameters",
    "object_root",
    "openai_parameters",
    "openai_response_schema",
]

_COMBINATIONS = ("anyOf", "oneOf", "allOf")
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_PLACES = (
    "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames",
    "unevaluatedItems", "unevaluatedProperties", "additionalItems",
)  # fmt: skip
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems", "items")  # ``items``: one schema or a list


def openai_parameters(schema: Any) -> dict[str, Any]:
    """``schema`` as OpenAI chat completions take a function's ``parameters``: an object root
    (``object_root``), ``properties`` on every object schema and ``items`` on every array schema."""
    completed: dict[str, Any] = _completed(object_root(schema))
    return completed


def openai_response_schema(schema: Any) -> Any:
    """``schema`` as OpenAI takes ``response_format.json_schema.schema``: ``properties`` on every
    object schema and ``items`` on every array schema; the root as it is."""
    return _completed(schema)


def anthropic_input_schema(schema: Any) -> dict[str, Any]:
    """``schema`` as the Messages API takes a tool's ``input_schema``: an object root without a
    top-level combination (``object_root``)."""
    return object_root(schema)


def gemini_parameters(schema: Any) -> dict[str, Any]:
    """``schema`` as the Gemini API takes a function's ``parametersJsonSchema``: an object root
    without a top-level combination (``object_root``); the rest is JSON Schema as it is."""
    return object_root(schema)


def object_root(schema: Any) -> dict[str, Any]:
    """``schema`` with ``"type": "object"`` at its root and no ``anyOf``/``oneOf``/``allOf`` there
    (its branches merged, see the module docstring); ``schema`` itself when it already is so.
    Anything that is not an object schema (``true``, ``{}``, a list) becomes an open object."""
    if not isinstance(schema, dict):
        return {"type": "object", "properties": {}}
    combined = [key for key in _COMBINATIONS if isinstance(schema.get(key), list)]
    if schema.get("type") == "object" and not combined:
        return schema
    root = {key: value for key, value in schema.items() if key not in combined}
    root["type"] = "object"
    if not combined:
        return root
    properties = dict(root["properties"]) if isinstance(root.get("properties"), dict) else {}
    required = [name for name in root.get("required") or () if isinstance(name, str)]
    for key in combined:
        branches = [_followed(branch, schema) for branch in schema[key]]
        _merge_properties(properties, branches, "allOf" if key == "allOf" else "anyOf")
        required += _required_by(branches, every=key != "allOf")
    root["properties"] = properties
    names = list(dict.fromkeys(name for name in required if name in properties))
    if names:
        root["required"] = names
    else:
        root.pop("required", None)
    return root


def _followed(branch: Any, root: dict[str, Any]) -> Any:
    """``branch``, or what its local ``$ref`` (``#/$defs/Name``, any JSON pointer) points to."""
    reference = branch.get("$ref") if isinstance(branch, dict) else None
    if not isinstance(reference, str) or not reference.startswith("#/"):
        return branch
    target: Any = root
    for part in reference[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(target, dict) or part not in target:
            return branch
        target = target[part]
    return target


def _merge_properties(properties: dict[str, Any], branches: list[Any], joined: str) -> None:
    """Add the properties of ``branches`` to ``properties``; one that differs from what is there
    becomes ``{joined: [forms...]}``."""
    for branch in branches:
        named = branch.get("properties") if isinstance(branch, dict) else None
        for name, form in (named or {}).items() if isinstance(named, dict) else ():
            known = properties.get(name)
            if name not in properties:
                properties[name] = form
            elif known != form:
                forms = known[joined] if isinstance(known, dict) and set(known) == {joined} else [known]
                if form not in forms:
                    properties[name] = {joined: [*forms, form]}


def _required_by(branches: list[Any], *, every: bool) -> list[str]:
    """The names every branch requires (``every``), else those any branch requires."""
    sets = []
    for branch in branches:
        names = branch.get("required") if isinstance(branch, dict) else None
        sets.append([n for n in names if isinstance(n, str)] if isinstance(names, list) else [])
    if not sets:
        return []
    if not every:
        return [name for names in sets for name in names]
    return [name for name in sets[0] if all(name in names for names in sets[1:])]


def _completed(node: Any) -> Any:
    """``node`` with ``properties`` on every object schema and ``items`` on every array schema, at
    any depth; ``node`` itself when none is missing (also when it nests too deeply to walk)."""
    try:
        return _complete(node)
    except RecursionError:
        return node


def _complete(node: Any) -> Any:
    if not isinstance(node, dict):
        return node
    out = node
    kinds = node.get("type")
    kinds = kinds if isinstance(kinds, list) else (kinds,)
    if "object" in kinds and "properties" not in node:
        out = {**out, "properties": {}}
    if "array" in kinds and "items" not in node:
        out = {**out, "items": {}}
    for key, sub in node.items():  # only the keys present: a schema node has a few
        place = _PLACES.get(key)
        if place is None:
            continue
        done = _SUB_COMPLETERS[place](sub)
        if done is not sub:
            out = {**out, key: done}
    return out


def _complete_map(mapping: Any) -> Any:
    if not isinstance(mapping, dict):
        return mapping
    done = {name: _complete(sub) for name, sub in mapping.items()}
    return mapping if all(done[name] is sub for name, sub in mapping.items()) else done


def _complete_list(subs: Any) -> Any:
    if not isinstance(subs, list):
        return _complete(subs)  # ``items`` as one schema
    done = [_complete(sub) for sub in subs]
    return subs if all(a is b for a, b in zip(done, subs, strict=True)) else done


_SUB_COMPLETERS: dict[str, Callable[[Any], Any]] = {
    "map": _complete_map,
    "one": _complete,
    "list": _complete_list,
}
_PLACES: dict[str, str] = {
    **dict.fromkeys(_SCHEMA_MAPS, "map"),
    **dict.fromkeys(_SCHEMA_PLACES, "one"),
    **dict.fromkeys(_SCHEMA_LISTS, "list"),
}
