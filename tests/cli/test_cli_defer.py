"""Unattended runs from the command line (DESIGN.md "Unattended runs"): ``--approve defer`` stops
before the first call that needs a decision (exit 4), ``session pending/approve/deny`` decide,
``run --continue`` runs exactly the approved calls once and goes on without a prompt;
``--max-repeats`` stops a run that goes round in circles (exit 5)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from miniagent import load_session
from miniagent.cli import run_cli as run_cli_in_process
from miniagent.cli.defaults import EXIT_DEFERRED, EXIT_NO_PROGRESS, EXIT_OK, EXIT_USAGE
from miniagent.pending import pending_calls
from tests.cli_helpers import json_lines, run_cli, text_turn
from tests.defer_helpers import ReplyingModel, calls_turn, results_in

pytestmark = pytest.mark.timeout(120)

CALLS = [
    ("call_ls", "list_dir", {"path": "."}),
    ("call_run", "run_command", {"command": "echo ran >> effects.txt"}),
    ("call_write", "write_file", {"path": "notes.txt", "content": "hello"}),
]


def _answer(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Ask for the three calls; once they are answered, say what happened."""
    return calls_turn(CALLS) if results_in(body) == 0 else text_turn("Done: the command ran.")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder


def _model(server: ReplyingModel, workspace: Path) -> list[str]:
    return [
        "--provider",
        "openai",
        "--base-url",
        server.base_url,
        "--model",
        "test",
        "--workspace",
        str(workspace),
    ]


def test_defer_approve_deny_continue_runs_exactly_the_approved_call_once(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session = tmp_path / "job.jsonl"
    with ReplyingModel(_answer) as server:
        first = run_cli(
            [
                "run",
                "--approve",
                "defer",
                "--session",
                str(session),
                "--json",
                *_model(server, workspace),
                "tidy up",
            ],
            tmp_path,
        )
        assert first.returncode == EXIT_DEFERRED, first.stderr
        final = json_lines(first.stdout)[-1]
        assert final["stop_reason"] == "deferred" and final["exit_code"] == EXIT_DEFERRED
        assert final["pending"] == [{"id": i, "name": n, "input": a} for i, n, a in CALLS[1:]]
        assert not (workspace / "effects.txt").exists() and not (workspace / "notes.txt").exists()
        before = session.read_bytes()
        waiting = run_cli(
            ["run", "--session", str(session), "--continue", *_model(server, workspace)], tmp_path
        )
        assert waiting.returncode == EXIT_DEFERRED, waiting.stderr  # undecided: the default is defer
        assert "2 tool calls wait for a decision" in waiting.stderr and "--continue" in waiting.stderr
        assert session.read_bytes() == before and len(server.bodies) == 1

        assert run_cli_in_process(["session", "pending", str(session)]) == EXIT_OK
        listed = capsys.readouterr().out
        assert "call_run (undecided" in listed and "run_command(command=" in listed
        assert run_cli_in_process(["session", "approve", str(session), "call_run"]) == EXIT_OK
        assert (
            run_cli_in_process(["session", "deny", str(session), "call_write", "--reason", "not now"])
            == EXIT_OK
        )
        assert run_cli_in_process(["session", "approve", str(session), "call_ls"]) == EXIT_USAGE  # it ran
        # Found by a new user: a second decision replaced the first without a word.
        assert run_cli_in_process(["session", "approve", str(session), "call_write"]) == EXIT_OK
        assert "call_write approved (it was denied: the last decision counts)" in capsys.readouterr().err
        assert (
            run_cli_in_process(["session", "deny", str(session), "call_write", "--reason", "not now"])
            == EXIT_OK
        )
        assert "(it was approved: the last decision counts)" in capsys.readouterr().err
        assert run_cli_in_process(["session", "pending", "--json", str(session)]) == EXIT_OK
        decided = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        assert [(d["id"], d["decision"], d["reason"]) for d in decided] == [
            ("call_run", "approved", ""),
            ("call_write", "denied", "not now"),
        ]

        later = run_cli(
            ["run", "--session", str(session), "--continue", "--json", *_model(server, workspace)], tmp_path
        )
        assert later.returncode == EXIT_OK, later.stderr
        assert (workspace / "effects.txt").read_text() == "ran\n"  # once
        assert not (workspace / "notes.txt").exists()  # the denied call never ran
        assert len(server.bodies) == 2
        sent = server.bodies[-1]["messages"]
        assert [m["role"] for m in sent if m["role"] == "user"] == ["user"]  # no new prompt
        refusal = next(m for m in sent if m.get("tool_call_id") == "call_write")
        assert refusal["content"] == "refused by the user: not now"

        again = run_cli(
            ["run", "--session", str(session), "--continue", *_model(server, workspace)], tmp_path
        )
        assert again.returncode == EXIT_USAGE and "nothing to continue" in again.stderr
    assert pending_calls(load_session(session)) == ()
    assert (workspace / "effects.txt").read_text() == "ran\n"


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["run", "--continue", "hi"], "either PROMPT or --continue"),
        (["run", "--continue"], "give --session PATH"),
        (["run", "--approve", "defer", "hi"], "--approve defer keeps the waiting calls in a session"),
        (["run"], "missing PROMPT"),
        (["chat", "--approve", "defer"], "--approve defer is for miniagent run"),
        (["run", "--max-repeats", "1", "hi"], "use 0 (never) or at least 2"),
    ],
)
def test_usage_errors(argv: list[str], expected: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli_in_process(argv) == EXIT_USAGE
    captured = capsys.readouterr()
    assert expected in captured.err and captured.out == ""


def test_session_commands_report_missing_files_and_unknown_calls(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_cli_in_process(["session", "pending", str(tmp_path / "none.jsonl")]) == 1
    session = tmp_path / "s.jsonl"
    session.write_text('{"role":"user","content":"hi"}\n')
    assert run_cli_in_process(["session", "pending", str(session)]) == EXIT_OK
    captured = capsys.readouterr()
    assert captured.out == "" and "no call" in captured.err
    assert run_cli_in_process(["session", "deny", str(session), "call_x"]) == EXIT_USAGE
    assert "'call_x' is not a pending call" in capsys.readouterr().err


def test_the_same_call_with_the_same_result_stops_the_run_no_progress(
    tmp_path: Path, workspace: Path
) -> None:
    def answer(body: dict[str, Any]) -> list[dict[str, Any]]:
        return calls_turn([(f"call_{results_in(body)}", "list_dir", {"path": "."})])

    with ReplyingModel(answer) as server:
        stuck = run_cli(
            ["run", "--approve", "read-only", "--json", *_model(server, workspace), "look"], tmp_path
        )
        assert stuck.returncode == EXIT_NO_PROGRESS, stuck.stderr
        assert json_lines(stuck.stdout)[-1]["stop_reason"] == "no_progress"
        assert len(server.bodies) == 3  # the default --max-repeats 3: no fourth request
        off = run_cli(
            [
                "run",
                "--approve",
                "read-only",
                "--max-repeats",
                "0",
                "--max-turns",
                "4",
                *_model(server, workspace),
                "look",
            ],
            tmp_path,
        )
        assert off.returncode == 2, off.stderr  # max_turns
