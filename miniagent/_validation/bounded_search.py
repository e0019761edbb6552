"""A pattern search that ends when the caller's cancel event or deadline says so.

The validator runs ``re`` in its own process when the pattern's bound on backtracking
(``Translated.steps``) for a text of that length is at most ``IN_PROCESS_STEPS`` (about a
hundredth of a second of ``re``'s work): every usual pattern on every usual text. Any other
search goes to ``search_in_child(pattern, text, should_stop)``: a child process
(``regex_child.py``), which this process kills when ``should_stop()`` names a reason (checked
every ``POLL_SECONDS``); the search then raises ``Stopped``. Children are kept for the next
search (at most ``IDLE_WORKERS`` idle ones; a child that a forked process inherited is never
used) and end by themselves when this process ends (their stdin closes). Where no child can be
started (no ``sys.executable``), the search runs here.

Invariants: the child gets an environment without this process's variables (no secrets), its own
session (a Ctrl-C at the terminal reaches only this process) and capped memory; a child whose
search was stopped, or whose answer could not be read, is killed and never reused.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import subprocess

    from .ecma_regex import Translated

__all__ = ["IN_PROCESS_STEPS", "POLL_SECONDS", "Stopped", "SearchFailed", "search_in_child"]

IN_PROCESS_STEPS = 10**7
POLL_SECONDS = 0.02
IDLE_WORKERS = 2
_CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "regex_child.py")
_KEPT_VARIABLES = ("LD_LIBRARY_PATH", "DYLD_LIBRARY_PATH", "SYSTEMROOT")


class Stopped(Exception):
    """``should_stop()`` named ``reason`` while the search ran; the child was killed."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class SearchFailed(Exception):
    """The child could not finish the search (out of memory, or it died); ``str`` says why."""


class _Worker:
    """One child process and the pipes to it."""

    def __init__(self) -> None:
        import subprocess

        self.owner = os.getpid()
        env = {name: os.environ[name] for name in _KEPT_VARIABLES if name in os.environ}
        self.process: subprocess.Popen[bytes] = subprocess.Popen(
            [sys.executable, "-I", "-S", _CHILD, str(self.owner)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
            close_fds=True,
        )

    def usable(self) -> bool:
        return self.owner == os.getpid() and self.process.poll() is None

    def search(self, python: str, text: str, should_stop: Callable[[], str | None]) -> bool:
        pattern_bytes = python.encode("utf-8", "surrogatepass")
        text_bytes = text.encode("utf-8", "surrogatepass")
        stdin: Any = self.process.stdin
        stdin.write(b"%d %d\n" % (len(pattern_bytes), len(text_bytes)))
        stdin.write(pattern_bytes)
        stdin.write(text_bytes)
        stdin.flush()
        answer = self._answer(should_stop)
        if answer.startswith(b"E "):
            raise SearchFailed(answer[2:].decode("ascii", "replace").strip())
        return answer == b"1"

    def _answer(self, should_stop: Callable[[], str | None]) -> bytes:
        import select

        stdout: Any = self.process.stdout
        fd = stdout.fileno()
        received = b""
        while not received.endswith(b"\n"):
            ready, _, _ = select.select([fd], [], [], POLL_SECONDS)
            if not ready:
                reason = should_stop()
                if reason is not None:
                    raise Stopped(reason)
                continue
            chunk = os.read(fd, 256)
            if not chunk:
                raise SearchFailed("the search process ended without an answer")
            received += chunk
        return received.strip()

    def kill(self) -> None:
        if self.owner != os.getpid():
            return  # a forked process's copy: the parent still owns the child
        self.process.kill()
        self.process.wait()
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                pipe.close()


_IDLE: list[_Worker] = []  # list.pop and list.append are atomic: no lock is needed


def _take() -> _Worker | None:
    while _IDLE:
        try:
            worker = _IDLE.pop()
        except IndexError:
            break
        if worker.usable():
            return worker
        worker.kill()
    if not sys.executable:
        return None
    try:
        worker = _Worker()
    except OSError:
        return None
    if not _EXIT_HOOK:
        import atexit

        atexit.register(_close_idle)
        _EXIT_HOOK.append(True)
    return worker


_EXIT_HOOK: list[bool] = []


def _close_idle() -> None:
    """At exit: end the idle children (their stdin closes; they exit on their own)."""
    while _IDLE:
        worker = _IDLE.pop()
        if worker.owner == os.getpid():
            worker.kill()


def search_in_child(pattern: Translated, text: str, should_stop: Callable[[], str | None]) -> bool:
    """Whether ``pattern`` matches somewhere in ``text`` (``re.search``), searched in a child.

    Raises:
        Stopped: ``should_stop()`` returned a reason before the search ended.
        SearchFailed: the child ran out of memory or died.
    """
    reason = should_stop()
    if reason is not None:
        raise Stopped(reason)
    worker = _take()
    if worker is None:
        return pattern.compiled.search(text) is not None
    try:
        found = worker.search(pattern.python, text, should_stop)
    except OSError as error:  # the child's pipes broke: it died
        worker.kill()
        raise SearchFailed(f"the search process failed ({error.strerror or error})") from None
    except BaseException:
        worker.kill()
        raise
    if len(_IDLE) < IDLE_WORKERS:
        _IDLE.append(worker)
    else:
        worker.kill()
    return found
