"""The command line meets hostile or unlucky input: special files named by options, escape
sequences in what it writes to a terminal."""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from miniagent.cli.checks import UsageProblem
from tests.cli_helpers import FakeOpenAI, json_lines, model_args, run_cli, text_turn

pytestmark = pytest.mark.timeout(60)

FILE_OPTIONS = ["--log-file", "--output-schema", "--mcp-config", "--session"]


def _special(kind: str, tmp_path: Path) -> Path:
    """A FIFO, a socket, a device, or a symlink to a FIFO."""
    if kind == "fifo":
        os.mkfifo(tmp_path / "pipe")
        return tmp_path / "pipe"
    if kind == "socket":
        listener = socket.socket(socket.AF_UNIX)
        listener.bind(str(tmp_path / "sock"))
        return tmp_path / "sock"
    if kind == "symlink-to-fifo":
        os.mkfifo(tmp_path / "pipe")
        (tmp_path / "link").symlink_to(tmp_path / "pipe")
        return tmp_path / "link"
    return Path("/dev/zero")


@pytest.mark.parametrize("kind", ["fifo", "socket", "symlink-to-fifo", "device"])
@pytest.mark.parametrize("option", [*FILE_OPTIONS, "--workspace"])
def test_a_special_file_as_an_option_is_a_usage_error_at_once(tmp_path: Path, option: str, kind: str) -> None:
    """A FIFO as ``--log-file``, ``--output-schema`` or ``--mcp-config`` blocked before the
    ``--timeout`` clock started; now every path option refuses a special file at once."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    special = _special(kind, tmp_path)
    with FakeOpenAI([text_turn("never")]) as server:
        args = ["run", "--timeout", "2", *model_args(server, workspace), option, str(special), "hi"]
        result = run_cli(args, tmp_path, timeout=20)
    assert result.returncode == 64, result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"miniagent: error: invalid value for {option}: {special} is a ")
    wanted = "not a folder" if option == "--workspace" else "not a regular file"
    assert wanted in line and result.stdout == "" and server.posts == 0


@pytest.mark.parametrize("option", FILE_OPTIONS)
def test_chat_refuses_them_too(tmp_path: Path, option: str) -> None:
    special = _special("fifo", tmp_path)
    with FakeOpenAI([text_turn("never")]) as server:
        args = ["chat", *model_args(server, tmp_path), option, str(special)]
        if option == "--output-schema":
            args = ["run", *args[1:], "hi"]  # a run option only
        result = run_cli(args, tmp_path, input="hi\n", timeout=20)
    assert result.returncode == 64 and "is a FIFO, not a regular file" in result.stderr, result.stderr
    assert server.posts == 0


def test_session_pop_refuses_a_fifo_at_once(tmp_path: Path) -> None:
    special = _special("fifo", tmp_path)
    result = run_cli(["session", "pop", str(special)], tmp_path, timeout=20)
    assert result.returncode == 64, result.stderr
    assert result.stderr == (
        f"miniagent: error: invalid value for PATH: {special} is a FIFO, not a regular file "
        "(see 'miniagent session pop --help')\n"
    )


def _within(seconds: float, action: Callable[[], object]) -> None:
    """Run ``action`` in a thread; fail (not hang) when it does not finish in time."""
    failure: list[BaseException] = []

    def target() -> None:
        try:
            action()
        except BaseException as error:  # handed to the test thread
            failure.append(error)

    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), "blocked on a special file"
    if failure:
        raise failure[0]


def test_a_file_swapped_for_a_fifo_after_parsing_is_refused_when_opened(tmp_path: Path) -> None:
    """The parse-time look and the later open are two steps: the open checks again, on the
    descriptor, and never waits on the FIFO."""
    from miniagent.cli.logs import _open_log_file
    from miniagent.cli.run import read_output_schema
    from miniagent.mcp import MCPError, load_mcp_config

    fifo = _special("fifo", tmp_path)

    def attempts() -> None:
        with pytest.raises(UsageProblem, match="a FIFO, not a regular file"):
            _open_log_file(fifo)
        with pytest.raises(UsageProblem, match="a FIFO, not a regular file"):
            read_output_schema(fifo)
        with pytest.raises(MCPError, match="a FIFO, not a regular file"):
            load_mcp_config(fifo)

    _within(10, attempts)
    assert fifo.is_fifo()


def test_a_new_log_file_is_private_and_an_existing_one_is_appended_to(tmp_path: Path) -> None:
    from tests.helpers import usual_umask

    workspace = tmp_path / "ws"
    workspace.mkdir()
    log = tmp_path / "run.log"
    with FakeOpenAI([text_turn("one"), text_turn("two")]) as server, usual_umask():
        for _ in range(2):
            args = ["run", *model_args(server, workspace), "--log-file", str(log), "hi"]
            assert run_cli(args, tmp_path).returncode == 0
    assert log.stat().st_mode & 0o777 == 0o600
    assert log.read_text().count("stop reason: complete") == 2


# --- escape sequences in what the CLI writes --------------------------------------------------------

BODY = "busy \x1b]52;c;cm0gLXJmIH4=\x07\x1b]0;owned\x07 bell\x07 \x9b31m end"
"""A 503 body holding OSC 52 (clipboard write), OSC 0 (window title), BEL and a C1 CSI."""
RAW = ("\x1b", "\x07", "\x9b")


def _no_raw_controls(text: str) -> None:
    assert not any(control in text for control in RAW), repr(text)


def test_a_retry_log_line_on_a_terminal_shows_the_servers_escapes_never_runs_them(tmp_path: Path) -> None:
    from tests.cli_helpers import on_a_terminal

    workspace = tmp_path / "ws"
    workspace.mkdir()
    with FakeOpenAI([("status", 503, BODY), text_turn("fine")]) as server:
        args = ["run", "-v", *model_args(server, workspace), "hi"]
        screen = on_a_terminal(args, tmp_path, [], b"fine")
    line = next(line for line in screen.splitlines() if "retry 1" in line)
    assert "busy \\x1b]52;c;cm0gLXJmIH4=\\x07\\x1b]0;owned\\x07 bell\\x07 \\x9b31m end" in line
    assert "\x1b]" not in screen and "\x07" not in screen and "\x9b" not in screen


def test_debug_tracebacks_error_lines_and_the_log_file_escape_them_too(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    log = tmp_path / "run.log"
    refusal = ("status", 400, BODY)  # not retried: the run fails with the body in its error
    with FakeOpenAI([refusal, refusal]) as server:
        debug = run_cli(["run", "--debug", *model_args(server, workspace), "hi"], tmp_path)
        verbose = ["run", "-vv", "--log-file", str(log), *model_args(server, workspace), "hi"]
        logged = run_cli(verbose, tmp_path)
    assert debug.returncode == 1 and "Traceback" in debug.stderr and "\\x1b]52" in debug.stderr
    assert logged.returncode == 1 and "\\x1b]52" in logged.stderr
    for text in (debug.stderr, logged.stderr, log.read_text()):
        _no_raw_controls(text)


def test_paths_from_the_command_line_are_escaped_in_usage_and_session_lines(tmp_path: Path) -> None:
    name = "s\x1b]0;owned\x07.jsonl"
    missing = run_cli(["run", "--mcp-config", str(tmp_path / name), "hi"], tmp_path)
    assert missing.returncode == 64 and "\\x1b]0;owned\\x07" in missing.stderr
    (tmp_path / name).write_text('{"role":"user","content":"q"}\n{"role":"assistant","content":"a"}\n')
    popped = run_cli(["session", "pop", str(tmp_path / name)], tmp_path)
    assert popped.returncode == 0 and "\\x1b]0;owned\\x07" in popped.stderr
    for text in (missing.stderr, popped.stderr):
        _no_raw_controls(text)


def test_json_lines_escape_del_and_c1_controls_and_keep_the_exact_value(tmp_path: Path) -> None:
    text = "a \x9b31m b \x7f c \x85 d \u00e9"
    with FakeOpenAI([text_turn(text)]) as server:
        done = run_cli(["run", "--json", *model_args(server, tmp_path), "hi"], tmp_path)
    assert done.returncode == 0
    line = done.stdout.splitlines()[-2]
    assert "\\u009b31m" in line and "\\u007f" in line and "\\u0085" in line and "\u00e9" in line
    _no_raw_controls(done.stdout)
    assert json_lines(done.stdout)[-2]["content"] == text
