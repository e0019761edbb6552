"""The ``run_command`` tool, and the child-process machinery it shares with ``grep``.

How a child runs (``run_process``; ``run_shell`` is ``/bin/sh -c COMMAND`` through it):

- the given argv with the workspace as working folder, stdin ``/dev/null`` (or a temporary file
  holding the given input bytes), stdout and stderr merged into one pipe (so their order is kept),
  in a new session (``start_new_session``: its own process group, whose id is the child's pid).
- The calling thread reads the pipe itself (``select`` with 20 ms polls; no helper threads) and
  checks the cancel event and the deadline at every poll, so cancelling takes effect within
  about 20 ms.
- When the child exits, times out or is cancelled, the whole group is stopped: SIGTERM, then
  SIGKILL after ``kill_grace`` seconds for members still alive. This also ends background
  children (``sleep 30 &``) that would otherwise keep the pipe open. A process that left the group
  on purpose (``setsid``) is out of reach; the tool stops reading once the group is gone.
- "Alive" ignores zombies: on Linux the members are looked up in ``/proc`` (a killed grandchild
  stays a zombie until the init process reaps it, which can take a second in containers);
  elsewhere ``killpg(pgid, 0)`` decides.

Secrets (see ``environment``): a command gets an environment without secret variables
(``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``, names ending in ``_API_KEY``, ``_TOKEN``,
``_SECRET``, ``_PASSWORD``, ``_ACCESS_KEY``, ... or containing ``SECRET_``), unless the caller
gives an explicit environment; and the values of secret variables (>= 8 characters) of
``os.environ`` and of the command's environment are replaced with ``***`` in its output.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from ..tools import Tool, ToolResult
from .environment import redactor, scrubbed_environ, secret_values
from .output import OutputBuffer
from .paths import Workspace

__all__ = [
    "tool_timeout",
    "CommandOutcome",
    "ProcessOutcome",
    "kill_running_commands",
    "run_process",
    "run_shell",
    "run_command_tool",
    "check_environment",
    "DEFAULT_TIMEOUT_SECONDS",
    "MAX_TIMEOUT_SECONDS",
    "KILL_GRACE_SECONDS",
]

DEFAULT_TIMEOUT_SECONDS = 60.0
MAX_TIMEOUT_SECONDS = 600.0
KILL_GRACE_SECONDS = 0.5
_POLL_SECONDS = 0.02
_REAP_SECONDS = 2.0  # how long to wait for SIGKILLed members to die
_RUNNING: set[int] = set()  # process groups of commands running now (for an emergency exit)


def kill_running_commands() -> None:
    """SIGKILL the process group of every child ``run_process`` is running now (commands, grep).

    For a process that must exit at once (e.g. the CLI's second Ctrl-C, which skips the normal
    stop): without it, those groups would outlive the process. Safe in a signal handler (no locks).
    """
    for pgid in tuple(_RUNNING):
        _signal_group(pgid, signal.SIGKILL)


@dataclass(frozen=True, slots=True)
class CommandOutcome:
    """What ``run_shell`` observed.

    Args:
        output: stdout and stderr merged, decoded and capped (characters).
        returncode: the shell's exit status; negative ``-N`` when killed by signal ``N``.
        stopped: ``"timeout"``, ``"cancelled"`` or ``None`` when the shell exited by itself.
        pgid: the process group id (the shell's pid), e.g. for checking that it is gone.
        seconds: wall time of the call.
    """

    output: str
    returncode: int
    stopped: str | None
    pgid: int
    seconds: float


def _group_alive(pgid: int) -> bool:
    """Return whether a process of group ``pgid`` is alive (zombies do not count on Linux)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        names = os.listdir("/proc")
    except OSError:
        return True
    if "self" not in names:
        return True
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        # "pid (comm) state ppid pgrp ..."; comm may contain spaces and parentheses.
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            return True
    return False


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


class _Pipe:
    """The read end of the command's output pipe, read without blocking longer than a poll."""

    def __init__(self, fd: int, buffer: OutputBuffer) -> None:
        self.fd = fd
        self.buffer = buffer
        self.eof = False

    def pump(self, wait: float) -> None:
        """Read what is available, waiting at most ``wait`` seconds for something to arrive."""
        if self.eof:
            if wait > 0:
                time.sleep(wait)
            return
        deadline = time.monotonic() + wait
        while True:
            remaining = max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([self.fd], [], [], remaining)
            if not ready:
                return
            try:
                data = os.read(self.fd, 65536)
            except BlockingIOError:
                return
            if not data:
                self.eof = True
                return
            self.buffer.append(data)
            if time.monotonic() >= deadline:
                # Keep draining a chatty command, but never past the poll interval.
                return


def _wait_group_gone(process: subprocess.Popen[bytes], pipe: _Pipe, seconds: float) -> bool:
    """Read output and reap until no process of the group is alive, for at most ``seconds``.

    Returns:
        Whether the group is gone.
    """
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        pipe.pump(0.01)
        process.poll()
        if not _group_alive(process.pid):
            return True
    return False


def _stop_group(process: subprocess.Popen[bytes], pipe: _Pipe, grace: float) -> None:
    """SIGTERM the group, SIGKILL what is left after ``grace`` seconds, reap the child."""
    pgid = process.pid
    process.poll()
    if _group_alive(pgid):
        _signal_group(pgid, signal.SIGTERM)
        if not _wait_group_gone(process, pipe, grace):
            _signal_group(pgid, signal.SIGKILL)
            _wait_group_gone(process, pipe, _REAP_SECONDS)
    process.wait()
    # Every writer of the group is gone: take what is left in the pipe without waiting.
    while not pipe.eof:
        before = pipe.buffer.total_bytes
        pipe.pump(0.0)
        if pipe.buffer.total_bytes == before:
            break


@dataclass(frozen=True, slots=True)
class ProcessOutcome:
    """What ``run_process`` observed.

    Args:
        output: the child's stdout and stderr merged, as raw bytes (bounded: ``OutputBuffer``).
        returncode: the child's exit status; negative ``-N`` when killed by signal ``N``.
        stopped: ``"timeout"``, ``"cancelled"`` or ``None`` when the child exited by itself.
        pgid: the process group id (the child's pid), e.g. for checking that it is gone.
        seconds: wall time of the call.
    """

    output: OutputBuffer
    returncode: int
    stopped: str | None
    pgid: int
    seconds: float


def run_process(
    argv: Sequence[str],
    cwd: str | os.PathLike[str],
    *,
    timeout: float,
    cancel: threading.Event | None = None,
    keep_bytes: int = 65536,
    kill_grace: float = KILL_GRACE_SECONDS,
    env: Mapping[str, str] | None = None,
    input_data: bytes | None = None,
) -> ProcessOutcome:
    """Run ``argv`` in its own process group in ``cwd`` and collect its merged output.

    Args:
        argv: the program and its arguments (no shell involved).
        cwd: the working folder.
        timeout: seconds before the group is stopped (> 0).
        cancel: when set, the group is stopped within about 20 ms.
        keep_bytes: bytes of output kept at each end (``OutputBuffer``); the middle of a longer
            stream is dropped and counted.
        kill_grace: seconds between SIGTERM and SIGKILL.
        env: the child's exact environment; ``None`` inherits ``os.environ`` unchanged (callers
            running untrusted commands pass ``scrubbed_environ()``).
        input_data: bytes the child reads on stdin (from a temporary file); ``None`` gives
            ``/dev/null``.

    Returns:
        A ``ProcessOutcome``; no process of the group is alive when it returns.

    Raises:
        OSError: the child could not be started (e.g. ``cwd`` is gone, ``argv[0]`` missing).
        ValueError: ``keep_bytes`` is below 4.
    """
    started = time.monotonic()
    buffer = OutputBuffer(keep_bytes)
    with contextlib.ExitStack() as closing:  # the child holds its own stdin descriptor
        stdin: IO[bytes] | int = subprocess.DEVNULL
        if input_data is not None:  # a temporary file: never blocks, whatever the size
            stdin = closing.enter_context(tempfile.TemporaryFile())
            stdin.write(input_data)
            stdin.seek(0)
        process = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=None if env is None else dict(env),
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    assert process.stdout is not None
    _RUNNING.add(process.pid)
    pipe = _Pipe(process.stdout.fileno(), buffer)
    stopped: str | None = None
    deadline = started + timeout
    try:
        while process.poll() is None:
            if cancel is not None and cancel.is_set():
                stopped = "cancelled"
                break
            if time.monotonic() >= deadline:
                stopped = "timeout"
                break
            if pipe.eof:
                # Output closed: wait for the exit itself (returns as soon as the child is gone).
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(_POLL_SECONDS)
            else:
                pipe.pump(_POLL_SECONDS)
        _stop_group(process, pipe, kill_grace)
    finally:
        if process.returncode is None:  # an exception (e.g. KeyboardInterrupt) got here first
            _signal_group(process.pid, signal.SIGKILL)
            process.wait()
        _RUNNING.discard(process.pid)
        process.stdout.close()
    return ProcessOutcome(
        output=buffer,
        returncode=process.returncode,
        stopped=stopped,
        pgid=process.pid,
        seconds=time.monotonic() - started,
    )


def run_shell(
    command: str,
    cwd: str | os.PathLike[str],
    *,
    timeout: float,
    cancel: threading.Event | None = None,
    max_chars: int = 30_000,
    kill_grace: float = KILL_GRACE_SECONDS,
    env: Mapping[str, str] | None = None,
) -> CommandOutcome:
    """Run ``/bin/sh -c command`` in ``cwd`` and return its merged output and status.

    Args:
        command: the shell command line.
        cwd: the working folder.
        timeout: seconds before the group is stopped (> 0).
        cancel: when set, the group is stopped within about 20 ms.
        max_chars: cap of the returned output in characters.
        kill_grace: seconds between SIGTERM and SIGKILL.
        env: the command's exact environment; ``None`` means ``os.environ`` now without its
            secret variables (``environment.scrubbed_environ``).

    Returns:
        A ``CommandOutcome`` whose output has the values of secret variables (of ``os.environ``
        and of ``env``, >= 8 characters) replaced with ``***``; no process of the group is alive
        when it returns.

    Raises:
        OSError: the shell could not be started (e.g. ``cwd`` is gone).
    """
    child_env = scrubbed_environ() if env is None else dict(env)
    redact = redactor(secret_values(os.environ, child_env))
    outcome = run_process(
        ["/bin/sh", "-c", command],
        cwd,
        timeout=timeout,
        cancel=cancel,
        keep_bytes=max(4 * max_chars + 16, 65536),
        kill_grace=kill_grace,
        env=child_env,
    )
    return CommandOutcome(
        output=outcome.output.text(max_chars, redact),
        returncode=outcome.returncode,
        stopped=outcome.stopped,
        pgid=outcome.pgid,
        seconds=outcome.seconds,
    )


def _status_line(outcome: CommandOutcome, timeout: float) -> str:
    if outcome.stopped == "cancelled":
        return "[cancelled]"
    if outcome.stopped == "timeout":
        return f"[timed out after {timeout:g} s]"
    if outcome.returncode < 0:
        try:
            name = signal.Signals(-outcome.returncode).name
        except ValueError:
            name = f"signal {-outcome.returncode}"
        return f"killed by signal {name}"
    return f"exit code: {outcome.returncode}"


def tool_timeout(raw: Any, default: float, maximum: float) -> tuple[float | None, list[str]]:
    """The timeout a tool was asked for, in seconds, and notes for its result.

    Returns ``(None, [])`` when ``raw`` is not a positive number (zero, negative, NaN); a value
    above ``maximum`` (infinity included) is lowered to it with a note; ``None`` means ``default``.
    """
    timeout = default if raw is None else float(raw)
    if not timeout > 0:  # also refuses NaN, which would make the deadline never pass
        return None, []
    if timeout > maximum:
        return maximum, [f"[timeout lowered to the maximum of {maximum:g} s]"]
    return timeout, []


def _run_command(
    workspace: Workspace,
    max_chars: int,
    kill_grace: float,
    env: Mapping[str, str] | None,
    arguments: dict[str, Any],
    cancel: threading.Event | None,
) -> ToolResult:
    command = str(arguments["command"])
    timeout, notes = tool_timeout(arguments.get("timeout"), DEFAULT_TIMEOUT_SECONDS, MAX_TIMEOUT_SECONDS)
    if timeout is None:
        return ToolResult("timeout must be a positive number of seconds", is_error=True)
    if "\x00" in command:
        return ToolResult("the command contains a NUL character", is_error=True)
    try:
        outcome = run_shell(
            command,
            Path(workspace.root),
            timeout=timeout,
            cancel=cancel,
            max_chars=max_chars,
            kill_grace=kill_grace,
            env=env,
        )
    except OSError as error:
        return ToolResult(f"cannot run the command: {error}", is_error=True)
    parts = [*notes]
    if outcome.output:
        parts.append(outcome.output.removesuffix("\n"))
    parts.append(_status_line(outcome, timeout))
    failed = outcome.stopped is not None or outcome.returncode != 0
    return ToolResult("\n".join(parts), is_error=failed)


def check_environment(env: Mapping[str, str]) -> dict[str, str]:
    """Return a copy of ``env`` after checking that a child process can be given it.

    Args:
        env: variable names to values.

    Returns:
        A new ``dict`` with the same items.

    Raises:
        TypeError: a name or a value is not a ``str``.
        ValueError: a name is empty or contains ``=`` or NUL, or a value contains NUL.
    """
    copy = dict(env)
    for name, value in copy.items():
        if not isinstance(name, str) or not isinstance(value, str):
            raise TypeError(f"environment names and values must be str: {name!r}")
        if not name or "=" in name or "\x00" in name or "\x00" in value:
            raise ValueError(f"invalid environment variable {name!r}")
    return copy


def run_command_tool(
    workspace: Workspace,
    max_chars: int,
    *,
    kill_grace: float = KILL_GRACE_SECONDS,
    env: Mapping[str, str] | None = None,
) -> Tool:
    """Return the ``run_command`` tool (not read-only: a command may change anything).

    Args:
        workspace: the commands' working folder.
        max_chars: cap of each result in characters.
        kill_grace: seconds between SIGTERM and SIGKILL when a command is stopped.
        env: the commands' exact environment (copied now); ``None`` means ``os.environ`` at each
            call without its secret variables (``environment.scrubbed_environ``).

    Input: ``command`` (shell command line), ``timeout`` (seconds, default
    ``DEFAULT_TIMEOUT_SECONDS``, lowered to ``MAX_TIMEOUT_SECONDS`` with a note).
    Result: the merged output (capped to ``max_chars`` characters, invalid UTF-8 replaced, values
    of secret variables replaced with ``***``), then one status line: ``exit code: N``,
    ``killed by signal NAME``, ``[timed out after N s]`` or ``[cancelled]``. ``is_error`` is true
    unless the command exited with status 0.

    Raises:
        TypeError, ValueError: ``env`` is not a valid environment (``check_environment``).
    """
    fixed_env = None if env is None else check_environment(env)

    def execute(arguments: dict[str, Any], cancel: threading.Event | None) -> ToolResult:
        return _run_command(workspace, max_chars, kill_grace, fixed_env, arguments, cancel)

    return Tool(
        name="run_command",
        description=(
            "Run a shell command (/bin/sh -c) in the workspace folder and return its combined "
            "stdout and stderr and its exit code. No input is available on stdin; "
            "background processes are stopped when the command ends. Secret environment "
            "variables (API keys, tokens, passwords) are not available to the command."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "command": {
                    "type": "string",
                    "description": "The shell command line to run, e.g. 'ls -la' or 'pytest -q'.",
                },
                "timeout": {
                    "type": "number",
                    "exclusiveMinimum": 0,
                    "maximum": MAX_TIMEOUT_SECONDS,
                    "description": f"Seconds before the command is stopped. "
                    f"Default: {DEFAULT_TIMEOUT_SECONDS:g}; at most {MAX_TIMEOUT_SECONDS:g}.",
                },
            },
            "required": ["command"],
            "additionalProperties": False,
        },
        execute=execute,
        read_only=False,
    )
