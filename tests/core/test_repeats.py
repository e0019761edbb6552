"""The stop for loops (DESIGN.md "Unattended runs"): ``run_agent(max_repeats=N)`` stops
``no_progress`` before the next request when the same call got the same result N times in a row."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from miniagent import Approval, Message, Tool, ToolCall, ToolResult, run_agent, tool
from miniagent.repeats import Repeats, canonical_arguments
from miniagent.testing import ScriptedClient
from tests.helpers import assert_every_call_answered_once


def _status_tool(results: list[str], *, repeatable: bool = False) -> Tool:
    """``status``: answers the next of ``results`` (the last one again when they run out)."""
    answered: list[str] = []

    def execute(arguments: dict[str, Any], cancel: threading.Event | None) -> ToolResult:
        answered.append(results[min(len(answered), len(results) - 1)])
        return ToolResult(answered[-1])

    return Tool("status", "job status", {"type": "object"}, execute, read_only=True, repeatable=repeatable)


def _call(number: int, **arguments: Any) -> ToolCall:
    return ToolCall(f"call_{number}", "status", arguments or {"job": 7})


def _run(turns: list[Any], tools: list[Tool], max_repeats: int | None = 3, max_turns: int = 10) -> Any:
    client = ScriptedClient(turns)
    result = run_agent(
        client=client,
        system="",
        tools=tools,
        user="wait for job 7",
        max_turns=max_turns,
        max_repeats=max_repeats,
    )
    return result, client


def test_the_same_call_with_the_same_result_three_times_stops_before_the_next_request() -> None:
    turns = [[_call(i)] for i in range(1, 6)]
    result, client = _run(turns, [_status_tool(["running"])])
    assert result.stop_reason == "no_progress"
    assert len(client.requests) == 3  # stopped before the fourth request
    assert [m.content for m in result.messages if m.role == "tool"] == ["running"] * 3
    assert_every_call_answered_once(result.messages)  # the last turn's calls are all answered


def test_a_result_that_changes_is_progress() -> None:
    turns = [*[[_call(i)] for i in range(1, 5)], ["It finished."]]
    result, _ = _run(turns, [_status_tool(["queued", "running", "running", "done"])])
    assert result.stop_reason == "complete"


def test_arguments_are_compared_as_canonical_json() -> None:
    assert canonical_arguments(ToolCall("a", "t", {"x": 1, "y": [1, 2]})) == canonical_arguments(
        ToolCall("b", "t", {"y": [1, 2], "x": 1})
    )
    assert canonical_arguments(ToolCall("a", "t", {"x": 1})) != canonical_arguments(
        ToolCall("a", "t", {"x": 2})
    )
    turns = [[_call(1, a=1, b=2)], [_call(2, b=2, a=1)], [_call(3, a=1, b=2)], ["never"]]
    result, _ = _run(turns, [_status_tool(["running"])])
    assert result.stop_reason == "no_progress"


def test_other_arguments_or_another_call_in_between_end_the_streak() -> None:
    turns = [[_call(1)], [_call(2)], [_call(3, job=8)], [_call(4)], [_call(5)], ["ok"]]
    result, _ = _run(turns, [_status_tool(["running"])])
    assert result.stop_reason == "complete"


def test_a_repeatable_tool_polls_without_a_stop() -> None:
    turns = [*[[_call(i)] for i in range(1, 8)], ["It finished."]]
    result, _ = _run(turns, [_status_tool(["running"], repeatable=True)])
    assert result.stop_reason == "complete"


def test_the_tool_decorator_marks_a_tool_repeatable() -> None:
    @tool(repeatable=True, read_only=True)
    def poll(job: int) -> str:
        """Poll a job."""
        return "running"

    assert poll.repeatable and not tool(lambda: "x").repeatable


def test_the_same_refusal_again_and_again_is_no_progress() -> None:
    turns = [[ToolCall(f"c{i}", "status", {})] for i in range(5)]
    client = ScriptedClient(turns)
    result = run_agent(
        client=client,
        system="",
        tools=[_status_tool(["x"])],
        user="go",
        max_turns=10,
        max_repeats=2,
        before_tool_call=lambda call: Approval(False, "refused"),
    )
    assert result.stop_reason == "no_progress" and len(client.requests) == 2


def test_identical_calls_in_one_turn_count_in_the_streak() -> None:
    result, client = _run([[_call(1), _call(2), _call(3)], ["unused"]], [_status_tool(["running"])])
    assert result.stop_reason == "no_progress" and len(client.requests) == 1


def test_only_this_run_counts() -> None:
    history = []
    for i in range(1, 3):
        history += [Message("assistant", "", (_call(i),)), Message("tool", "running", (), f"call_{i}")]

    class Store:
        def load(self) -> list[Message]:
            return [Message("user", "wait"), *history]

        def append(self, message: Message) -> None:
            pass

        def close(self) -> None:
            pass

        def __enter__(self) -> Store:
            return self

        def __exit__(self, *exc_info: object) -> None:
            pass

    client = ScriptedClient([[_call(10)], ["done"]])
    result = run_agent(
        client=client,
        system="",
        tools=[_status_tool(["running"])],
        user="go on",
        max_turns=4,
        session=Store(),
        max_repeats=3,
    )
    assert result.stop_reason == "complete"


def test_without_max_repeats_nothing_stops() -> None:
    turns = [*[[_call(i)] for i in range(1, 7)], ["gave up"]]
    result, _ = _run(turns, [_status_tool(["running"])], max_repeats=None)
    assert result.stop_reason == "complete"


@pytest.mark.parametrize("bad", [0, 1, True, 2.5, "3", -1])
def test_max_repeats_must_be_an_int_of_at_least_two(bad: Any) -> None:
    with pytest.raises(ValueError, match="max_repeats must be None or an int >= 2"):
        run_agent(client=ScriptedClient([]), system="", tools=[], user="x", max_turns=1, max_repeats=bad)


def test_a_result_is_its_content_and_whether_it_is_an_error() -> None:
    watch = Repeats(2, ())
    call = _call(1)
    watch.answered(call, "running", False)
    assert not watch.stalled and watch.streak == 1
    watch.answered(call, "running", True)  # is_error differs: another result
    assert watch.streak == 1
    watch.answered(call, "running", True)
    assert watch.stalled
