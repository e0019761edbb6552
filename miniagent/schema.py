"""JSON Schema from Python type hints, and the conversion of checked JSON values back to them.

The ``@tool`` decorator builds a tool's input schema here, and ``run_agent(output_schema=...)``
accepts a type whose schema is built here. Supported hints: ``str``, ``int``, ``float``, ``bool``,
``None``, ``Any``; ``Literal[...]`` and ``enum.Enum`` subclasses (``enum``); ``X | Y`` and
``Optional[X]`` (``anyOf``; an optional hint accepts ``null``); ``list[X]``, ``tuple[X, ...]``,
``set[X]``, ``frozenset[X]``, ``Sequence[X]`` (``items``, ``{}`` when the item type is not
given); fixed tuples ``tuple[X, Y]`` (``prefixItems``); ``dict[str, X]`` (``additionalProperties``);
dataclasses and ``TypedDict`` classes (objects), nested in any of the above; and values sent as
strings (``STRING_FORMS``): ``pathlib`` paths (a string), ``datetime.datetime``, ``date`` and
``time`` (ISO 8601 strings, ``format`` ``date-time``/``date``/``time``), ``bytes`` (base64,
``contentEncoding``).

Invariants:

- Every array schema has ``items``; every object built from a dataclass, a ``TypedDict`` or a
  function's parameters has ``additionalProperties: false``.
- ``strict=True`` produces what OpenAI's strict mode accepts (its "Structured Outputs" guide):
  every property is required, a property that may be left out is nullable instead (``null`` then
  means "use the default"), ``additionalProperties: false`` on every object; a hint with no strict
  form (``Any``, a bare ``list``, ``dict[str, X]``, a fixed tuple) is a ``TypeError``.
- A value that passed ``validation.check_value`` against the schema converts without error: Enum
  members, dataclass instances, tuples and sets are rebuilt; everything else is passed as is.
  The one exception is a string form whose text does not parse (``"2024-13-45"`` as a date,
  ``"%%"`` as base64: ``format`` is not checked by the validator): its conversion raises
  ``ConversionError`` (a ``ValueError``) naming the property and the form expected.
"""

from __future__ import annotations

import base64
import binascii
import collections.abc
import dataclasses
import datetime
import enum
import inspect
import pathlib
import re
import types
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .validation import check_value

__all__ = [
    "STRING_FORMS",
    "ConversionError",
    "TypeSchema",
    "Field",
    "json_schema",
    "describe",
    "describe_object",
    "parse_docstring",
]

Convert = Callable[[Any], Any]


class ConversionError(ValueError):
    """A string value that passed the schema but does not parse as its type (a date, base64...).

    ``str()`` names what was expected, e.g. ``"'2024-13-45' is not a date (YYYY-MM-DD)"``;
    ``describe_object``'s conversion prefixes the property name.
    """


def _iso_datetime(text: str) -> datetime.datetime:
    # Python 3.10's fromisoformat does not read a trailing "Z" (UTC); 3.11 does.
    return datetime.datetime.fromisoformat(text[:-1] + "+00:00" if text[-1:] in "Zz" and text else text)


def _base64(text: str) -> bytes:
    return base64.b64decode(text, validate=True)


STRING_FORMS: dict[type, tuple[dict[str, Any], Callable[[str], Any], str]] = {
    datetime.datetime: ({"type": "string", "format": "date-time"}, _iso_datetime, "a date-time (ISO 8601)"),
    datetime.date: ({"type": "string", "format": "date"}, datetime.date.fromisoformat, "a date (YYYY-MM-DD)"),
    datetime.time: ({"type": "string", "format": "time"}, datetime.time.fromisoformat, "a time (HH:MM[:SS])"),
    bytes: ({"type": "string", "contentEncoding": "base64"}, _base64, "base64 text"),
}
"""Types sent as strings: their schema, how the text is parsed, and what the text must be.
``pathlib.PurePath`` and its subclasses are strings too (parsed by the class itself)."""


def _string_form(hint: type) -> TypeSchema:
    """The ``TypeSchema`` of a type sent as a string (``STRING_FORMS``, or a ``pathlib`` path)."""
    if issubclass(hint, pathlib.PurePath):
        return TypeSchema({"type": "string"}, convert=hint)
    kind = next(k for k in STRING_FORMS if hint is k)  # datetime before date: exact types only
    schema, parse, expected = STRING_FORMS[kind]

    def convert(value: Any) -> Any:
        try:
            return parse(value)
        except (ValueError, TypeError, binascii.Error):
            raise ConversionError(f"{value!r:.60} is not {expected}") from None

    return TypeSchema(dict(schema), convert=convert)


@dataclass(frozen=True, slots=True)
class TypeSchema:
    """The JSON Schema of a type hint and how to turn a valid JSON value into that type.

    Args:
        schema: the JSON Schema.
        nullable: the hint accepts ``None`` (the schema then accepts ``null``).
        convert: maps a value valid against ``schema`` to the hint's type (Enum member, dataclass
            instance, tuple, set, ...); ``None`` when the JSON value already is one.
    """

    schema: dict[str, Any]
    nullable: bool = False
    convert: Convert | None = None

    def from_json(self, value: Any) -> Any:
        """``value`` (already valid against ``schema``) as the hint's type."""
        return value if self.convert is None else self.convert(value)


@dataclass(frozen=True, slots=True)
class Field:
    """One property of an object schema: a function parameter, a dataclass or TypedDict field.

    Args:
        name: the property name.
        hint: its type hint.
        required: it has no default (the JSON value must hold it).
        description: text for the model, or ``None``.
    """

    name: str
    hint: Any
    required: bool
    description: str | None = None


def json_schema(hint: Any, *, strict: bool = False) -> dict[str, Any]:
    """The JSON Schema of a type hint, e.g. of a dataclass for ``run_agent(output_schema=...)``.

    Args:
        hint: a supported type hint (see the module docstring).
        strict: produce OpenAI's strict-mode form (see the module docstring).

    Raises:
        TypeError: the hint has no JSON Schema form (or no strict one), or a class refers to
            itself (recursive types are not described).
    """
    return describe(hint, strict=strict).schema


def describe(hint: Any, *, strict: bool = False) -> TypeSchema:
    """``json_schema`` plus the conversion back: a ``TypeSchema``. Raises as ``json_schema``."""
    return _describe(hint, strict, ())


_SCALARS: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}
_ARRAYS: dict[Any, Any] = {
    list: None,
    tuple: tuple,
    set: set,
    frozenset: frozenset,
    collections.abc.Sequence: None,
    collections.abc.MutableSequence: None,
    collections.abc.Set: frozenset,
    collections.abc.MutableSet: set,
}
_MAPPINGS = (dict, collections.abc.Mapping, collections.abc.MutableMapping)


def _describe(hint: Any, strict: bool, stack: tuple[type, ...]) -> TypeSchema:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Annotated:
        return _describe(args[0], strict, stack)
    if hint is Any or hint is inspect.Parameter.empty:
        if strict:
            raise TypeError("strict mode needs a concrete type, not Any (or a missing hint)")
        return TypeSchema({}, nullable=True)
    if hint is None or hint is type(None):
        return TypeSchema({"type": "null"}, nullable=True)
    if origin in (typing.Union, types.UnionType):
        return _union(args, strict, stack)
    if origin is typing.Literal:
        return _choices(list(args), None)
    if hint in _SCALARS:
        return TypeSchema({"type": _SCALARS[hint]})
    if hint in STRING_FORMS or (isinstance(hint, type) and issubclass(hint, pathlib.PurePath)):
        return _string_form(hint)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return _choices([member.value for member in hint], hint)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _dataclass(hint, strict, stack)
    if typing.is_typeddict(hint):
        return _typeddict(hint, strict, stack)
    if hint in _ARRAYS or origin in _ARRAYS:
        return _array(origin or hint, args, strict, stack)
    if hint in _MAPPINGS or origin in _MAPPINGS:
        return _mapping(args, strict, stack)
    raise TypeError(f"cannot describe the type {hint!r} in JSON Schema")


def nullable_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` widened to accept ``null``: ``"type": [T, "null"]`` (and ``null`` in its
    ``enum``) for a non-object type, else ``anyOf`` with ``{"type": "null"}``."""
    kind = schema.get("type")
    if not schema or kind == "null" or (isinstance(kind, list) and "null" in kind):
        return schema
    if isinstance(kind, str) and kind != "object":
        widened = {**schema, "type": [kind, "null"]}
        if "enum" in schema:
            widened["enum"] = [*schema["enum"], None]
        return widened
    if kind is None and set(schema) == {"enum"}:
        return {"enum": [*schema["enum"], None]}
    if set(schema) == {"anyOf"}:
        return {"anyOf": [*schema["anyOf"], {"type": "null"}]}
    return {"anyOf": [schema, {"type": "null"}]}


def _union(args: tuple[Any, ...], strict: bool, stack: tuple[type, ...]) -> TypeSchema:
    members = [a for a in args if a is not type(None)]
    forms = [_describe(a, strict, stack) for a in members]
    nullable = len(members) < len(args) or any(f.nullable for f in forms)
    if len(forms) == 1:
        schema, convert = forms[0].schema, forms[0].convert
    else:
        schema = {"anyOf": [f.schema for f in forms]}
        convert = _first_match(forms) if any(f.convert for f in forms) else None
    if nullable:
        schema = nullable_schema(schema)
        if convert is not None:
            convert = _keep_none(convert)
    return TypeSchema(schema, nullable, convert)


def _first_match(forms: list[TypeSchema]) -> Convert:
    def convert(value: Any) -> Any:
        for form in forms:
            if check_value(form.schema, value) is None:
                return form.from_json(value)
        return value

    return convert


def _keep_none(convert: Convert) -> Convert:
    return lambda value: None if value is None else convert(value)


_LITERAL_TYPES: dict[type, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


def _choices(values: list[Any], enum_class: type[enum.Enum] | None) -> TypeSchema:
    """``Literal[...]`` or an Enum's values: ``enum``, with ``type`` when all share one."""
    kinds = set()
    for value in values:
        if value is not None and type(value) not in _LITERAL_TYPES:
            owner = enum_class.__name__ if enum_class else "Literal"
            raise TypeError(f"{owner} value {value!r} is not a JSON string, number or boolean")
        kinds.add("null" if value is None else _LITERAL_TYPES[type(value)])
    schema: dict[str, Any] = {"enum": values}
    names = sorted(kinds - {"null"})
    if len(names) == 1:
        schema = {"type": names[0] if "null" not in kinds else [names[0], "null"], "enum": values}
    return TypeSchema(schema, "null" in kinds, enum_class)


def _array(container: Any, args: tuple[Any, ...], strict: bool, stack: tuple[type, ...]) -> TypeSchema:
    build = _ARRAYS[container]
    if container is tuple and len(args) >= 1 and args[-1] is not Ellipsis:
        return _fixed_tuple(args, strict, stack)
    if not args:
        if strict:
            raise TypeError(f"strict mode needs the item type of {container!r}, e.g. list[str]")
        item = TypeSchema({}, nullable=True)
    else:
        item = _describe(args[0], strict, stack)
    schema: dict[str, Any] = {"type": "array", "items": item.schema}
    if build in (set, frozenset) and not strict:
        schema["uniqueItems"] = True
    if item.convert is None:
        return TypeSchema(schema, convert=build)
    each = item.convert
    collect = build or list
    return TypeSchema(schema, convert=lambda value: collect(each(v) for v in value))


def _fixed_tuple(args: tuple[Any, ...], strict: bool, stack: tuple[type, ...]) -> TypeSchema:
    if strict:
        raise TypeError(
            f"strict mode has no form for the fixed tuple tuple{list(args)!r} (no prefixItems); "
            "use a dataclass or tuple[X, ...]"
        )
    forms = [_describe(a, strict, stack) for a in args]
    schema = {
        "type": "array",
        "prefixItems": [f.schema for f in forms],
        "items": False,
        "minItems": len(forms),
        "maxItems": len(forms),
    }
    return TypeSchema(
        schema, convert=lambda value: tuple(f.from_json(v) for f, v in zip(forms, value, strict=True))
    )


def _mapping(args: tuple[Any, ...], strict: bool, stack: tuple[type, ...]) -> TypeSchema:
    if strict:
        raise TypeError(
            "strict mode has no form for a free-form mapping (dict); use a dataclass or TypedDict"
        )
    if args and args[0] not in (str, Any):
        raise TypeError(f"JSON object keys are strings, not {args[0]!r}")
    if not args or args[1] is Any:
        return TypeSchema({"type": "object"})
    value = _describe(args[1], strict, stack)
    schema = {"type": "object", "additionalProperties": value.schema}
    if value.convert is None:
        return TypeSchema(schema)
    each = value.convert
    return TypeSchema(schema, convert=lambda v: {key: each(item) for key, item in v.items()})


# --- objects: dataclasses, TypedDicts, a function's parameters ----------------------------------


def _dataclass(cls: type, strict: bool, stack: tuple[type, ...]) -> TypeSchema:
    _refuse_recursion(cls, stack)
    hints = _hints_of(cls, extras=False)
    doc = cls.__doc__ or ""
    if doc.startswith(f"{cls.__name__}("):  # the signature dataclasses writes when there is none
        doc = ""
    text, texts = parse_docstring(doc)
    fields = [
        Field(
            f.name,
            hints.get(f.name, Any),
            f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING,
            texts.get(f.name),
        )
        for f in dataclasses.fields(cls)
        if f.init
    ]
    obj = describe_object(fields, strict=strict, stack=(*stack, cls))
    schema = {**obj.schema, "description": text} if text else obj.schema
    return TypeSchema(schema, convert=lambda value: cls(**obj.from_json(value)))


def _typeddict(cls: Any, strict: bool, stack: tuple[type, ...]) -> TypeSchema:
    _refuse_recursion(cls, stack)
    text, texts = parse_docstring(cls.__doc__ or "")
    fields = []
    for name, hint in _hints_of(cls, extras=True).items():
        # ``__required_keys__`` misses Required/NotRequired written as strings (``from __future__
        # import annotations``); the resolved hints show them.
        required = name in cls.__required_keys__
        while typing.get_origin(hint) in _TOTALITY or typing.get_origin(hint) is typing.Annotated:
            if typing.get_origin(hint) in _TOTALITY:
                required = _TOTALITY[typing.get_origin(hint)]
            hint = typing.get_args(hint)[0]
        fields.append(Field(name, hint, required, texts.get(name)))
    obj = describe_object(fields, strict=strict, stack=(*stack, cls))
    schema = {**obj.schema, "description": text} if text else obj.schema
    return TypeSchema(schema, convert=obj.convert)


# typing.Required / NotRequired exist from Python 3.11 on.
_TOTALITY: dict[Any, bool] = {
    getattr(typing, name): name == "Required" for name in ("Required", "NotRequired") if hasattr(typing, name)
}


def _hints_of(cls: Any, extras: bool) -> dict[str, Any]:
    """The resolved field hints of a class; its own name resolves too (a class defined in a
    function that refers to itself)."""
    try:
        return typing.get_type_hints(cls, localns={cls.__name__: cls}, include_extras=extras)
    except NameError as exc:
        raise TypeError(f"cannot resolve the type hints of {cls.__name__}: {exc}") from None


def _refuse_recursion(cls: type, stack: tuple[type, ...]) -> None:
    if cls in stack:
        raise TypeError(f"{cls.__name__} refers to itself; recursive types are not described")


def describe_object(
    fields: Sequence[Field], *, strict: bool = False, stack: tuple[type, ...] = ()
) -> TypeSchema:
    """An object schema with one property per field, and the conversion of its values.

    Non-strict: a field without default is ``required``. Strict: every field is ``required``; a
    field with a default whose hint does not accept ``None`` becomes nullable, and ``null`` there
    is dropped by the conversion (so the default applies). ``additionalProperties`` is ``false``.
    The conversion returns a ``dict`` (field name to converted value); it is ``None`` when no
    field needs converting.

    Raises:
        TypeError: a field's hint has no (strict) JSON Schema form.
    """
    properties: dict[str, Any] = {}
    required: list[str] = []
    converters: dict[str, Convert] = {}
    default_on_null: set[str] = set()
    for field in fields:
        form = _describe(field.hint, strict, stack)
        schema = form.schema
        if strict and not field.required and not form.nullable:
            schema = nullable_schema(schema)
            default_on_null.add(field.name)
        if field.description:
            schema = {**schema, "description": field.description}
        properties[field.name] = schema
        if field.required or strict:
            required.append(field.name)
        if form.convert is not None:
            converters[field.name] = form.convert
    object_schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        object_schema["required"] = required
    object_schema["additionalProperties"] = False
    if not converters and not default_on_null:
        return TypeSchema(object_schema)

    def convert(value: dict[str, Any]) -> dict[str, Any]:
        converted = {}
        for key, item in value.items():
            if item is None and key in default_on_null:
                continue
            each = converters.get(key)
            try:
                converted[key] = item if each is None else each(item)
            except ConversionError as exc:
                raise ConversionError(f"{key}: {exc}") from None
        return converted

    return TypeSchema(object_schema, convert=convert)


# --- docstrings ---------------------------------------------------------------------------------

_SECTION = r"^([A-Z][A-Za-z ]*):\s*$"
_ARG_LINE = r"^\s*(\*{0,2}\w+)\s*(\([^)]*\))?\s*:\s*(.*)$"
_ARGS_SECTIONS = frozenset(("Args", "Arguments", "Parameters", "Attributes", "Fields", "Keys"))


def parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into (description, {argument: text}).

    The description is the text before the first section header (``Args:``, ``Returns:``, ...);
    argument texts come from ``Args:``/``Arguments:``/``Parameters:`` (functions) and
    ``Attributes:``/``Fields:``/``Keys:`` (dataclasses, TypedDicts).
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
