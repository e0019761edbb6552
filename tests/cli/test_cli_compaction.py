"""Compaction in the CLI: ``--compact-at TOKENS`` (and ``chat``'s default), the summary shown as a
note on stderr and as its message line with ``--json``, every message kept in the session."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from miniagent import load_session
from miniagent.cli.defaults import DEFAULT_CHAT_COMPACT_AT, compact_at
from miniagent.compaction import SUMMARY_INSTRUCTION, SUMMARY_PREFIX
from miniagent.messages import Summary
from tests.cli_helpers import FakeOpenAI, json_lines, model_args, run_cli, text_turn, tool_turn
from tests.helpers import assert_every_call_answered_once

pytestmark = pytest.mark.timeout(60)


def _with_usage(turn: list[dict[str, Any]], prompt: int) -> list[dict[str, Any]]:
    usage = {"prompt_tokens": prompt, "completion_tokens": 5, "total_tokens": prompt + 5}
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


def _turns() -> list[list[dict[str, Any]]]:
    return [
        _with_usage(tool_turn("read_file", {"path": "notes.txt"}), 5_000),  # reaches --compact-at
        _with_usage(text_turn("the user wants notes.txt read"), 4_000),  # the summary request
        _with_usage(text_turn("done"), 600),
    ]


@pytest.mark.parametrize("json_mode", [True, False])
def test_compact_at_summarises_before_the_request_that_would_reach_it(
    tmp_path: Path, workspace: Path, json_mode: bool
) -> None:
    # The prompt is larger than what is kept (--compact-at's characters), so it is summarised.
    session = tmp_path / "s.jsonl"
    prompt = "read the notes " + "x" * 4_500
    args = ["run", *(["--json"] if json_mode else []), "--compact-at", "4000", "--session", str(session)]
    with FakeOpenAI(_turns()) as server:
        done = run_cli([*args, *model_args(server, workspace), prompt], tmp_path)
    assert done.returncode == 0, done.stderr
    summary_request, after = server.requests[1], server.requests[2]
    assert "tools" not in summary_request
    assert SUMMARY_INSTRUCTION in summary_request["messages"][-1]["content"]
    contents = [m.get("content") for m in after["messages"] if m["role"] == "user"]
    assert contents[0] == SUMMARY_PREFIX + "the user wants notes.txt read"
    assert "read the notes" not in str(after["messages"])  # summarised, not sent
    record = load_session(session)
    assert [m.kept for m in record if isinstance(m, Summary)] == [2]
    assert record[0].content == prompt  # the session keeps every message
    assert_every_call_answered_once(record)
    if json_mode:
        lines = json_lines(done.stdout)
        (marked,) = [line for line in lines if "summary_kept" in line]
        assert marked["role"] == "user" and marked["summary_kept"] == 2
        assert "context compacted" not in done.stderr
    else:
        assert done.stdout == "done\n"
        assert "miniagent: context compacted: the earlier conversation is summarised in" in done.stderr
        assert "the newest 2 messages kept as they are" in done.stderr


def test_run_does_not_compact_by_default(tmp_path: Path, workspace: Path) -> None:
    turns = [
        _with_usage(tool_turn("read_file", {"path": "notes.txt"}), 10**6),
        _with_usage(text_turn("ok"), 10),
    ]
    with FakeOpenAI(turns) as server:
        done = run_cli(["run", *model_args(server, workspace), "read"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert len(server.requests) == 2 and "tools" in server.requests[1]


def test_chat_compacts_by_default(tmp_path: Path, workspace: Path) -> None:
    turns = [
        _with_usage(tool_turn("read_file", {"path": "notes.txt"}), DEFAULT_CHAT_COMPACT_AT),
        _with_usage(text_turn("summary"), 10),
        _with_usage(text_turn("done"), 10),
    ]
    with FakeOpenAI(turns) as server:
        done = run_cli(
            ["chat", *model_args(server, workspace)], tmp_path, input="read " + "x" * 200_000 + "\n"
        )
    assert done.returncode == 0, done.stderr
    assert len(server.requests) == 3 and "tools" not in server.requests[1]
    assert "context compacted" in done.stderr


def test_compact_at_zero_turns_it_off_for_chat(tmp_path: Path, workspace: Path) -> None:
    turns = [
        _with_usage(tool_turn("read_file", {"path": "notes.txt"}), 10**6),
        _with_usage(text_turn("done"), 10),
    ]
    with FakeOpenAI(turns) as server:
        done = run_cli(
            ["chat", "--compact-at", "0", *model_args(server, workspace)], tmp_path, input="read\n"
        )
    assert done.returncode == 0, done.stderr
    assert len(server.requests) == 2


def test_the_default_of_chat_follows_the_embedded_models_context() -> None:
    assert compact_at(None, chat=False, context_size=None, max_output_tokens=1024) is None
    assert compact_at(None, chat=True, context_size=None, max_output_tokens=1024) == DEFAULT_CHAT_COMPACT_AT
    assert compact_at(None, chat=True, context_size=4096, max_output_tokens=1024) == 4096 - 1024 - 512
    assert compact_at(None, chat=True, context_size=32768, max_output_tokens=1024) == 32768 * 3 // 4
    assert compact_at(5000, chat=False, context_size=None, max_output_tokens=1024) == 5000
    assert compact_at(0, chat=True, context_size=4096, max_output_tokens=1024) is None


def test_session_pop_drops_the_users_last_message_not_the_summary_after_it(tmp_path: Path) -> None:
    session = tmp_path / "s.jsonl"
    session.write_text(
        '{"role":"user","content":"one"}\n{"role":"assistant","content":"1"}\n'
        '{"role":"user","content":"two"}\n{"role":"user","content":"summary","summary_kept":1}\n'
        '{"role":"assistant","content":"2"}\n'
    )
    popped = run_cli(["session", "pop", str(session)], tmp_path)
    assert popped.returncode == 0, popped.stderr
    assert "removed 3 messages" in popped.stderr
    assert [m.content for m in load_session(session)] == ["one", "1"]
