"""The @tool decorator's schema and the input check that runs before execute."""

from __future__ import annotations

import threading
from typing import Any, Literal

import pytest

from miniagent import Tool, ToolResult, tool
from miniagent.tools import check_input


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
            "mode": {"enum": ["fast", "full"]},
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
