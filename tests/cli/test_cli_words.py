"""Words a user can act on: each message names what to do, in the CLI's own terms."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from miniagent import Message, ModelRequest, ToolCall
from miniagent.testing import ScriptedClient
from tests.cli_helpers import FakeOpenAI, json_lines, model_args, run_cli, text_turn

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    return folder


def test_max_cost_for_an_unknown_model_says_so_and_how_to_give_its_prices(
    tmp_path: Path, workspace: Path
) -> None:
    with FakeOpenAI([text_turn("never")]) as server:
        done = run_cli(["run", "--max-cost", "0.5", *model_args(server, workspace), "hi"], tmp_path)
    assert done.returncode == 64
    assert "the price table does not know the model 'test'" in done.stderr  # it is installed here
    assert "install" not in done.stderr and "--prices INPUT,OUTPUT" in done.stderr


def test_prices_give_a_cost_and_let_max_cost_run(tmp_path: Path, workspace: Path) -> None:
    usage = {"prompt_tokens": 1_000_000, "completion_tokens": 500_000, "total_tokens": 1_500_000}
    turn = [*text_turn("done"), {"choices": [], "usage": usage}]
    with FakeOpenAI([turn]) as server:
        args = ["run", "--json", "--prices", "0.15,0.60", "--max-cost", "5", *model_args(server, workspace)]
        done = run_cli([*args, "hi"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert json_lines(done.stdout)[-1]["usage"]["cost_usd"] == pytest.approx(0.15 + 0.30)


@pytest.mark.parametrize("value", ["0.15", "a,b", "-1,2", "1,2,3,4,5", "inf,1"])
def test_bad_prices_are_a_usage_error(tmp_path: Path, value: str) -> None:
    done = run_cli(["run", "--prices", value, "hi"], tmp_path)
    assert done.returncode == 64
    assert "INPUT,OUTPUT" in done.stderr


def test_a_missing_key_names_the_variable_the_cli_reads(tmp_path: Path) -> None:
    env = {"OPENAI_API_KEY": ""}
    args = ["run", "--provider", "openai", "--base-url", "https://api.example.com/v1", "hi"]
    done = run_cli(args, tmp_path, env=env)
    assert done.returncode == 1
    assert "set OPENAI_API_KEY" in done.stderr and "MINIAGENT_API_KEY" in done.stderr


def test_context_max_chars_help_says_the_real_minimum(tmp_path: Path) -> None:
    done = run_cli(["run", "--help"], tmp_path, env={"COLUMNS": "200"})
    line = next(line for line in done.stdout.splitlines() if "--context-max-chars" in line)
    assert "x>=1" not in line
    assert re.search(r"at least\s+400", " ".join(done.stdout.split()))


def test_the_scripted_client_counts_its_turns_in_words() -> None:
    client = ScriptedClient([["hi"]])
    request = ModelRequest("s", [Message("user", "u")], (), None)
    list(client.stream(request))
    with pytest.raises(AssertionError, match=r"but only 1 turn is scripted$"):
        list(client.stream(request))
    two = ScriptedClient([[ToolCall("c", "t", {})], ["done"]])
    list(two.stream(request))
    list(two.stream(request))
    with pytest.raises(AssertionError, match=r"but only 2 turns are scripted$"):
        list(two.stream(request))


def test_files_the_command_writes_inside_the_workspace_are_named_on_stderr(
    tmp_path: Path, workspace: Path
) -> None:
    # Found by a new user: `... > run.jsonl` and a session in the project made the model's own
    # search answer "Which files mention TODO?" with the half-written output and session.
    import subprocess

    from tests.cli_helpers import cli_command, cli_env

    inside, outside = workspace / "out.jsonl", tmp_path / "out.jsonl"
    with FakeOpenAI([text_turn("ok"), text_turn("ok")]) as server:
        for target, session in ((inside, workspace / "s.jsonl"), (outside, tmp_path / "s.jsonl")):
            args = ["run", *model_args(server, workspace), "--session", str(session), "--json", "hi"]
            with target.open("w") as stdout:
                done = subprocess.run(
                    cli_command(args),
                    stdin=subprocess.DEVNULL,
                    stdout=stdout,
                    stderr=subprocess.PIPE,
                    text=True,
                    env=cli_env(tmp_path),
                    cwd=tmp_path,
                    timeout=60,
                    check=False,
                )
            assert done.returncode == 0, done.stderr
            notes = [line for line in done.stderr.splitlines() if "is inside the workspace" in line]
            if target == inside:
                seen = "is inside the workspace: the model's tools see it too"
                assert notes == [
                    f"miniagent: note: {workspace / 's.jsonl'} {seen}",
                    f"miniagent: note: {inside} {seen}",
                ]
            else:
                assert notes == []
    assert json_lines(inside.read_text())[-1]["stop_reason"] == "complete"
