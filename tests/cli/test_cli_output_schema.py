"""``miniagent run --output-schema FILE`` (issue 16 item 3): only the valid JSON answer on stdout."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from miniagent import Message, RunResult
from miniagent.cli.display import OutputDisplay
from miniagent.cli.terminal import Spinner
from miniagent.output import OutputSchema
from tests.cli_helpers import FakeOpenAI, model_args, run_cli, text_turn, tool_turn

SCHEMA = {
    "type": "object",
    "properties": {"file": {"type": "string"}, "lines": {"type": "integer"}},
    "required": ["file", "lines"],
    "additionalProperties": False,
}

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "notes.txt").write_text("one\ntwo\nthree\n", encoding="utf-8")
    return folder


@pytest.fixture
def schema_file(tmp_path: Path) -> Path:
    path = tmp_path / "s.json"
    path.write_text(json.dumps(SCHEMA), encoding="utf-8")
    return path


def test_a_valid_answer_is_the_only_line_on_stdout(
    tmp_path: Path, workspace: Path, schema_file: Path
) -> None:
    turns = [
        tool_turn("read_file", {"path": "notes.txt"}),
        text_turn('Here:\n```json\n{"file": "notes.txt",\n "lines": 3}\n```'),
    ]
    with FakeOpenAI(turns) as server:
        args = ["run", "--output-schema", str(schema_file), *model_args(server, workspace), "Count the lines"]
        result = run_cli(args, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == '{"file":"notes.txt","lines":3}\n'
    assert server.requests[0]["response_format"]["json_schema"]["schema"] == SCHEMA


def test_an_invalid_answer_is_corrected_within_the_turns(
    tmp_path: Path, workspace: Path, schema_file: Path
) -> None:
    turns = [
        text_turn('{"file": "notes.txt", "lines": "three"}'),
        text_turn('{"file": "notes.txt", "lines": 3}'),
    ]
    with FakeOpenAI(turns) as server:
        args = ["run", "--output-schema", str(schema_file), *model_args(server, workspace), "Count"]
        result = run_cli(args, tmp_path)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"file": "notes.txt", "lines": 3}
    assert "answer.lines: expected integer, got string" in server.requests[1]["messages"][-1]["content"]


def test_no_valid_answer_exits_2_with_the_last_validation_error(
    tmp_path: Path, workspace: Path, schema_file: Path
) -> None:
    turns = [text_turn("It has three lines."), text_turn('{"file": "notes.txt"}')]
    with FakeOpenAI(turns) as server:
        args = [
            "run",
            "--max-turns",
            "2",
            "--output-schema",
            str(schema_file),
            *model_args(server, workspace),
            "Count",
        ]
        result = run_cli(args, tmp_path)
    assert result.returncode == 2
    assert result.stdout == ""
    assert "no valid answer within --max-turns: answer: missing required property lines" in result.stderr


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("{not json", "not JSON"),
        ("[1, 2]", "a JSON Schema object is needed, got array"),
        # typos in the schema itself (a new user's trial: exit 0 with "null", or 8 wasted turns)
        ('{"type": "objekt"}', "schema.type: 'objekt' is not a JSON type"),
        ('{"properties": {"x": {"type": "strin"}}}', "schema.properties.x.type: 'strin' is not"),
        ('{"type": "object", "required": "x"}', "schema.required must be a list"),
        ('{"type": "array", "items": [1]}', "schema.items[0] must be an object or a boolean"),
        ('{"type": "array", "items": {"type": "numbr"}}', "schema.items.type: 'numbr'"),
        ('{"type": "array", "contains": [{"type": "string"}]}', "schema.contains must be an object"),
    ],
)
def test_a_bad_schema_file_is_a_usage_error(
    tmp_path: Path, workspace: Path, content: str, problem: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content, encoding="utf-8")
    result = run_cli(
        [
            "run",
            "--output-schema",
            str(path),
            "--provider",
            "openai",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "go",
        ],
        tmp_path,
    )
    assert result.returncode == 64
    assert problem in result.stderr and result.stdout == ""


def test_output_schema_with_json_is_a_usage_error(tmp_path: Path, schema_file: Path) -> None:
    result = run_cli(
        [
            "run",
            "--json",
            "--output-schema",
            str(schema_file),
            "--provider",
            "openai",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "go",
        ],
        tmp_path,
    )
    assert result.returncode == 64 and "cannot be combined with --json" in result.stderr


@pytest.mark.local_model
@pytest.mark.timeout(900)  # a loaded 2-core machine; a few seconds when idle
def test_the_embedded_model_prints_valid_json(tmp_path: Path, workspace: Path, schema_file: Path) -> None:
    pytest.importorskip("xllamacpp")
    args = [
        "run",
        "--provider",
        "local",
        "--workspace",
        str(workspace),
        "--output-schema",
        str(schema_file),
        "Please read the file notes.txt and tell me what it says",
    ]
    result = run_cli(args, tmp_path, timeout=850)
    assert result.returncode == 0, result.stderr
    [line] = result.stdout.splitlines()
    answer = json.loads(line)
    assert isinstance(answer["file"], str) and isinstance(answer["lines"], int)


def test_the_display_prints_the_value_the_loop_checked(capsys: pytest.CaptureFixture[str]) -> None:
    # The answer is validated once, by the loop: the display shows RunResult.output as it is,
    # never its own second reading of the text.
    display = OutputDisplay(Spinner(sys.stderr, enabled=False), OutputSchema.of(SCHEMA))
    display.begin_run()
    display.on_message(Message("assistant", "prose the loop did not take as the answer"))
    value = {"file": "notes.txt", "lines": 3}
    display.finish_run(RunResult(list(display.run_messages), "complete", output=value), 0)
    captured = capsys.readouterr()
    assert captured.out == '{"file":"notes.txt","lines":3}\n'
    assert captured.err == ""
