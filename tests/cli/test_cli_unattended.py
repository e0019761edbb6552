"""Unattended runs from the command line: ``--allow-command`` / ``--deny-command`` decide
``run_command`` in every approval mode, ``--approve read-only`` runs the read-only command set,
and ``--sandbox workspace`` confines commands -- or exits 64 with one line where it cannot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from miniagent.process.sandbox import landlock_abi
from tests.cli_helpers import FakeOpenAI, json_lines, model_args, run_cli, text_turn, tool_turn


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "notes.txt").write_text("one\ntwo\n")
    (folder / "sub").mkdir()
    return folder


def _tool_results(stdout: str) -> list[dict[str, Any]]:
    return [line for line in json_lines(stdout) if line.get("role") == "tool"]


def _run_commands(
    tmp_path: Path,
    workspace: Path,
    commands: list[str],
    options: list[str],
    env: dict[str, str] | None = None,
) -> list[dict[str, Any]]:
    turns = [tool_turn("run_command", {"command": c}, f"call_{i}") for i, c in enumerate(commands)]
    with FakeOpenAI([*turns, text_turn("done")]) as server:
        done = run_cli(["run", "--json", *options, *model_args(server, workspace), "go"], tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    return _tool_results(done.stdout)


def test_read_only_runs_the_read_only_commands_and_refuses_the_rest(tmp_path: Path, workspace: Path) -> None:
    results = _run_commands(tmp_path, workspace, ["wc -l notes.txt", "rm notes.txt", "cat ../x"], [])
    assert results[0]["content"].startswith("2 notes.txt") and not results[0].get("is_error")
    assert (
        results[1].get("is_error")
        and "'rm notes.txt' is not among the allowed commands" in results[1]["content"]
    )
    assert "--allow-command" in results[1]["content"]  # the remedy names the option
    assert "resolves outside the workspace" in results[2]["content"]
    assert (workspace / "notes.txt").exists()


def test_allow_command_runs_its_commands_without_asking(tmp_path: Path, workspace: Path) -> None:
    options = ["--approve", "read-only", "--allow-command", "touch made.txt", "--allow-command", "mkdir *"]
    results = _run_commands(
        tmp_path, workspace, ["touch made.txt && mkdir -p a/b", "touch other.txt"], options
    )
    assert (
        not results[0].get("is_error")
        and (workspace / "made.txt").exists()
        and (workspace / "a" / "b").is_dir()
    )
    assert results[1].get("is_error") and not (workspace / "other.txt").exists()


def test_deny_command_holds_under_approve_all(tmp_path: Path, workspace: Path) -> None:
    options = ["--approve", "all", "--deny-command", "rm *"]
    results = _run_commands(
        tmp_path, workspace, ["echo x && rm -r sub", "sh -c 'rm -r sub'", "touch t"], options
    )
    assert all(r.get("is_error") and "denied by the command rules" in r["content"] for r in results[:2])
    assert (workspace / "sub").is_dir() and (workspace / "t").exists()


@pytest.mark.parametrize(
    ("option", "said"),
    [
        (["--allow-command", "a; b"], "--allow-command"),
        (["--deny-command", "X=1 rm"], "--deny-command"),
        (["--sandbox", "strict"], "--sandbox"),
    ],
)
def test_bad_rules_and_sandbox_names_are_usage_errors(
    tmp_path: Path, workspace: Path, option: list[str], said: str
) -> None:
    with FakeOpenAI([text_turn("never")]) as server:
        done = run_cli(["run", *option, *model_args(server, workspace), "go"], tmp_path)
        assert server.posts == 0
    assert done.returncode == 64
    assert done.stderr.count("\n") == 1 and said in done.stderr and done.stdout == ""


@pytest.mark.skipif(landlock_abi() < 4, reason="needs Landlock ABI 4 or later")
def test_sandbox_workspace_confines_the_commands(tmp_path: Path, workspace: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bashrc").write_text("# rc\n")
    commands = ["echo pwned >> ~/.bashrc; echo ok > inside.txt; cat inside.txt"]
    options = ["--approve", "all", "--sandbox", "workspace"]
    results = _run_commands(tmp_path, workspace, commands, options, env={"HOME": str(home)})
    assert "Permission denied" in results[0]["content"] and "ok" in results[0]["content"]
    assert (home / ".bashrc").read_text() == "# rc\n" and (workspace / "inside.txt").exists()


def test_sandbox_workspace_where_it_cannot_confine_exits_64_with_one_line(
    tmp_path: Path, workspace: Path
) -> None:
    (workspace / ".ssh").mkdir()  # the workspace holds HOME's secrets: the sandbox cannot hide them
    with FakeOpenAI([text_turn("never")]) as server:
        args = ["run", "--sandbox", "workspace", *model_args(server, workspace), "go"]
        done = run_cli(args, tmp_path, env={"HOME": str(workspace)})
        assert server.posts == 0
    assert done.returncode == 64, done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith(
        "miniagent: error: cannot confine commands here: "
    )
    assert "Traceback" not in done.stderr and done.stdout == ""
