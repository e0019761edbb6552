"""The CLI on a real pseudo-terminal: what a person sees is what would run (issue "Secrets and
confinement" kinds 5 and 6, issue "The first hour" item 5).

- The approval prompt shows the whole call, wrapped, with control and bidi characters escaped
  visibly; the call is printed once (the prompt), not also as a progress line.
- Escape sequences in the model's text (OSC 52 clipboard, title, clear screen) are neutralised
  on a terminal; ``--json`` and piped output keep the exact text.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_helpers import (
    FakeOpenAI,
    json_lines,
    model_args,
    on_a_terminal,
    run_cli,
    text_turn,
    tool_turn,
)

pytestmark = pytest.mark.timeout(60)

HOSTILE = "Done \x1b]52;c;cm0gLXJmIH4=\x07\x1b]0;owned\x07\x1b[2J\x9b31m\rend"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder


def test_the_approval_prompt_shows_the_whole_command_once(tmp_path: Path, workspace: Path) -> None:
    command = "ls -la" + " " * 70 + "; echo PWNED > f \u202e"
    turns = [tool_turn("run_command", {"command": command}), text_turn("Listed.")]
    with FakeOpenAI(turns) as server:
        args = ["run", "--approve", "ask", *model_args(server, workspace), "list"]
        screen = on_a_terminal(args, tmp_path, [(b"[a]lways run_command: ", b"n\n")], b"Listed.")
    prompt = screen[screen.index("tool call:") : screen.index("approve?")]
    assert "; echo PWNED > f" in prompt  # wrapped into view, not cut at 60 characters
    assert "\\u202e" in prompt and "\u202e" not in screen  # the bidi override is shown, not obeyed
    assert screen.count("run_command(") == 1  # once: the prompt, no second progress line
    assert not (workspace / "f").exists()


def test_model_escapes_are_neutralisedon_a_terminal(tmp_path: Path, workspace: Path) -> None:
    with FakeOpenAI([text_turn(HOSTILE)]) as server:
        screen = on_a_terminal(["run", *model_args(server, workspace), "hi"], tmp_path, [], b"end")
    assert "\x1b]" not in screen and "\x1b[2J" not in screen and "\x9b" not in screen and "\x07" not in screen
    assert "\\x1b]52;c;cm0gLXJmIH4=\\x07" in screen and "\\x9b31m\\x0dend" in screen


def test_json_and_piped_output_keep_the_exact_text(tmp_path: Path, workspace: Path) -> None:
    with FakeOpenAI([text_turn(HOSTILE), text_turn(HOSTILE)]) as server:
        piped = run_cli(["run", *model_args(server, workspace), "hi"], tmp_path)
        as_json = run_cli(["run", "--json", *model_args(server, workspace), "hi"], tmp_path)
    assert piped.returncode == 0 and as_json.returncode == 0
    assert piped.stdout == HOSTILE.replace("\r", "\n") + "\n"  # text mode reads \r as a newline
    assert json_lines(as_json.stdout)[-2]["content"] == HOSTILE
    assert json.loads(as_json.stdout.splitlines()[-2])["role"] == "assistant"


def test_a_surrogate_pair_split_across_deltas_is_shown_joinedon_a_terminal(
    tmp_path: Path, workspace: Path
) -> None:
    with FakeOpenAI([text_turn("ab\ud83d\ude00cd", pieces=2)]) as server:
        screen = on_a_terminal(["run", *model_args(server, workspace), "hi"], tmp_path, [], b"cd")
    assert "ab\U0001f600cd" in screen and "\ufffd" not in screen
