"""A bad tool argument reports every problem of the call at once, so the model fixes them in one turn."""

from __future__ import annotations

from miniagent import ToolCall, run_agent, tool
from miniagent.testing import ScriptedClient
from miniagent.tools import MAX_PROBLEMS, check_input


@tool
def copy(source: str, count: int, mode: str = "a") -> str:
    """Copy."""
    return "copied"


def test_every_problem_of_the_arguments_is_reported() -> None:
    problem = check_input(copy.input_schema, {"source": 3, "count": "x", "extra": 1})
    assert problem == (
        "input.source: expected string, got integer; input.count: expected integer, got string; "
        "input: unknown property 'extra' (allowed: source, count, mode)"
    )
    assert check_input(copy.input_schema, {"count": "x"}) == (
        "input.count: expected integer, got string; input: missing required property source"
    )
    assert check_input(copy.input_schema, {"source": "a", "count": 1}) is None


def test_a_ref_inside_a_property_still_resolves_and_the_count_is_bounded() -> None:
    schema = {
        "type": "object",
        "$defs": {"n": {"type": "integer"}},
        "properties": {f"p{i}": {"$ref": "#/$defs/n"} for i in range(30)},
    }
    problem = check_input(schema, {f"p{i}": "x" for i in range(30)})
    assert problem is not None and "cannot" not in problem
    assert 1 < problem.count("expected integer") <= MAX_PROBLEMS


def test_the_model_reads_all_problems_in_one_error_result() -> None:
    client = ScriptedClient([[ToolCall("c1", "copy", {"source": 3, "count": "x"})], ["ok"]])
    result = run_agent(client=client, system="", tools=[copy], user="copy", max_turns=2)
    content = result.messages[2].content
    assert result.messages[2].is_error and "input.source" in content and "input.count" in content
