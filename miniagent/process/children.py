"""Child processes of the tools: each in a process group of its own, read with caps, stopped
with its whole group, and registered while it runs.

Used by ``run_command`` and ``grep``'s worker (``toolbox``), MCP stdio servers (``mcp``) and the
embedded model's server (``providers.local``).

API:

- ``check_environment(env)``: a checked copy of an environment given by a caller.
- ``start_child(argv, cwd, env=..., stdin=..., stdout=..., stderr=...)``: a ``subprocess.Popen``
  started in a new session (``start_new_session``: its process group id is its pid), its group
  registered.
- ``stop_child(process, grace=..., drain=...)``: SIGTERM to the group, SIGKILL after ``grace``
  seconds to members still alive, the child reaped, the group unregistered. ``drain(seconds)``
  is called while waiting (e.g. to keep reading a pipe the members may be blocked writing to).
- The registry of running groups and ``kill_running_children()`` are in ``groups``.
- ``run_process(argv, cwd, timeout=..., cancel=...)``: start, read stdout and stderr merged into
  a bounded ``OutputBuffer`` in the calling thread, stop on exit, cancel or timeout.

Invariants:

- A group is in the registry from right after its child started until the child is reaped.
- ``stop_child`` and ``run_process`` return when no member of the group is alive, or after
  ``REAP_SECONDS`` past the SIGKILL; the child is always reaped. An exception while waiting
  (e.g. ``KeyboardInterrupt``) SIGKILLs the group before it propagates.
- "Alive" ignores zombies: on Linux the members are looked up in ``/proc`` (a killed grandchild
  stays a zombie until the init process reaps it, which can take a second in containers);
  elsewhere ``killpg(pgid, 0)`` decides.
- ``run_process`` reads the pipe itself (``select`` with 20 ms polls; no helper threads) and checks
  the cancel event and the deadline at every poll: cancelling takes effect within about 20 ms.
  Stopping the group also ends background children (``sleep 30 &``) that would otherwise keep the
  pipe open.

- With ``contain`` (``run_command`` uses it), the program runs under the reaper (``_reaper.py``),
  a child subreaper: every descendant, also one that left the group or the session (``set -m``,
  ``setsid``, a daemon), is stopped when the program ends, is cancelled or times out.
- With ``confine`` (a ``sandbox.Confinement``'s spec), the program runs under the reaper, which
  confines itself with the kernel before it starts the program (``sandbox``); it never runs
  unconfined: without an interpreter for the reaper, ``SandboxUnavailable``.

Limits: without ``contain``, a process that left the group on purpose is out of reach; reading
stops once the group is gone. The emergency ``kill_running_children`` has no time for the
reaper's clean-up: it SIGKILLs what one look at ``/proc`` finds under each child, then the group
(a process forked during that look can escape). The reaper needs Linux (``prctl``, ``/proc``).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from .._capture import OutputBuffer
from ..errors import SandboxUnavailable
from .groups import group_alive, register_group, signal_group, unregister_group

__all__ = [
    "KILL_GRACE_SECONDS",
    "REAP_SECONDS",
    "ProcessOutcome",
    "check_environment",
    "contained",
    "start_child",
    "stop_child",
    "kill_child",
    "run_process",
]

KILL_GRACE_SECONDS = 0.5
"""Default seconds between SIGTERM and SIGKILL when a group is stopped."""
REAP_SECONDS = 2.0
"""How long to wait for SIGKILLed members to die."""
REAPER_MARGIN_SECONDS = 1.0
"""Extra seconds a contained child's reaper gets, past the grace, to stop every descendant."""
_POLL_SECONDS = 0.02
_REAPER = Path(__file__).with_name("_reaper.py")


# --- starting and stopping one child ------------------------------------------------------------------


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


def contained(
    argv: Sequence[str], grace: float = KILL_GRACE_SECONDS, confine: Mapping[str, Any] | None = None
) -> list[str]:
    """``argv`` run through the reaper (``_reaper.py``): a child subreaper that, when the program
    ends or is stopped, stops every descendant -- also those that left the process group or the
    session (``set -m``, ``setsid``, daemons) -- SIGTERM, then SIGKILL after ``grace`` seconds.
    The reaper does the same when this process dies, even by SIGKILL (it is told this process's
    pid, and the kernel signals it when its parent goes: ``PR_SET_PDEATHSIG``). With ``confine``
    (a ``sandbox.Confinement``'s spec) the reaper confines itself before it starts the program.
    Unchanged when there is no interpreter path to run the reaper with.

    Raises:
        SandboxUnavailable: ``confine`` is given and there is no interpreter to run the reaper.
    """
    if not sys.executable:
        if confine is not None:
            raise SandboxUnavailable("the sandbox needs the path of the Python interpreter")
        return list(argv)
    options: list[str] = []
    if confine is not None:
        from . import _confine  # ctypes: imported only by a process that confines children

        options = _confine.spec_options(dict(confine))
    return [sys.executable, "-I", "-S", str(_REAPER), f"{grace:g}", str(os.getpid()), *options, "--", *argv]


def start_child(
    argv: Sequence[str],
    cwd: str | os.PathLike[str] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    stdin: int | IO[bytes] | None = subprocess.DEVNULL,
    stdout: int | IO[bytes] | None = subprocess.PIPE,
    stderr: int | IO[bytes] | None = subprocess.STDOUT,
    contain: bool = False,
    confine: Mapping[str, Any] | None = None,
    pass_fds: Sequence[int] = (),
) -> subprocess.Popen[bytes]:
    """Start ``argv`` in a process group of its own and register the group.

    Args:
        argv: the program and its arguments (no shell involved).
        cwd: the working folder; ``None`` keeps this process's.
        env: the child's exact environment; ``None`` inherits ``os.environ`` unchanged (callers
            running untrusted commands pass ``environment.scrubbed_environ()``).
        stdin, stdout, stderr: as for ``subprocess.Popen`` (bytes mode). Defaults: ``/dev/null``,
            a pipe, and stderr merged into stdout. MCP stdio servers pass ``PIPE`` for stdin.
        contain: run ``argv`` through the reaper (``contained``), so that no descendant of it
            survives its end or its stop, even one that left the group (Linux).
        confine: a sandbox spec (``sandbox.Confinement.spec``): run through the reaper, which
            confines itself before it starts ``argv`` (implies ``contain``).
        pass_fds: file descriptors the child inherits (a ``Confinement``'s ruleset).

    Returns:
        The running ``Popen``; its pid is its process group id. Stop it with ``stop_child``.

    Raises:
        OSError: the child could not be started (e.g. ``cwd`` is gone, ``argv[0]`` missing).
        SandboxUnavailable: ``confine`` without an interpreter to run the reaper.
    """
    process = subprocess.Popen(
        contained(argv, confine=confine) if contain or confine is not None else list(argv),
        cwd=cwd,
        env=None if env is None else dict(env),
        stdin=stdin,
        stdout=stdout,
        stderr=stderr,
        start_new_session=True,
        pass_fds=tuple(pass_fds),
    )
    register_group(process.pid)
    return process


def _wait_group_gone(
    process: subprocess.Popen[bytes], drain: Callable[[float], None], seconds: float
) -> bool:
    """Drain and reap until no process of the group is alive, for at most ``seconds``.

    Returns:
        Whether the group is gone.
    """
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        drain(0.01)
        process.poll()
        if not group_alive(process.pid):
            return True
    return False


def kill_child(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL the group of ``process`` at once, reap the child, unregister the group."""
    try:
        if process.returncode is None:
            signal_group(process.pid, signal.SIGKILL)
            process.wait()
    finally:
        unregister_group(process.pid)


def stop_child(
    process: subprocess.Popen[bytes],
    *,
    grace: float = KILL_GRACE_SECONDS,
    drain: Callable[[float], None] | None = None,
) -> None:
    """Stop the whole group of ``process``: SIGTERM, SIGKILL after ``grace`` seconds, reap.

    Args:
        process: a child started by ``start_child`` (its pid is its group id).
        grace: seconds the members get to exit after SIGTERM.
        drain: called with a number of seconds to wait while members exit (e.g. a pipe reader,
            so that a member blocked on a full pipe can finish); ``None`` sleeps.

    Returns when no member is alive (or ``REAP_SECONDS`` after the SIGKILL) and the child is
    reaped; the group is unregistered. Safe to call on a child that already exited.
    """
    wait = drain if drain is not None else time.sleep
    pgid = process.pid
    try:
        process.poll()
        if group_alive(pgid):
            signal_group(pgid, signal.SIGTERM)
            if not _wait_group_gone(process, wait, grace):
                signal_group(pgid, signal.SIGKILL)
                _wait_group_gone(process, wait, REAP_SECONDS)
        process.wait()
    finally:
        kill_child(process)  # an exception got here first: no waiting; else only unregisters


# --- running a child to the end ----------------------------------------------------------------------


class _Pipe:
    """The read end of the child's output pipe, read without blocking longer than a poll."""

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
                # Keep draining a chatty child, but never past the poll interval.
                return

    def read_rest(self) -> None:
        """Take what is left in the pipe without waiting (every writer is gone)."""
        while not self.eof:
            before = self.buffer.total_bytes
            self.pump(0.0)
            if self.buffer.total_bytes == before:
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


def _start_with_input(
    argv: Sequence[str],
    cwd: str | os.PathLike[str],
    env: Mapping[str, str] | None,
    input_data: bytes | None,
    contain: bool,
    pass_fds: Sequence[int] = (),
) -> subprocess.Popen[bytes]:
    """``start_child`` with stdin ``/dev/null``, or a temporary file holding ``input_data`` (never
    blocks, whatever the size; the child holds its own descriptor once started)."""
    if input_data is None:
        return start_child(argv, cwd, env=env, contain=contain, pass_fds=pass_fds)
    with tempfile.TemporaryFile() as stdin:
        stdin.write(input_data)
        stdin.seek(0)
        return start_child(argv, cwd, env=env, stdin=stdin, contain=contain, pass_fds=pass_fds)


def _read_until_done(
    process: subprocess.Popen[bytes],
    pipe: _Pipe,
    deadline: float,
    cancel: threading.Event | None,
) -> str | None:
    """Read the output until the child exits, the deadline passes or ``cancel`` is set.

    Returns:
        ``"cancelled"``, ``"timeout"`` or ``None`` (the child exited by itself).
    """
    while process.poll() is None:
        if cancel is not None and cancel.is_set():
            return "cancelled"
        if time.monotonic() >= deadline:
            return "timeout"
        if pipe.eof:
            # Output closed: wait for the exit itself (returns as soon as the child is gone).
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(_POLL_SECONDS)
        else:
            pipe.pump(_POLL_SECONDS)
    return None


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
    contain: bool = False,
    confine: Mapping[str, Any] | None = None,
    pass_fds: Sequence[int] = (),
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
        contain: run through the reaper (``contained``, with ``kill_grace``; SIGKILL to the group
            only after ``REAPER_MARGIN_SECONDS`` more): then no descendant at all is alive when
            it returns, even one that left the group. The program is then a child of the
            reaper: its pid is not the group id.
        confine: a sandbox spec (``sandbox.Confinement.spec``): the reaper confines itself
            before it starts ``argv`` (implies ``contain``; a failure to confine is exit status
            126 with one line of output, the program not run).
        pass_fds: file descriptors the child inherits (a ``Confinement``'s ruleset).

    Returns:
        A ``ProcessOutcome``; no process of the group is alive when it returns.

    Raises:
        OSError: the child could not be started (e.g. ``cwd`` is gone, ``argv[0]`` missing).
        ValueError: ``keep_bytes`` is below 4.
        SandboxUnavailable: ``confine`` without an interpreter to run the reaper.
    """
    started = time.monotonic()
    buffer = OutputBuffer(keep_bytes)
    contain = contain or confine is not None
    command = contained(argv, kill_grace, confine) if contain else argv
    process = _start_with_input(command, cwd, env, input_data, contain=False, pass_fds=pass_fds)
    assert process.stdout is not None
    pipe = _Pipe(process.stdout.fileno(), buffer)
    try:
        stopped = _read_until_done(process, pipe, started + timeout, cancel)
        # The reaper gives the command's processes kill_grace itself: wait for it a little longer.
        stop_child(process, grace=kill_grace + (REAPER_MARGIN_SECONDS if contain else 0.0), drain=pipe.pump)
        pipe.read_rest()
    finally:
        kill_child(process)  # only when an exception (e.g. KeyboardInterrupt) got here first
        process.stdout.close()
    return ProcessOutcome(
        output=buffer,
        returncode=process.returncode,
        stopped=stopped,
        pgid=process.pid,
        seconds=time.monotonic() - started,
    )
