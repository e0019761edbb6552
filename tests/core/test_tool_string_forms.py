"""What a tool may receive: paths, dates, times and bytes arrive as strings and reach the
function converted; a string that does not parse is an error result the model can read."""

from __future__ import annotations

import datetime
import threading
from pathlib import Path, PurePosixPath

from miniagent import ToolCall, run_agent, tool
from miniagent.testing import ScriptedClient
from miniagent.tools import check_input


@tool
def plan(folder: Path, day: datetime.date, at: datetime.datetime, start: datetime.time, blob: bytes) -> str:
    """Plan a backup.

    Args:
        folder: the folder to back up.
        day: the day.
        at: when exactly.
        start: the time of day.
        blob: a key, base64.
    """
    assert isinstance(folder, Path) and isinstance(blob, bytes)
    return f"{folder.name} {day.isoformat()} {at.tzinfo is not None} {start.hour} {blob!r}"


def test_the_schema_describes_each_form_as_a_string() -> None:
    properties = plan.input_schema["properties"]
    assert properties["folder"] == {"type": "string", "description": "the folder to back up."}
    assert properties["day"]["format"] == "date" and properties["at"]["format"] == "date-time"
    assert properties["start"]["format"] == "time"
    blob = {"type": "string", "contentEncoding": "base64", "description": "a key, base64."}
    assert properties["blob"] == blob


def test_the_function_receives_converted_values() -> None:
    arguments = {
        "folder": "data/logs",
        "day": "2026-12-01",
        "at": "2026-12-01T10:00:00Z",
        "start": "09:30",
        "blob": "aGk=",
    }
    assert check_input(plan.input_schema, arguments) is None
    result = plan.execute(arguments, None)
    assert not result.is_error and result.content == "logs 2026-12-01 True 9 b'hi'"


def test_a_string_that_does_not_parse_is_an_error_result_naming_the_parameter() -> None:
    arguments = {"folder": "x", "day": "2026-13-45", "at": "2026-12-01", "start": "09:30", "blob": "aGk="}
    result = plan.execute(arguments, None)
    assert result.is_error and result.content == "invalid input: day: '2026-13-45' is not a date (YYYY-MM-DD)"
    bad_blob = {**arguments, "day": "2026-12-01", "blob": "%%"}
    assert plan.execute(bad_blob, None).content == "invalid input: blob: '%%' is not base64 text"


def test_in_a_run_the_model_reads_the_error_and_fixes_its_call() -> None:
    good = {"folder": "x", "day": "2026-12-02", "at": "2026-12-01T10:00:00", "start": "09:30", "blob": ""}
    client = ScriptedClient(
        [[ToolCall("c1", "plan", {**good, "day": "tomorrow"})], [ToolCall("c2", "plan", good)], ["ok"]]
    )
    result = run_agent(client=client, system="", tools=[plan], user="plan", max_turns=4)
    assert result.stop_reason == "complete"
    assert result.messages[2].is_error and "is not a date" in result.messages[2].content
    assert not result.messages[4].is_error


def test_a_pure_path_subclass_is_built_by_its_own_class_and_cancel_still_arrives() -> None:
    seen: list[object] = []

    @tool
    def where(path: PurePosixPath, cancel: threading.Event | None = None) -> str:
        """Say where."""
        seen.append((path, cancel))
        return str(path)

    event = threading.Event()
    assert where.execute({"path": "a/b"}, event).content == "a/b"
    assert seen == [(PurePosixPath("a/b"), event)]
    assert "cancel" not in where.input_schema["properties"]
