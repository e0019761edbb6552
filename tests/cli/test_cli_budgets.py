"""Usage and budgets in the CLI (issue "Usage, cost and budgets"): ``--json``'s final line carries
the run's usage and cost, ``--max-total-tokens`` stops with ``max_budget`` (exit 3) with every call
answered."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from miniagent import load_session
from tests.cli_helpers import FakeOpenAI, json_lines, model_args, run_cli, text_turn, tool_turn
from tests.helpers import assert_every_call_answered_once

pytestmark = pytest.mark.timeout(60)


def _with_usage(
    turn: list[dict[str, Any]], prompt: int, completion: int, cached: int = 0
) -> list[dict[str, Any]]:
    usage = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
    if cached:
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
    return [
        *turn,
        {"id": "x", "object": "chat.completion.chunk", "model": "test", "choices": [], "usage": usage},
    ]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "notes.txt").write_text("a note\n")
    return folder


def test_the_json_result_line_carries_usage(tmp_path: Path, workspace: Path) -> None:
    turns = [
        _with_usage(tool_turn("read_file", {"path": "notes.txt"}), 100, 5, cached=80),
        _with_usage(text_turn("ok"), 120, 3, cached=100),
    ]
    with FakeOpenAI(turns) as server:
        done = run_cli(["run", "--json", *model_args(server, workspace), "read"], tmp_path)
    assert done.returncode == 0, done.stderr
    last = json_lines(done.stdout)[-1]
    assert last["stop_reason"] == "complete" and last["exit_code"] == 0
    usage = last["usage"]
    assert (usage["input_tokens"], usage["output_tokens"], usage["cache_read_tokens"], usage["requests"]) == (
        220,
        8,
        180,
        2,
    )
    assert "cost_usd" in usage and "cost_usd" not in last  # once, inside usage


def test_max_total_tokens_stops_with_exit_3_and_every_call_answered(tmp_path: Path, workspace: Path) -> None:
    session = tmp_path / "s.jsonl"
    turns = [_with_usage(tool_turn("read_file", {"path": "notes.txt"}), 100, 5), text_turn("never")]
    with FakeOpenAI(turns) as server:
        args = ["run", "--json", "--max-total-tokens", "50", "--session", str(session)]
        done = run_cli([*args, *model_args(server, workspace), "read"], tmp_path)
        assert server.posts == 1
    assert done.returncode == 3, done.stderr
    assert json_lines(done.stdout)[-1]["stop_reason"] == "max_budget"
    messages = load_session(session)
    assert_every_call_answered_once(messages)
    assert messages[-1].role == "tool" and "a note" in messages[-1].content


def test_max_cost_for_a_model_without_a_price_is_a_usage_error_before_any_request(
    tmp_path: Path, workspace: Path
) -> None:
    with FakeOpenAI([text_turn("never")]) as server:
        done = run_cli(["run", "--max-cost", "0.5", *model_args(server, workspace), "hi"], tmp_path)
        assert server.posts == 0
    assert done.returncode == 64
    assert done.stderr.startswith("miniagent: error: --max-cost 0.5 needs the price of the model")
    assert done.stderr.count("\n") == 1
