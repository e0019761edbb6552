"""Approval policies, the terminal prompt through injected streams and a real pseudo-terminal."""

from __future__ import annotations

import io
import os
import select
import time
from pathlib import Path

import pytest

from miniagent import Approval, Message, Tool, ToolCall, run_agent
from miniagent.approval import (
    APPROVAL_MODES,
    TerminalApproval,
    allow_tools,
    approve_all,
    ask_on_terminal,
    describe_call,
    policy_for,
    read_only,
)
from miniagent.testing import ScriptedClient
from miniagent.toolbox import default_tools

WRITE = ToolCall("c1", "write_file", {"path": "a.txt", "content": "hello"})
READ = ToolCall("c2", "read_file", {"path": "a.txt"})
RUN = ToolCall("c3", "run_command", {"command": "ls"})


@pytest.fixture
def tools(tmp_path: Path) -> list[Tool]:
    return default_tools(tmp_path)


def test_approve_all() -> None:
    assert approve_all(WRITE) == Approval(True)


def test_read_only_policy(tools: list[Tool]) -> None:
    policy = read_only(tools)
    assert policy(READ) == Approval(True)
    assert policy(ToolCall("x", "grep", {"pattern": "a"})).approved
    assert policy(ToolCall("x", "list_dir", {})).approved
    refused = policy(WRITE)
    assert not refused.approved
    assert refused.reason.startswith("refused: write_file ")
    assert "read-only approval" in refused.reason
    assert "--" not in refused.reason  # a library text names no CLI option
    assert refused.reason.endswith("or ask the user to allow tools that change files.")
    remedied = read_only(tools, remedy="ask the user to re-run with --approve all")(WRITE)
    assert remedied.reason.endswith("or ask the user to re-run with --approve all.")
    assert not policy(RUN).approved
    assert not policy(ToolCall("x", "edit_file", {})).approved
    assert policy(ToolCall("x", "no_such_tool", {})) == Approval(True)


def test_allow_tools() -> None:
    asked: list[str] = []

    def otherwise(call: ToolCall) -> Approval:
        asked.append(call.name)
        return Approval(False, "no")

    policy = allow_tools(["read_file", "grep"], otherwise)
    assert policy(READ) == Approval(True)
    assert policy(WRITE) == Approval(False, "no")
    assert asked == ["write_file"]


def test_describe_call_is_one_short_line() -> None:
    call = ToolCall("c", "write_file", {"path": "a.txt", "content": "x" * 500 + "\n\x1b[31m"})
    line = describe_call(call)
    assert "\n" not in line and "\x1b" not in line
    assert line.startswith('write_file(path="a.txt", content="xxx')
    assert line.endswith("…)")
    assert len(line) < 120
    long_keys = ToolCall("c", "t", {f"k{i}": i for i in range(100)})
    assert len(describe_call(long_keys)) == 200


def ask(answers: str, call: ToolCall = WRITE) -> tuple[Approval, str]:
    out = io.StringIO()
    policy = TerminalApproval(input=io.StringIO(answers), output=out)
    return policy(call), out.getvalue()


def test_terminal_yes_no_reason_eof() -> None:
    approval, shown = ask("y\n")
    assert approval == Approval(True)
    assert 'write_file(path="a.txt", content="hello")' in shown
    assert "[y]es / [n]o" in shown
    assert ask("yes\n")[0] == Approval(True)
    assert ask("n\n")[0] == Approval(False, "refused by the user")
    assert ask("n too risky, use a branch\n")[0] == Approval(
        False, "refused by the user: too risky, use a branch"
    )
    assert ask("No, not now\n")[0] == Approval(False, "refused by the user: not now")
    assert ask("")[0] == Approval(False, "refused: no answer (end of input)")


def test_terminal_reasks_on_unclear_answers() -> None:
    approval, shown = ask("\nmaybe\ny\n")
    assert approval == Approval(True)
    assert shown.count("approve?") == 3
    assert ask("what\n")[0].approved is False  # then EOF


def test_terminal_always_is_remembered_per_tool() -> None:
    out = io.StringIO()
    policy = ask_on_terminal(input=io.StringIO("a\nn\n"), output=out)
    assert policy(WRITE) == Approval(True)
    assert policy(WRITE) == Approval(True)  # not asked again
    assert out.getvalue().count("approve?") == 1
    assert policy(RUN) == Approval(False, "refused by the user")  # other tools still asked
    assert out.getvalue().count("approve?") == 2


def test_terminal_auto_approves_read_only_tools_when_given(tools: list[Tool]) -> None:
    out = io.StringIO()
    policy = ask_on_terminal(tools, input=io.StringIO(""), output=out)
    assert policy(READ) == Approval(True)
    assert out.getvalue() == ""
    assert policy(WRITE).approved is False  # EOF: no


def test_terminal_defaults_to_stdin_and_stderr(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("y\n"))
    assert ask_on_terminal()(WRITE) == Approval(True)
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "write_file" in captured.err


def _read_available(fd: int, until: bytes, within: float = 5.0) -> bytes:
    data = b""
    deadline = time.monotonic() + within
    while until not in data and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.05)
        if ready:
            data += os.read(fd, 4096)
    return data


def test_terminal_through_a_real_pseudo_terminal() -> None:
    master, slave = os.openpty()
    try:
        with (
            open(slave, encoding="utf-8", closefd=False) as tty_in,
            open(slave, "w", encoding="utf-8", closefd=False) as tty_out,
        ):
            assert tty_in.isatty()
            policy = ask_on_terminal(input=tty_in, output=tty_out)
            os.write(master, b"n not in prod\n")  # typed ahead; the line discipline holds it
            assert policy(RUN) == Approval(False, "refused by the user: not in prod")
            screen = _read_available(master, b"[a]lways run_command: ")
            assert b'run_command(command="ls")' in screen
            os.write(master, b"a\n")
            assert policy(WRITE) == Approval(True)
            assert policy(WRITE) == Approval(True)
            screen = _read_available(master, b"[a]lways write_file: ")
            assert screen.count(b"approve?") == 1
    finally:
        os.close(master)
        os.close(slave)


def test_read_only_policy_in_a_run(tmp_path: Path) -> None:
    tools = default_tools(tmp_path)
    client = ScriptedClient(
        [
            [WRITE, READ],
            ["I would write hello to a.txt."],
        ]
    )
    result = run_agent(
        client=client,
        system="",
        tools=tools,
        user="go",
        max_turns=3,
        before_tool_call=read_only(tools),
    )
    assert result.stop_reason == "complete"
    answers = [m for m in result.messages if m.role == "tool"]
    assert answers[0].is_error and "read-only approval" in answers[0].content
    assert answers[1] == Message("tool", "file not found: a.txt", tool_call_id="c2", is_error=True)
    assert not (tmp_path / "a.txt").exists()


# --- policies by mode name (policy_for) ---------------------------------------------------------


def test_policy_for_all_approves_every_call_without_asking(tools: list[Tool]) -> None:
    policy = policy_for("all", tools)
    for call in (WRITE, READ, RUN, ToolCall("c4", "no_such_tool", {})):
        assert not policy.will_ask(call)
        assert policy(call) == Approval(True)


def test_policy_for_read_only_refuses_changing_tools_with_the_reason_given(tools: list[Tool]) -> None:
    policy = policy_for("read-only", tools, why="read-only tools were chosen")
    assert not policy.will_ask(WRITE) and not policy.will_ask(READ)
    assert policy(READ) == Approval(True)
    refused = policy(RUN)
    assert not refused.approved
    assert "run_command may change files or run commands and read-only tools were chosen" in refused.reason
    default = policy_for("read-only", tools)(WRITE)
    assert "and this run is non-interactive (read-only approval)" in default.reason


def test_policy_for_ask_asks_a_person_only_about_changing_tools(tools: list[Tool]) -> None:
    policy = policy_for("ask", tools)
    assert isinstance(policy, TerminalApproval)
    assert policy.will_ask(WRITE) and policy.will_ask(RUN)
    assert not policy.will_ask(READ)
    assert policy(READ) == Approval(True)  # answered without reading a line


def test_policy_for_knows_exactly_the_approval_modes(tools: list[Tool]) -> None:
    assert APPROVAL_MODES == ("ask", "read-only", "all", "defer")
    for mode in APPROVAL_MODES:
        assert callable(policy_for(mode, tools))
    known = r"unknown approval mode 'maybe' \(choose from ask, read-only, all, defer"
    with pytest.raises(ValueError, match=known):
        policy_for("maybe", tools)


def test_policy_for_copies_the_tools_once(tools: list[Tool]) -> None:
    policy = policy_for("read-only", iter(tools))  # an iterator is read once, not per call
    assert not policy(WRITE).approved
    assert not policy(WRITE).approved
