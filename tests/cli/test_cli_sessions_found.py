"""Sessions you can find: the session log (``miniagent.cli.session_log``), ``session list``,
``session show`` and ``run --continue`` without ``--session``, through the real CLI in child
processes on real session files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from miniagent import load_session
from miniagent.cli.defaults import EXIT_DEFERRED, EXIT_OK, EXIT_USAGE
from tests.cli_helpers import FakeOpenAI, json_lines, model_args, run_cli, text_turn, tool_turn
from tests.defer_helpers import ReplyingModel, calls_turn, results_in

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "notes.txt").write_text("a note\n", encoding="utf-8")
    return folder


def _log(tmp_path: Path) -> list[dict[str, Any]]:
    return json_lines((tmp_path / "state" / "miniagent" / "sessions.jsonl").read_text(encoding="utf-8"))


def test_runs_on_a_session_are_listed_with_turns_stop_reason_and_cost(
    tmp_path: Path, workspace: Path
) -> None:
    session = tmp_path / "job.jsonl"
    turns = [tool_turn("read_file", {"path": "notes.txt"}), text_turn("It says a note."), text_turn("Again.")]
    with FakeOpenAI(turns) as server:
        args = [*model_args(server, workspace), "--prices", "1,2", "--session", str(session)]
        assert run_cli(["run", *args, "read notes"], tmp_path).returncode == EXIT_OK
        assert run_cli(["run", *args, "once more"], tmp_path).returncode == EXIT_OK
        assert run_cli(["run", *model_args(server, workspace), "no session"], tmp_path).returncode == 1
    log = _log(tmp_path)
    assert [entry["session"] for entry in log] == [str(session), str(session)]  # no line without a session
    assert [entry["turns"] for entry in log] == [2, 1] and log[0]["workspace"] == str(workspace)
    assert (tmp_path / "state" / "miniagent" / "sessions.jsonl").stat().st_mode & 0o777 == 0o600
    listed = run_cli(["session", "list", "--json"], tmp_path)
    assert listed.returncode == EXIT_OK, listed.stderr
    [row] = json_lines(listed.stdout)
    assert row["path"] == str(session) and row["turns"] == 3 and row["runs"] == 2
    assert row["stop_reason"] == "complete" and row["workspace"] == str(workspace)
    assert row["cost_usd"] is None or row["cost_usd"] >= 0
    text = run_cli(["session", "list"], tmp_path)
    assert text.returncode == EXIT_OK and str(session) in text.stdout and "3 turns" in text.stdout
    assert "complete" in text.stdout


def test_list_skips_lines_it_cannot_read_and_files_that_are_gone(tmp_path: Path) -> None:
    empty = run_cli(["session", "list"], tmp_path)
    assert empty.returncode == EXIT_OK and empty.stdout == "" and "no session recorded yet" in empty.stderr
    kept = tmp_path / "kept.jsonl"
    kept.write_text(json.dumps({"role": "user", "content": "hi"}) + "\n", encoding="utf-8")
    log = tmp_path / "state" / "miniagent" / "sessions.jsonl"
    log.parent.mkdir(parents=True)
    line = {"workspace": str(tmp_path), "at": 1.0, "stop_reason": "complete", "turns": 1, "cost_usd": 0.5}
    log.write_text(
        "not json\n"
        + json.dumps({**line, "session": str(tmp_path / "gone.jsonl")})
        + "\n"
        + json.dumps({**line, "session": str(kept)})
        + '\n{"session": "half',
        encoding="utf-8",
    )
    [row] = json_lines(run_cli(["session", "list", "--json"], tmp_path).stdout)
    assert row["path"] == str(kept) and row["cost_usd"] == 0.5 and row["when"] == "1970-01-01T00:00:01Z"


def _ask_then_answer(body: dict[str, Any]) -> list[dict[str, Any]]:
    calls = [("call_w", "write_file", {"path": "out.txt", "content": "done"})]
    return calls_turn(calls) if results_in(body) == 0 else text_turn("Wrote it.")


def test_continue_without_session_takes_the_latest_session_of_the_workspace(
    tmp_path: Path, workspace: Path
) -> None:
    other = tmp_path / "other-ws"
    other.mkdir()
    older, newer, elsewhere = tmp_path / "older.jsonl", tmp_path / "newer.jsonl", tmp_path / "elsewhere.jsonl"
    with ReplyingModel(_ask_then_answer) as server:
        model = ["--provider", "openai", "--base-url", server.base_url, "--model", "test"]
        here = [*model, "--workspace", str(workspace), "--approve", "defer"]
        assert run_cli(["run", *here, "--session", str(older), "write"], tmp_path).returncode == EXIT_DEFERRED
        assert run_cli(["run", *here, "--session", str(newer), "write"], tmp_path).returncode == EXIT_DEFERRED
        there = [*model, "--workspace", str(other), "--approve", "defer", "--session", str(elsewhere)]
        assert run_cli(["run", *there, "write"], tmp_path).returncode == EXIT_DEFERRED
        newest_here = run_cli(["session", "list", "--json"], tmp_path)
        assert [row["path"] for row in json_lines(newest_here.stdout)] == [
            str(elsewhere),
            str(newer),
            str(older),
        ]
        pending = load_session(newer)
        approve = run_cli(["session", "approve", str(newer), "call_w"], tmp_path)
        assert approve.returncode == EXIT_OK, approve.stderr
        went_on = run_cli(["run", "--continue", *model, "--workspace", str(workspace)], tmp_path)
        assert went_on.returncode == EXIT_OK, went_on.stderr
        assert f"miniagent: continuing {newer}" in went_on.stderr
        assert (workspace / "out.txt").read_text(encoding="utf-8") == "done"
    assert len(load_session(newer)) > len(pending)
    assert load_session(older)[-1].state == "pending"  # the older session was left alone
    assert _log(tmp_path)[-1]["session"] == str(newer) and _log(tmp_path)[-1]["stop_reason"] == "complete"


def test_continue_without_a_known_session_is_a_usage_error(tmp_path: Path, workspace: Path) -> None:
    result = run_cli(["run", "--continue", "--workspace", str(workspace)], tmp_path)
    assert result.returncode == EXIT_USAGE
    assert f"no session of {workspace} is known" in result.stderr and "give --session PATH" in result.stderr


def test_chat_sessions_are_logged_too(tmp_path: Path, workspace: Path) -> None:
    with FakeOpenAI([text_turn("Hello.")]) as server:
        chat = run_cli(["chat", *model_args(server, workspace)], tmp_path, input="hi\n")
    assert chat.returncode == EXIT_OK, chat.stderr
    [row] = json_lines(run_cli(["session", "list", "--json"], tmp_path).stdout)
    assert Path(row["path"]).parent == tmp_path / "state" / "miniagent" / "sessions"
    assert row["turns"] == 1 and row["stop_reason"] == "complete"


def test_session_show_as_text_and_json(tmp_path: Path, workspace: Path) -> None:
    session = tmp_path / "job.jsonl"
    turns = [tool_turn("read_file", {"path": "notes.txt"}), text_turn("It says\x1b[2J a note.")]
    with FakeOpenAI(turns) as server:
        args = [*model_args(server, workspace), "--session", str(session), "read notes"]
        assert run_cli(["run", *args], tmp_path).returncode == EXIT_OK
    shown = run_cli(["session", "show", str(session)], tmp_path)
    assert shown.returncode == EXIT_OK, shown.stderr
    assert "[1] user\n    read notes\n[2] assistant\n    -> call_1: read_file(path=" in shown.stdout
    assert "[3] tool result of call_1" in shown.stdout and "a note" in shown.stdout
    assert "\x1b" not in shown.stdout and "\\x1b[2J" in shown.stdout
    as_json = run_cli(["session", "show", "--json", str(session)], tmp_path)
    lines = json_lines(as_json.stdout)
    assert [line["role"] for line in lines] == ["user", "assistant", "tool", "assistant"]
    assert lines == [message.to_json() for message in load_session(session)]
    corrupt = tmp_path / "bad.jsonl"
    corrupt.write_text("{not json\n", encoding="utf-8")
    before = corrupt.read_bytes()
    refused = run_cli(["session", "show", str(corrupt)], tmp_path)
    assert (
        refused.returncode == 1 and "miniagent: error:" in refused.stderr and corrupt.read_bytes() == before
    )
    missing = run_cli(["session", "show", str(tmp_path / "none.jsonl")], tmp_path)
    assert missing.returncode == EXIT_USAGE


def test_the_log_is_bounded_and_both_halves_are_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from miniagent.agent import RunResult
    from miniagent.cli import session_log

    monkeypatch.setattr(session_log, "LOG_MAX_BYTES", 600)
    environ = {"XDG_STATE_HOME": str(tmp_path / "state")}
    sessions = [tmp_path / f"s{number}.jsonl" for number in range(12)]
    for session in sessions:
        session.write_text("", encoding="utf-8")
        session_log.record_run(session, tmp_path, RunResult([], "complete"), environ=environ)
    log = session_log.log_path(environ)
    older = log.with_name("sessions.jsonl.1")
    line = len(log.read_bytes().splitlines()[-1]) + 1
    assert older.is_file() and log.stat().st_size < 600 + line and older.stat().st_size >= 600
    listed = [known.path for known in session_log.known_sessions(environ)]
    assert (
        listed[0] == sessions[-1]
        and len(listed) >= 4
        and listed == sorted(listed, key=sessions.index, reverse=True)
    )
    assert session_log.latest_session(tmp_path, environ) == sessions[-1]
