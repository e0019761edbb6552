"""Standard input as context (``miniagent.cli.stdin_context``): a piped or redirected standard
input is attached to PROMPT as a bounded ``<stdin>`` block; ``-`` still reads the prompt; a
terminal-less stdin that is ``/dev/null``, empty, or never closed attaches nothing and never
hangs; binary input is refused (exit 64). Real child processes, real pipes and files."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from miniagent.cli.defaults import EXIT_OK, EXIT_USAGE
from tests.cli_helpers import FakeOpenAI, cli_command, cli_env, model_args, run_cli, text_turn

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder


def _user_text(server: FakeOpenAI, index: int = 0) -> str:
    users = [m for m in server.requests[index]["messages"] if m["role"] == "user"]
    content = users[-1]["content"]
    return content if isinstance(content, str) else "".join(part["text"] for part in content)


def test_piped_text_is_attached_to_the_prompt(tmp_path: Path, workspace: Path) -> None:
    with FakeOpenAI([text_turn("Looks fine.")]) as server:
        result = run_cli(
            ["run", *model_args(server, workspace), "review this"], tmp_path, input="+added\r\n-removed\n"
        )
    assert result.returncode == EXIT_OK, result.stderr
    assert _user_text(server) == "review this\n\n<stdin>\n+added\n-removed\n</stdin>"


def test_dash_still_means_the_prompt_is_stdin(tmp_path: Path, workspace: Path) -> None:
    with FakeOpenAI([text_turn("ok")]) as server:
        result = run_cli(["run", *model_args(server, workspace), "-"], tmp_path, input="the whole prompt\n")
    assert result.returncode == EXIT_OK, result.stderr
    assert _user_text(server) == "the whole prompt"


@pytest.mark.parametrize("stdin", ["devnull", "empty", "blank"])
def test_dev_null_or_empty_stdin_attaches_nothing(tmp_path: Path, workspace: Path, stdin: str) -> None:
    with FakeOpenAI([text_turn("ok")]) as server:
        given = {"devnull": None, "empty": "", "blank": "\n  \n"}[stdin]
        result = run_cli(["run", *model_args(server, workspace), "hello"], tmp_path, input=given)
    assert result.returncode == EXIT_OK, result.stderr
    assert _user_text(server) == "hello" and "stdin" not in result.stderr


def test_long_input_is_cut_with_a_note(tmp_path: Path, workspace: Path) -> None:
    with FakeOpenAI([text_turn("ok")]) as server:
        args = ["run", *model_args(server, workspace), "--stdin-max-chars", "10", "summarise"]
        result = run_cli(args, tmp_path, input="0123456789abcdefghij" * 1000)
    assert result.returncode == EXIT_OK, result.stderr
    text = _user_text(server)
    assert text.startswith("summarise\n\n<stdin>\n0123456789\n[cut: only the first 10 characters")
    assert "abc" not in text and text.endswith("</stdin>")


def test_a_regular_file_on_stdin_is_attached(tmp_path: Path, workspace: Path) -> None:
    log = tmp_path / "build.log"
    log.write_text("error: it broke\n", encoding="utf-8")
    with FakeOpenAI([text_turn("ok")]) as server, log.open("rb") as stdin:
        result = subprocess.run(
            cli_command(["run", *model_args(server, workspace), "why?"]),
            stdin=stdin,
            capture_output=True,
            env=cli_env(tmp_path),
            cwd=tmp_path,
            timeout=60,
        )
    assert result.returncode == EXIT_OK, result.stderr
    assert _user_text(server) == "why?\n\n<stdin>\nerror: it broke\n</stdin>"


@pytest.mark.parametrize("data", [b"PK\x03\x04\x00\x00binary", b"caf\xe9 latin-1", b"cut in a char \xe2\x82"])
def test_binary_input_is_refused_before_any_request(tmp_path: Path, workspace: Path, data: bytes) -> None:
    with FakeOpenAI([text_turn("ok")]) as server:
        result = subprocess.run(
            cli_command(["run", *model_args(server, workspace), "look"]),
            input=data,
            capture_output=True,
            env=cli_env(tmp_path),
            cwd=tmp_path,
            timeout=60,
        )
    assert result.returncode == EXIT_USAGE
    assert b"not text: refused as context" in result.stderr and result.stdout == b""
    assert server.posts == 0


def test_a_stdin_that_never_closes_does_not_hang_the_run(tmp_path: Path, workspace: Path) -> None:
    with FakeOpenAI([text_turn("first"), text_turn("second")]) as server:
        args = ["run", *model_args(server, workspace), "--stdin-wait", "0.3", "go"]
        silent = subprocess.Popen(
            cli_command(args),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=cli_env(tmp_path),
            cwd=tmp_path,
        )
        assert silent.stdin is not None
        try:
            silent.wait(timeout=60)  # stdin stays open the whole time (communicate would close it)
            err = silent.stderr.read() if silent.stderr else b""
        finally:
            silent.kill()
            silent.stdin.close()
        assert silent.returncode == EXIT_OK, err
        assert b"standard input sent nothing for 0.3 s (--stdin-wait): nothing attached" in err
        assert _user_text(server, 0) == "go"
        partial = subprocess.Popen(
            cli_command(args),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=cli_env(tmp_path),
            cwd=tmp_path,
        )
        assert partial.stdin is not None
        partial.stdin.write(b"line one\n")
        partial.stdin.flush()
        try:
            partial.wait(timeout=60)  # the request left and the run ended while stdin was still open
            err = partial.stderr.read() if partial.stderr else b""
        finally:
            partial.kill()
            partial.stdin.close()
    assert partial.returncode == EXIT_OK, err
    text = _user_text(server, 1)
    assert text.startswith("go\n\n<stdin>\nline one\n[standard input sent nothing for 0.3 s")


def test_stdin_is_left_to_the_approval_prompt_and_to_max_chars_zero(tmp_path: Path, workspace: Path) -> None:
    with FakeOpenAI([text_turn("ok"), text_turn("ok")]) as server:
        asked = run_cli(
            ["run", *model_args(server, workspace), "--approve", "ask", "hi"], tmp_path, input="y\n"
        )
        never = run_cli(
            ["run", *model_args(server, workspace), "--stdin-max-chars", "0", "hi"], tmp_path, input="x\n"
        )
    assert asked.returncode == EXIT_OK and never.returncode == EXIT_OK
    assert _user_text(server, 0) == "hi" and _user_text(server, 1) == "hi"


def test_the_stdin_options_have_configuration_keys(tmp_path: Path, workspace: Path) -> None:
    (tmp_path / "miniagent.toml").write_text("stdin-max-chars = 3\n", encoding="utf-8")
    with FakeOpenAI([text_turn("ok")]) as server:
        result = run_cli(["run", *model_args(server, workspace), "hi"], tmp_path, input="abcdef\n")
    assert result.returncode == EXIT_OK, result.stderr
    assert _user_text(server).startswith("hi\n\n<stdin>\nabc\n[cut")


def test_the_cap_counts_characters_and_a_character_split_between_reads_is_whole(
    tmp_path: Path, workspace: Path
) -> None:
    text = "a" * 65535 + "€" + "é" * 5  # the euro sign's 3 bytes straddle the first 64 KiB read
    with FakeOpenAI([text_turn("ok"), text_turn("ok")]) as server:
        whole = run_cli(["run", *model_args(server, workspace), "count"], tmp_path, input=text)
        cut = run_cli(
            ["run", *model_args(server, workspace), "--stdin-max-chars", "65538", "count"],
            tmp_path,
            input=text,
        )
    assert whole.returncode == EXIT_OK and cut.returncode == EXIT_OK, whole.stderr + cut.stderr
    assert _user_text(server, 0) == f"count\n\n<stdin>\n{text}\n</stdin>"
    assert _user_text(server, 1).startswith(f"count\n\n<stdin>\n{'a' * 65535}€éé\n[cut: only the first 65538")


def test_the_cap_fits_the_embedded_model_and_the_context_budget() -> None:
    # Found by a new user: `git log -20 | miniagent run --provider local ...` overflowed the
    # embedded model's 4,096-token context (HTTP 400, exit 1), and --context-max-chars 8000
    # refused a long piped input instead of cutting it to fit.
    from miniagent.cli.stdin_context import DEFAULT_STDIN_MAX_CHARS, LOCAL_STDIN_MAX_CHARS, stdin_cap

    assert stdin_cap(None, "openai", 20, None) == DEFAULT_STDIN_MAX_CHARS
    assert stdin_cap(None, "local", 20, None) == LOCAL_STDIN_MAX_CHARS < 10_000
    assert stdin_cap(50_000, "local", 20, None) == 50_000  # the user's own cap wins
    assert stdin_cap(None, "openai", 1_000, 8_000) == 8_000 - 1_000 - 200
    assert stdin_cap(None, "openai", 7_900, 8_000) == 0


def test_a_long_input_is_cut_to_fit_the_context_budget(tmp_path: Path, workspace: Path) -> None:
    with FakeOpenAI([text_turn("ok")]) as server:
        args = ["run", *model_args(server, workspace), "--context-max-chars", "8000", "sum up"]
        done = run_cli(args, tmp_path, input="x" * 100_000)
    assert done.returncode == EXIT_OK, done.stderr
    sent = _user_text(server)
    assert sent.startswith("sum up\n\n<stdin>\n") and len(sent) <= 8_000
