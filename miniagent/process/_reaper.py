"""The runner of one command that leaves no descendant behind (started by ``process``; not an API).

Usage: ``python -I -S _reaper.py GRACE PARENT [--sandbox-KEY PATH]... -- PROGRAM ARG...``
(``PARENT``: the pid of the process that starts the runner)

With ``--sandbox-*`` options (``_confine.spec_options``), the runner confines itself with the
kernel (``_confine.confine``) before it starts the program, so the program and every descendant
are confined too (the runner still sees ``/proc`` and signals its own descendants, which share its
sandbox); when that fails it writes one line on stderr and exits 126 without running anything.

The runner makes itself a *child subreaper* (Linux ``prctl(PR_SET_CHILD_SUBREAPER)``), starts the
program as its child and waits. A descendant whose parent exits is re-parented to the runner
instead of init, whatever process group or session it moved to (``set -m; cmd &``, ``setsid``,
a double-forking daemon), so every descendant stays in the runner's tree. The runner also asks
the kernel for SIGTERM when its parent dies (Linux ``PR_SET_PDEATHSIG``), and checks that
``PARENT`` is still its parent right after, so a parent killed with SIGKILL leaves nothing behind.
When the program exits, or the runner receives SIGTERM, SIGINT or SIGHUP (the tool's stop; its
parent's death), the runner:

1. sends SIGTERM to every live descendant, and waits up to GRACE seconds while reaping;
2. sends SIGKILL to those still alive, repeatedly, until none is left (bounded: ``KILL_SECONDS``);
3. exits with the program's status (killed by signal N: the runner kills itself with N, so the
   parent sees the same status), or ``128 + signal`` when stopped before the program ended.

Descendants are found in ``/proc`` (the ``ppid`` tree under the runner). Without ``/proc`` or
``prctl`` (not Linux) only the descendants still linked to the tree are reached. The runner writes
nothing: its stdout and stderr are the command's. It imports only the standard library and never
the ``miniagent`` package, to keep its start-up short (about 20 ms).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time

PR_SET_CHILD_SUBREAPER = 36
PR_SET_PDEATHSIG = 1
KILL_SECONDS = 2.0
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


class Stop(Exception):
    """Raised by the signal handler to leave the wait."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def become_subreaper() -> None:
    """Make this process a child subreaper that gets SIGTERM when its parent dies (best effort:
    Linux only)."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(Exception):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def descendants(root: int) -> list[int]:
    """Pids of the live (not zombie) processes under ``root`` in the ``ppid`` tree."""
    children: dict[int, list[int]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 1 and fields[0] not in (b"Z", b"X"):
            children.setdefault(int(fields[1]), []).append(int(name))
    found, queue = [], list(children.get(root, ()))
    while queue:
        pid = queue.pop()
        found.append(pid)
        queue.extend(children.get(pid, ()))
    return found


_statuses: dict[int, int] = {}  # wait statuses of children collected by reap()


def reap() -> bool:
    """Collect every child that has exited, without waiting; return whether a child is still
    alive. As a subreaper, "no child" proves that no descendant is left: every orphan becomes a
    child of this process."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return False
        if pid == 0:
            return True
        _statuses[pid] = status


def signal_all(pids: list[int], signum: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signum)


def clear(grace: float) -> None:
    """Stop every descendant: SIGTERM, up to ``grace`` seconds, then SIGKILL until no child is
    left (``KILL_SECONDS`` at most). Each round scans ``/proc`` again: a scan can miss a process
    forked during it, and a descendant may fork while it is being stopped."""
    me = os.getpid()
    deadline = time.monotonic() + grace
    signum = signal.SIGTERM
    give_up = deadline + KILL_SECONDS
    while reap():
        now = time.monotonic()
        if now >= give_up:
            return
        if now >= deadline:
            signum = signal.SIGKILL
        signal_all(descendants(me), signum)
        time.sleep(0.005)


def _raise_stop(signum: int, frame: object) -> None:
    raise Stop(signum)


def wait_for(pid: int) -> int | None:
    """Wait for ``pid`` (reaping adopted orphans meanwhile); its wait status, or ``None`` when
    it was already collected."""
    while True:
        try:
            done, status = os.waitpid(-1, 0)
        except ChildProcessError:
            return None
        if done == pid:
            return status


def exit_like(status: int) -> None:
    """Exit with the program's wait ``status``: its exit code, or die by its signal."""
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        with contextlib.suppress(OSError, ValueError):  # SIGKILL and SIGSTOP have no handler
            signal.signal(signum, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, (signum,))
        os.kill(os.getpid(), signum)
        os._exit(128 + signum)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


def confine_or_exit(options: list[str]) -> None:
    """Confine this process as ``options`` say (``_confine``, loaded from this folder), or exit
    126 with one line on stderr, before the program could run."""
    try:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import _confine  # type: ignore[import-not-found]

        _confine.confine(_confine.spec_from(options))
    except Exception as error:
        os.write(2, f"miniagent: the sandbox could not confine the command: {error}\n".encode())
        os._exit(126)


def main(argv: list[str]) -> None:
    """Run the command of ``argv`` (module doc) and exit like it."""
    grace = float(argv[1])
    parent = int(argv[2])
    split = argv.index("--", 3)
    options, command = argv[3:split], argv[split + 1 :]
    for signum in _STOP_SIGNALS:
        signal.signal(signum, _raise_stop)
    signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)  # no Stop inside the forked child
    become_subreaper()
    if os.getppid() != parent:  # the parent died before the kernel could be asked to tell us
        os._exit(128 + signal.SIGTERM)
    if options:
        confine_or_exit(options)  # the runner itself: the program and every descendant inherit it
    pid = os.fork()
    if pid == 0:
        try:
            # Python ignores SIGPIPE and SIGXFSZ; an ignored signal stays ignored across exec, so
            # restore them as subprocess does (else `yes | head` never ends).
            for signum in (*_STOP_SIGNALS, signal.SIGPIPE, signal.SIGXFSZ):
                signal.signal(signum, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
            os.execvp(command[0], command)
        except OSError as error:
            os.write(2, f"{command[0]}: {error.strerror}\n".encode())
        finally:
            os._exit(127)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
    status: int | None = None
    stopped_by = 0
    try:
        status = wait_for(pid)
    except Stop as stop:
        stopped_by = stop.signum
    for signum in _STOP_SIGNALS:  # from here on, nothing interrupts the clean-up
        signal.signal(signum, signal.SIG_IGN)
    clear(grace)
    if status is None:
        status = _statuses.get(pid)
    if status is not None:
        exit_like(status)
    os._exit(128 + stopped_by if stopped_by else 1)


if __name__ == "__main__":
    main(sys.argv)
