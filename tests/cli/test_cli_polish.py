"""Found by a new user trying ``main``: the help, the exit-code rule, and one-line forms."""

from __future__ import annotations

from pathlib import Path

from miniagent import Message, ToolCall
from miniagent.session import JSONLSession
from tests.cli_helpers import FakeOpenAI, model_args, run_cli, text_turn


def test_miniagent_alone_prints_the_usual_help_on_stderr_and_exits_64(tmp_path: Path) -> None:
    # It printed the whole help flattened onto one "error:" line.
    done = run_cli([], tmp_path)
    assert done.returncode == 64 and done.stdout == ""
    lines = done.stderr.splitlines()
    assert lines[0].startswith("Usage: miniagent ") and "error:" not in done.stderr
    assert any(line.strip().startswith("run ") for line in lines) and len(lines) > 10


def test_the_help_lists_every_exit_code(tmp_path: Path) -> None:
    done = run_cli(["--help"], tmp_path)
    assert done.returncode == 0
    text = " ".join(done.stdout.split())
    codes = ("0 complete", "2 max turns", "3 budget", "1 error", "64 usage", "124 ", "130 ", "143 ", "129 ")
    for code in (*codes, "141 "):
        assert code in text, code


def test_session_errors_are_runtime_errors_exit_1_as_documented(tmp_path: Path) -> None:
    # One rule (docs, the command line's exit codes): 64 for a wrong command line, 1 for a run-time failure.
    reference = Path(__file__).resolve().parents[2] / "docs" / "src" / "reference" / "cli.md"
    documented = " ".join(reference.read_text(encoding="utf-8").split())
    assert "locked by another run" in documented and "the session, its lock" not in documented
    session = tmp_path / "s.jsonl"
    with FakeOpenAI([]) as server, JSONLSession(session) as holder:
        holder.append(Message("user", "hi"))
        locked = run_cli(["run", "--session", str(session), *model_args(server, tmp_path), "x"], tmp_path)
    assert locked.returncode == 1 and "miniagent: error: session" in locked.stderr, locked.stderr
    missing = run_cli(["session", "pop", str(tmp_path / "none.jsonl")], tmp_path)
    assert missing.returncode == 1 and missing.stderr.startswith("miniagent: error: "), missing.stderr


def test_a_dangling_call_of_a_resumed_session_is_shown_with_its_tool_name(tmp_path: Path) -> None:
    # It printed "<- ? error (41 chars): ...".
    session = tmp_path / "s.jsonl"
    with JSONLSession(session) as store:
        store.append(Message("user", "read it"))
        call = ToolCall("call_9", "read_file", {"path": "notes.txt"})
        store.append(Message("assistant", "", tool_calls=(call,)))
    with FakeOpenAI([text_turn("done")]) as server:
        args = ["run", "--session", str(session), *model_args(server, tmp_path), "go on"]
        done = run_cli(args, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "<- read_file error" in done.stderr and "<- ?" not in done.stderr


def test_an_unknown_chat_command_is_flagged_not_sent(tmp_path: Path) -> None:
    with FakeOpenAI([text_turn("slash answer")]) as server:
        lines = "/foo\n/foo bar\n//foo is a path\n/exit\n"
        done = run_cli(["chat", *model_args(server, tmp_path)], tmp_path, input=lines)
        assert server.posts == 1  # only the // line
        assert server.requests[0]["messages"][-1]["content"] == "/foo is a path"
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("unknown command /foo") == 2 and "/help" in done.stderr
