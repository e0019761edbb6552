"""Signals of the CLI: the first SIGINT/SIGTERM/SIGHUP cancels the run, a second one exits at once."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

from .terminal import is_terminal

__all__ = ["Interrupted", "SignalCancel", "StartSignals", "interrupt_exit_code", "signal_name"]


class Interrupted(KeyboardInterrupt):
    """SIGTERM or SIGHUP while the run starts (``StartSignals``): handled like Ctrl-C there.

    Args:
        signum: the signal that came; the exit code is ``128 + signum`` (``EXIT_SIGTERM``, ``EXIT_SIGHUP``).
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def interrupt_exit_code(error: KeyboardInterrupt) -> int:
    """``128 + signal`` of a ``KeyboardInterrupt``: ``EXIT_SIGINT`` for Ctrl-C, ``EXIT_SIGTERM`` /
    ``EXIT_SIGHUP`` for ``Interrupted``."""
    return 128 + getattr(error, "signum", signal.SIGINT)


def signal_name(code: int) -> str:
    """What follows ``aborted`` in a message for exit code ``code`` (``128 + signal``):
    ``""`` for Ctrl-C, `` by SIGTERM`` / `` by SIGHUP`` otherwise."""
    return "" if code == 128 + signal.SIGINT else f" by {signal.Signals(code - 128).name}"


class StartSignals:
    """Within ``with`` (the start of the MCP servers and the model): SIGTERM and SIGHUP raise
    ``Interrupted`` in the main thread, as Python's own SIGINT handler raises
    ``KeyboardInterrupt``, so every signal of that phase takes the same way out (the started
    processes are stopped, one message, exit ``128 + signal``). Only installed in the main
    thread; the previous handlers are restored on exit.
    """

    def __init__(self) -> None:
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> StartSignals:
        self._previous = _install(self._handle, (signal.SIGTERM, signal.SIGHUP))
        return self

    def __exit__(self, *exc_info: object) -> None:
        _restore(self._previous)

    @staticmethod
    def _handle(signum: int, frame: FrameType | None) -> None:
        raise Interrupted(signum)


class SignalCancel:
    """Within ``with``: SIGINT, SIGTERM or SIGHUP set ``cancel``; a second signal exits at once.

    Only installed in the main thread (Python delivers signals there); the previous handlers are
    restored on exit. ``interruptible`` (set while an approval prompt waits) makes the first
    signal also raise ``KeyboardInterrupt`` so the prompt stops waiting. The exit code is
    ``128 + signal`` (``defaults.EXIT_SIGINT``, ``EXIT_SIGTERM``, ``EXIT_SIGHUP``). SIGHUP (the
    terminal closed) cancels too, so the run closes its calls and stops its commands instead of
    dying with them still running.

    Args:
        cancel: the run's cancel event, set by the first signal.
        on_cancel: called by the first signal after ``cancel`` is set (e.g. the status line shows
            ``cancelling...``); runs in the signal handler, so it must take no lock.
        stop_commands: called by the second signal just before ``os._exit``, so that no child
            process of the run outlives it (e.g. the toolbox's ``kill_running_commands``); must be
            safe in a signal handler.
    """

    def __init__(
        self,
        cancel: threading.Event,
        *,
        on_cancel: Callable[[], None] | None = None,
        stop_commands: Callable[[], None] | None = None,
    ) -> None:
        self.cancel = cancel
        self.on_cancel = on_cancel
        self.stop_commands = stop_commands
        self.signum: int | None = None
        self.interruptible = False
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> SignalCancel:
        self._previous = _install(self._handle, (signal.SIGINT, signal.SIGTERM, signal.SIGHUP))
        return self

    def __exit__(self, *exc_info: object) -> None:
        _restore(self._previous)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.signum is not None:
            # Second signal: leave now. Flushing may fail if we interrupted a write; that is fine.
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(Exception):
                    stream.flush()
            if self.stop_commands is not None:  # no command of ours may outlive us
                self.stop_commands()
            os._exit(128 + signum)
        self.signum = signum
        self.cancel.set()
        name = "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name
        # No locks here (the main thread may hold one): write straight to the file descriptor.
        if self.on_cancel is not None:
            self.on_cancel()
        with contextlib.suppress(OSError):
            os.write(
                2,
                f"\r\x1b[Kminiagent: {name}: cancelling (press Ctrl-C again to quit now)\n".encode()
                if is_terminal(sys.stderr)
                else f"miniagent: {name}: cancelling\n".encode(),
            )
        if self.interruptible:  # an approval prompt waits for a line: stop waiting
            raise KeyboardInterrupt

    def exit_code(self, default: int) -> int:
        """``128 + signal`` when a signal arrived, else ``default``."""
        return 128 + self.signum if self.signum is not None else default


def _install(handler: Callable[[int, FrameType | None], None], signums: tuple[int, ...]) -> dict[int, Any]:
    """Install ``handler`` for ``signums``; return the handlers it replaced (to ``_restore``).

    Only the main thread can install handlers (Python delivers signals there); elsewhere nothing
    is installed and the result is empty.
    """
    if threading.current_thread() is not threading.main_thread():
        return {}
    return {signum: signal.signal(signum, handler) for signum in signums}


def _restore(previous: dict[int, Any]) -> None:
    """Put back the handlers ``_install`` replaced, and forget them (a second call does nothing)."""
    for signum, handler in previous.items():
        signal.signal(signum, handler)
    previous.clear()
