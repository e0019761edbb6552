"""The @tool decorator's schema and the input check that runs before execute."""

from __future__ import annotations

import dataclasses
import enum
import threading
import types
from collections.abc import Callable, Iterator
from fractions import Fraction
from typing import (
    Any,
    Literal,
    NotRequired,
    Optional,
    TypedDict,
    Union,
    get_args,
    get_origin,
    get_type_hints,
    is_typeddict,
)

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from miniagent import Tool, ToolResult, tool
from miniagent.tools import check_input
from miniagent.validation import json_type_name


def test_schema_from_signature_and_docstring() -> None:
    @tool
    def search(
        query: str,
        limit: int = 10,
        exact: bool = False,
        tags: list[str] | None = None,
        mode: Literal["fast", "full"] = "fast",
        weight: float = 1.0,
    ) -> str:
        """Search the notes.

        Longer explanation.

        Args:
            query: what to look for,
                over two lines.
            limit: most results.

        Returns:
            matching lines.
        """
        return query

    assert isinstance(search, Tool)
    assert search.name == "search"
    assert search.description == "Search the notes.\n\nLonger explanation."
    assert search.read_only is False
    assert search.input_schema == {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "what to look for, over two lines."},
            "limit": {"type": "integer", "description": "most results."},
            "exact": {"type": "boolean"},
            "tags": {"type": ["array", "null"], "items": {"type": "string"}},
            "mode": {"type": "string", "enum": ["fast", "full"]},
            "weight": {"type": "number"},
        },
        "required": ["query"],
        "additionalProperties": False,
    }


def test_options_and_results() -> None:
    @tool(name="get", description="Get it.", read_only=True)
    def fetch(key: str) -> dict[str, Any]:
        return {"key": key, "n": 1}

    assert (fetch.name, fetch.description, fetch.read_only) == ("get", "Get it.", True)
    assert fetch.execute({"key": "k"}, None) == ToolResult('{"key": "k", "n": 1}')


def test_cancel_parameter_receives_the_event_and_is_not_in_the_schema() -> None:
    @tool
    def wait(seconds: float, cancel: threading.Event | None = None) -> ToolResult:
        """Wait."""
        assert cancel is not None
        return ToolResult("cancelled" if cancel.wait(seconds) else "waited", is_error=False)

    assert "cancel" not in wait.input_schema["properties"]
    event = threading.Event()
    event.set()
    assert wait.execute({"seconds": 5}, event) == ToolResult("cancelled")


def test_unsupported_types_are_refused_at_decoration() -> None:
    with pytest.raises(TypeError):

        @tool
        def bad(x: object) -> str:
            return ""

    with pytest.raises(TypeError):

        @tool
        def star(*args: str) -> str:
            return ""


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ({"path": "a"}, None),
        ({"path": "a", "n": 2.0}, None),
        ({}, "input: missing required property path"),
        ({"path": 1}, "input.path: expected string, got integer"),
        ({"path": "a", "n": True}, "input.n: expected integer, got boolean"),
        ({"path": "a", "n": 1.5}, "input.n: expected integer, got number"),
        ({"path": "a", "mode": "x"}, 'input.mode: "x" is not one of "r", "w"'),
        ({"path": "a", "tags": ["x", 3]}, "input.tags[1]: expected string, got integer"),
        ({"path": "a", "extra": 1}, "input: unknown property 'extra' (allowed: path, n, mode, tags)"),
        ([], "input: expected object, got array"),
    ],
)
def test_check_input(value: Any, problem: str | None) -> None:
    schema = {
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "n": {"type": "integer"},
            "mode": {"enum": ["r", "w"]},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["path"],
        "additionalProperties": False,
    }
    assert check_input(schema, value) == problem


def test_async_functions_are_refused_at_decoration() -> None:
    # Found by a new user: an async tool "ran" and returned the text of an unawaited coroutine.
    with pytest.raises(TypeError, match="async"):

        @tool
        async def fetch(url: str) -> str:
            return url


# --- issue 12: schemas every API accepts, and a check that covers them ------------------------------


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


@dataclasses.dataclass
class Point:
    """A point on the page.

    Attributes:
        x: across, in characters.
        y: down, in lines.
    """

    x: int
    y: int = 0


@dataclasses.dataclass(frozen=True)
class Box:
    corner: Point
    corners: list[Point]
    color: Color = Color.RED


class Options(TypedDict):
    name: str
    tags: NotRequired[list[str]]
    box: NotRequired[Box]


def _walk(schema: Any) -> Iterator[dict[str, Any]]:
    """Every schema node of a schema."""
    if isinstance(schema, dict):
        yield schema
        for value in schema.values():
            yield from _walk(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from _walk(value)


def test_every_array_has_items_and_fixed_tuples_have_prefix_items() -> None:
    @tool
    def f(a: tuple[str, ...], b: list, c: tuple[int, str], d: set[int], e: tuple) -> str:  # type: ignore[type-arg]
        return ""

    props = f.input_schema["properties"]
    assert props["a"] == {"type": "array", "items": {"type": "string"}}
    assert props["b"] == {"type": "array", "items": {}}
    assert props["c"] == {
        "type": "array",
        "prefixItems": [{"type": "integer"}, {"type": "string"}],
        "items": False,
        "minItems": 2,
        "maxItems": 2,
    }
    assert props["d"] == {"type": "array", "items": {"type": "integer"}, "uniqueItems": True}
    assert all("items" in node for node in _walk(f.input_schema) if node.get("type") == "array")
    assert check_input(f.input_schema["properties"]["c"], [1]) == "input: has 1 items, at least 2 expected"
    assert check_input(props["c"], [1, "a", 2]) == "input: at most 2 items allowed, got 3"
    arguments = {"a": ["x"], "b": [1, "y"], "c": [1, "s"], "d": [3, 4], "e": [None]}
    assert check_input(f.input_schema, arguments) is None


def test_optional_anything_accepts_null() -> None:
    @tool
    def f(
        order: Literal["asc", "desc"] | None = None,
        color: Color | None = None,
        point: Point | None = None,
        number: int | str | None = None,
        anything: Any = None,
    ) -> str:
        return repr((order, color, point, number))

    props = f.input_schema["properties"]
    assert props["order"] == {"type": ["string", "null"], "enum": ["asc", "desc", None]}
    nulls = {name: None for name in props}
    assert check_input(f.input_schema, nulls) is None
    assert f.execute(nulls, None).content == "(None, None, None, None)"
    assert check_input(f.input_schema, {"order": "up"}) == (
        'input.order: "up" is not one of "asc", "desc", null'
    )


@pytest.mark.parametrize(
    ("schema", "value", "problem"),
    [
        (
            {"anyOf": [{"type": "integer"}, {"type": "string"}]},
            [1, 2],
            "input: expected integer or string, got array",
        ),
        ({"anyOf": [{"type": "integer"}, {"type": "string"}]}, "a", None),
        (
            {"oneOf": [{"type": "integer"}, {"type": "number"}]},
            1,
            "input: matches 2 of the oneOf forms (0, 1); exactly one is allowed",
        ),
        ({"oneOf": [{"type": "integer"}, {"type": "string"}]}, 1, None),
        ({"allOf": [{"minimum": 1}, {"maximum": 3}]}, 4, "input: 4 is greater than the maximum 3"),
        ({"const": "a"}, "b", 'input: expected "a", got "b"'),
        ({"const": 1}, True, "input: expected 1, got true"),
        ({"enum": [1, 2]}, 1.0, None),
        ({"enum": [0]}, False, "input: false is not one of 0"),
        ({"minimum": 1}, 0, "input: 0 is less than the minimum 1"),
        ({"exclusiveMinimum": 1}, 1, "input: 1 must be greater than 1"),
        ({"exclusiveMaximum": 1}, 1.0, "input: 1.0 must be less than 1"),
        ({"multipleOf": 0.5}, 1.25, "input: 1.25 is not a multiple of 0.5"),
        ({"minLength": 2}, "é", "input: has 1 characters, at least 2 expected"),
        ({"maxLength": 2}, "abc", "input: has 3 characters, at most 2 expected"),
        ({"pattern": "^[a-z]+$"}, "ab1", "input: \"ab1\" does not match the pattern '^[a-z]+$'"),
        ({"minItems": 1}, [], "input: has 0 items, at least 1 expected"),
        ({"maxItems": 1}, [1, 2], "input: has 2 items, at most 1 expected"),
        ({"uniqueItems": True}, [1, True, 1.0], "input: items 0 and 2 are equal; items must be unique"),
        ({"not": {"type": "string"}}, "a", 'input: "a" matches a form that is not allowed'),
        (
            {
                "type": "object",
                "properties": {"a": {"type": "object", "properties": {"b": {"type": "integer"}}}},
            },
            {"a": {"b": "x"}},
            "input.a.b: expected integer, got string",
        ),
        (
            {
                "$defs": {"P": {"type": "object", "required": ["x"]}},
                "type": "array",
                "items": {"$ref": "#/$defs/P"},
            },
            [{"x": 1}, {}],
            "input[1]: missing required property x",
        ),
        (
            {
                "type": "object",
                "properties": {
                    "next": {"anyOf": [{"$ref": "#"}, {"type": "null"}]},
                    "v": {"type": "integer"},
                },
            },
            {"next": {"next": {"v": "deep"}}},
            "input.next.next.v: expected integer, got string",
        ),
        (
            {"if": {"type": "integer"}, "then": {"minimum": 0}, "else": {"type": "string"}},
            -1,
            "input: -1 is less than the minimum 0",
        ),
        ({"additionalProperties": {"type": "integer"}}, {"a": "x"}, "input.a: expected integer, got string"),
        (
            {"type": "array", "contains": {"type": "string"}},
            [1],
            "input: 0 items match 'contains', at least 1 expected",
        ),
        (False, 1, "input: no value is allowed here"),
        ({"format": "email", "description": "not checked"}, "x", None),
    ],
)
def test_check_covers_hand_written_keywords(schema: Any, value: Any, problem: str | None) -> None:
    assert check_input(schema, value) == problem
    assert Oracle(schema).is_valid(value) == (problem is None)


def test_a_reference_to_another_document_is_not_checked() -> None:
    assert check_input({"$ref": "https://example.com/other.json"}, 1) is None
    assert check_input({"$ref": "#/$defs/missing"}, 1) is None


def test_a_nullable_object_reports_its_field_not_the_null_branch() -> None:
    @tool
    def f(point: Point | None) -> str:
        return ""

    assert check_input(f.input_schema, {"point": {"x": "1"}}) == "input.point.x: expected integer, got string"


def test_enums_dataclasses_and_typeddicts_are_described_and_converted() -> None:
    received: list[Any] = []

    @tool
    def draw(color: Color, level: Level, box: Box, options: Options, pairs: dict[str, Point]) -> str:
        received.extend([color, level, box, options, pairs])
        return "ok"

    props = draw.input_schema["properties"]
    assert props["color"] == {"type": "string", "enum": ["red", "blue"]}
    assert props["level"] == {"type": "integer", "enum": [1, 2]}
    point = {
        "type": "object",
        "properties": {
            "x": {"type": "integer", "description": "across, in characters."},
            "y": {"type": "integer", "description": "down, in lines."},
        },
        "required": ["x"],
        "additionalProperties": False,
        "description": "A point on the page.",
    }
    assert props["box"]["properties"]["corner"] == point
    assert props["box"]["properties"]["corners"] == {"type": "array", "items": point}
    assert props["box"]["required"] == ["corner", "corners"]
    assert props["options"]["required"] == ["name"]
    assert props["pairs"] == {"type": "object", "additionalProperties": point}
    arguments = {
        "color": "blue",
        "level": 2,
        "box": {"corner": {"x": 1}, "corners": [{"x": 2, "y": 3}], "color": "blue"},
        "options": {"name": "n", "box": {"corner": {"x": 4}, "corners": []}},
        "pairs": {"a": {"x": 5}},
    }
    assert check_input(draw.input_schema, arguments) is None
    assert draw.execute(arguments, None) == ToolResult("ok")
    assert received == [
        Color.BLUE,
        Level.HIGH,
        Box(Point(1), [Point(2, 3)], Color.BLUE),
        {"name": "n", "box": Box(Point(4), [])},
        {"a": Point(5)},
    ]
    assert check_input(draw.input_schema, {**arguments, "color": "green"}) == (
        'input.color: "green" is not one of "red", "blue"'
    )


def test_recursive_and_unsupported_classes_are_refused_at_decoration() -> None:
    @dataclasses.dataclass
    class Node:
        children: list[Node]

    with pytest.raises(TypeError, match="refers to itself"):
        tool(_function_of(Node))
    with pytest.raises(TypeError, match="keys are strings"):
        tool(_function_of(dict[int, str]))

    class Odd(enum.Enum):
        A = (1, 2)

    with pytest.raises(TypeError, match="not a JSON"):
        tool(_function_of(Odd))


def test_strict_mode_schema() -> None:
    @tool(strict=True)
    def find(query: str, limit: int = 5, point: Point | None = None, tags: list[str] | None = None) -> str:
        return repr((query, limit, point, tags))

    schema = find.input_schema
    assert find.strict is True
    assert schema["required"] == ["query", "limit", "point", "tags"]
    assert schema["properties"]["limit"] == {"type": ["integer", "null"]}
    for node in _walk(schema):
        if node.get("type") == "object":
            assert node["additionalProperties"] is False
            assert node["required"] == list(node["properties"])
    inner = schema["properties"]["point"]["anyOf"][0]
    assert inner["properties"]["y"] == {"type": ["integer", "null"], "description": "down, in lines."}
    # null for a parameter that has a default means "use the default"
    arguments = {"query": "q", "limit": None, "point": {"x": 1, "y": None}, "tags": None}
    assert check_input(schema, arguments) is None
    assert find.execute(arguments, None).content == "('q', 5, Point(x=1, y=0), None)"
    assert check_input(schema, {"query": "q"}) == "input: missing required properties limit, point, tags"


@pytest.mark.parametrize(
    ("hint", "match"),
    [(Any, "not Any"), (list, "item type"), (dict[str, int], "mapping"), (tuple[int, str], "fixed tuple")],
)
def test_strict_mode_refuses_hints_without_a_strict_form(hint: Any, match: str) -> None:
    with pytest.raises(TypeError, match=match):
        tool(strict=True)(_function_of(hint))


def test_json_type_names_have_one_home() -> None:
    from miniagent.providers._decode import parse_tool_input

    assert [json_type_name(v) for v in ("", 1, 1.0, 1.5, True, [], {}, None)] == [
        "string",
        "integer",
        "integer",
        "number",
        "boolean",
        "array",
        "object",
        "null",
    ]
    assert parse_tool_input("5")[1] == "arguments must be a JSON object, got integer"


def _function_of(hint: Any) -> Callable[..., str]:
    def f(v: Any) -> str:
        return repr(v)

    f.__annotations__ = {"v": hint, "return": str}
    return f


# --- the property test: jsonschema is the oracle -----------------------------------------------------
# jsonschema divides floats in binary (0.3 is no multiple of 0.1 there); JSON Schema's multipleOf
# is about the numbers as written, which check_value follows: the oracle's multipleOf is exact.


def _as_written(number: Any) -> Fraction:
    return Fraction(repr(number)) if isinstance(number, float) else Fraction(number)


def _exact_multiple_of(validator: Any, divisor: Any, instance: Any, schema: Any) -> Iterator[Any]:
    quotient = _as_written(instance) / _as_written(divisor) if validator.is_type(instance, "number") else 1
    if Fraction(quotient).denominator != 1:
        yield jsonschema.ValidationError(f"{instance!r} is not a multiple of {divisor!r}")


Oracle = jsonschema.validators.extend(jsonschema.Draft202012Validator, {"multipleOf": _exact_multiple_of})


_NAMES = ("a", "b", "x")
_json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-4, 4)
    | st.floats(-4, 4, allow_nan=False).map(lambda f: round(f, 1))
    | st.sampled_from(["", "a", "b1", "red", "blue", "ab"])
)
_json_values = st.recursive(
    _json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(_NAMES), inner, max_size=3),
    max_leaves=8,
)


def _dataclass_of(hints: list[Any], total: bool) -> Any:
    fields: list[Any] = []
    for index, hint in enumerate(hints):
        if total or index == 0:
            fields.append((_NAMES[index], hint))
        else:
            fields.append((_NAMES[index], hint, dataclasses.field(default=None)))
    return dataclasses.make_dataclass(f"D{len(hints)}", fields)


def _typeddict_of(hints: list[Any], total: bool) -> Any:
    return TypedDict("T", dict(zip(_NAMES, hints, strict=False)), total=total)  # type: ignore[operator]


_base_hints = st.sampled_from(
    [str, int, float, bool, Any, Color, Level, Literal["a", "b"], Literal[1, "a", None], list, tuple]
)
_hints = st.recursive(
    _base_hints,
    lambda inner: st.one_of(
        inner.map(lambda h: list[h]),  # type: ignore[valid-type]
        inner.map(lambda h: tuple[h, ...]),  # type: ignore[valid-type]
        st.tuples(inner, inner).map(lambda t: tuple[t]),  # type: ignore[valid-type]
        inner.map(lambda h: Optional[h]),  # noqa: UP045
        st.tuples(inner, inner).map(lambda t: Union[t]),  # noqa: UP007
        inner.map(lambda h: dict[str, h]),  # type: ignore[valid-type]
        st.builds(_dataclass_of, st.lists(inner, min_size=1, max_size=3), st.booleans()),
        st.builds(_typeddict_of, st.lists(inner, min_size=1, max_size=3), st.booleans()),
    ),
    max_leaves=5,
)


def _values_for(hint: Any) -> st.SearchStrategy[Any]:
    """Mostly valid values for a hint (random JSON covers the invalid ones)."""
    origin, args = get_origin(hint), get_args(hint)
    if hint in (str,):
        return st.text(max_size=3)
    if hint is int:
        return st.integers(-3, 3)
    if hint is float:
        return st.integers(-3, 3) | st.floats(-3, 3, allow_nan=False)
    if hint is bool:
        return st.booleans()
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return st.sampled_from([m.value for m in hint])
    if origin is Literal:
        return st.sampled_from(args)
    if origin is Union or origin is types.UnionType:
        return st.one_of([_values_for(a) if a is not type(None) else st.none() for a in args])
    if dataclasses.is_dataclass(hint) or is_typeddict(hint):
        hints = get_type_hints(hint)
        return st.fixed_dictionaries({}, optional={k: _values_for(v) for k, v in hints.items()})
    if origin is tuple and args and args[-1] is not Ellipsis:
        return st.tuples(*[_values_for(a) for a in args]).map(list)
    if origin in (list, tuple):
        return st.lists(_values_for(args[0]), max_size=3)
    if origin is dict:
        return st.dictionaries(st.sampled_from(_NAMES), _values_for(args[1]), max_size=2)
    return _json_values


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), hint=_hints)
def test_check_agrees_with_jsonschema_on_schemas_from_hints(data: st.DataObject, hint: Any) -> None:
    made = tool(_function_of(hint))
    schema = made.input_schema
    value = data.draw(_values_for(hint) | _json_values)
    arguments = {"v": value}
    expected = Oracle(schema).is_valid(arguments)
    problem = check_input(schema, arguments)
    assert (problem is None) == expected, (schema, arguments, problem)
    if problem is None:
        made.execute(arguments, None)  # a valid value always converts
    assert all("items" in node for node in _walk(schema) if node.get("type") == "array")
    try:
        strict = tool(strict=True)(_function_of(hint))
    except TypeError:
        return
    assert Oracle(strict.input_schema).is_valid(arguments) == (
        check_input(strict.input_schema, arguments) is None
    )


_TYPES = ["string", "integer", "number", "boolean", "array", "object", "null"]
_REF = {"$ref": "#/$defs/A"}


def _leaf_schemas() -> st.SearchStrategy[Any]:
    small = st.integers(-3, 3) | st.floats(-3, 3, allow_nan=False).map(lambda f: round(f, 1))
    size = st.integers(0, 3)
    return st.one_of(
        st.booleans(),
        st.sampled_from(_TYPES).map(lambda t: {"type": t}),
        st.lists(st.sampled_from(_TYPES), min_size=1, max_size=3, unique=True).map(lambda t: {"type": t}),
        st.lists(_json_values, min_size=1, max_size=3).map(lambda v: {"enum": v}),
        _json_values.map(lambda v: {"const": v}),
        st.builds(
            lambda k, n: {k: n},
            st.sampled_from(["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"]),
            small,
        ),
        st.sampled_from([1, 2, 0.5, 0.1]).map(lambda n: {"multipleOf": n}),
        st.builds(
            lambda k, n: {k: n},
            st.sampled_from(
                ["minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties"]
            ),
            size,
        ),
        st.sampled_from(["^a", "1$", "[0-9]", "^$", "b"]).map(lambda p: {"pattern": p}),
        st.just({"uniqueItems": True}),
        st.lists(st.sampled_from(_NAMES), max_size=2, unique=True).map(lambda r: {"required": r}),
    )


def _compound(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    schemas = st.lists(inner, min_size=1, max_size=3)
    return st.one_of(
        schemas.map(lambda s: {"anyOf": s}),
        schemas.map(lambda s: {"oneOf": s}),
        schemas.map(lambda s: {"allOf": s}),
        inner.map(lambda s: {"not": s}),
        inner.map(lambda s: {"type": "array", "items": s}),
        st.tuples(schemas, inner).map(lambda t: {"prefixItems": t[0], "items": t[1]}),
        inner.map(lambda s: {"contains": s}),
        st.tuples(st.dictionaries(st.sampled_from(_NAMES), inner, max_size=2), inner).map(
            lambda t: {"type": "object", "properties": t[0], "additionalProperties": t[1]}
        ),
        st.tuples(inner, inner, inner).map(lambda t: {"if": t[0], "then": t[1], "else": t[2]}),
        st.tuples(st.dictionaries(st.sampled_from(_NAMES), inner, max_size=2), schemas, inner).map(
            lambda t: {"properties": t[0], "anyOf": t[1], "unevaluatedProperties": t[2]}
        ),
        st.tuples(schemas, schemas, inner).map(
            lambda t: {"prefixItems": t[0], "allOf": [{"prefixItems": t[1]}], "unevaluatedItems": t[2]}
        ),
        st.tuples(inner, inner).map(
            lambda t: {**t[0], **t[1]} if all(isinstance(s, dict) for s in t) else t[0]
        ),
    )


_plain_schemas = st.recursive(_leaf_schemas(), _compound, max_leaves=6)
_schemas_with_refs = st.recursive(_leaf_schemas() | st.just(_REF), _compound, max_leaves=6)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(definition=_plain_schemas, schema=_schemas_with_refs, value=_json_values)
def test_check_agrees_with_jsonschema_on_hand_written_schemas(
    definition: Any, schema: Any, value: Any
) -> None:
    root = {"$defs": {"A": definition}, "allOf": [schema]}
    expected = Oracle(root).is_valid(value)
    problem = check_input(root, value)
    assert (problem is None) == expected, (root, value, problem)


def test_a_strict_tool_is_sent_strict_to_an_openai_compatible_server() -> None:
    from providers_server import ProviderServer, Reply, fixture

    from miniagent import run_agent
    from miniagent.providers import OpenAIChatClient

    @tool(strict=True)
    def find(query: str, limit: int = 5) -> str:
        return query

    @tool
    def loose(query: str) -> str:
        return query

    with ProviderServer(Reply([fixture("openai-text.sse")])) as server:
        client = OpenAIChatClient("test-model", f"{server.url}/v1")
        run_agent(client=client, system="s", tools=[find, loose], user="u", max_turns=1)
        [captured] = server.requests
    functions = [spec["function"] for spec in captured.body["tools"]]
    assert functions[0] == {
        "name": "find",
        "description": "",
        "parameters": find.input_schema,
        "strict": True,
    }
    assert "strict" not in functions[1]
