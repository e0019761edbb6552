"""The CLI against hostile JSON (issue "Hostile and unlucky input, round 3", kinds 1-3), as a real
subprocess against a loopback server: option files nested too deeply are usage errors, a check of
the answer that would outlast ``--timeout`` is ended by it, absurd usage numbers are one error
line. Never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_helpers import FakeOpenAI, model_args, run_cli, text_turn

pytestmark = pytest.mark.timeout(120)

DEEP = "[" * 50_000 + "]" * 50_000


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder


def _schema_file(tmp_path: Path, schema: object) -> Path:
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(schema), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("option", "text", "shown"),
    [
        ("--output-schema", DEEP, "not JSON (JSON nested deeper than 256 levels)"),
        ("--mcp-config", '{"mcpServers": ' + DEEP + "}", "not JSON: JSON nested deeper than 256 levels"),
    ],
)
def test_option_files_nested_50000_deep_are_usage_errors(
    tmp_path: Path, option: str, text: str, shown: str
) -> None:
    path = tmp_path / "deep.json"
    path.write_text(text, encoding="utf-8")
    args = ["run", option, str(path), "--provider", "openai", "--base-url", "http://127.0.0.1:9/v1"]
    done = run_cli([*args, "--model", "m", "hi"], tmp_path)
    assert done.returncode == 64, done.stderr
    assert done.stdout == ""
    assert f"miniagent: error: {option} {path}: {shown}" in done.stderr
    assert "Traceback" not in done.stderr


def test_timeout_ends_a_run_whose_answer_check_backtracks(tmp_path: Path, workspace: Path) -> None:
    pattern = r"^([A-Za-z0-9]+\s?)+$"
    schema = _schema_file(tmp_path, {"type": "object", "properties": {"name": {"pattern": pattern}}})
    answer = json.dumps({"name": "a" * 36 + "!"})  # minutes of backtracking in re
    with FakeOpenAI([text_turn(answer)]) as server:
        args = ["run", "--timeout", "3", "--output-schema", str(schema), *model_args(server, workspace)]
        done = run_cli([*args, "name it"], tmp_path, timeout=30)
    assert done.returncode == 124, done.stderr
    assert "--timeout 3: time is up" in done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ""


def test_unique_items_over_20000_items_is_checked_well_within_the_timeout(
    tmp_path: Path, workspace: Path
) -> None:
    schema = _schema_file(tmp_path, {"type": "array", "uniqueItems": True})
    items = [[i, {"n": str(i)}] for i in range(20_000)]
    with FakeOpenAI([text_turn(json.dumps(items))]) as server:
        args = ["run", "--timeout", "3", "--output-schema", str(schema), *model_args(server, workspace)]
        done = run_cli([*args, "list them"], tmp_path, timeout=30)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == items


def test_a_pattern_the_validator_cannot_run_is_refused_before_the_run(tmp_path: Path) -> None:
    schema = _schema_file(tmp_path, {"type": "string", "pattern": "(?<=a+)b"})
    args = ["run", "--output-schema", str(schema), "--provider", "openai", "--base-url", "http://127.0.0.1:9/v1"]
    done = run_cli([*args, "--model", "m", "hi"], tmp_path)
    assert done.returncode == 64, done.stderr
    assert "not a valid JSON Schema: schema.pattern: '(?<=a+)b' is not an ECMA-262 pattern" in done.stderr


def test_a_usage_number_of_401_digits_is_one_error_line(tmp_path: Path, workspace: Path) -> None:
    usage = {"prompt_tokens": 10**400, "completion_tokens": 1, "total_tokens": 10**400 + 1}
    last = {"id": "chatcmpl-test", "object": "chat.completion.chunk", "choices": [], "usage": usage}
    with FakeOpenAI([[*text_turn("hello"), last]]) as server:
        done = run_cli(["run", "--max-total-tokens", "1000", *model_args(server, workspace), "hi"], tmp_path)
    assert done.returncode == 1, done.stderr
    assert "usage prompt_tokens = a number of about 401 digits, which is not a token count" in done.stderr
    assert "Traceback" not in done.stderr
