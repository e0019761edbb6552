"""The cancel watcher of one stream: shuts its socket down the moment the cancel event is set.

A thread blocked in ``connect``, ``send`` or ``recv`` cannot be interrupted in Python except by
shutting its socket down from another thread (closing it would not wake the call, and a socket
timeout would leave the socket unusable). Each stream with a cancel event gets one watcher; the
connection it uses hands it every socket it creates (``_urllib3``), from before the TCP connect
to the last read.

Invariant: every shutdown happens under the watcher's lock, and after ``stop()`` returned the
watcher never touches a socket again, so a connection may go back to the pool and serve another
stream without a late cancel of this one reaching it.
"""

from __future__ import annotations

import contextlib
import socket
import threading

__all__ = ["SocketWatcher", "shutdown_socket"]

_WATCH_POLL = 0.1  # seconds between checks whether the watched stream has ended


def shutdown_socket(sock: socket.socket) -> None:
    """Shut ``sock`` down both ways (the plain-socket call, also for TLS sockets); never raises.

    On Linux this also aborts a ``connect`` still in progress (state SYN_SENT): the blocked
    call returns ``ECONNRESET`` at once.
    """
    with contextlib.suppress(OSError, ValueError, TypeError):
        socket.socket.shutdown(sock, socket.SHUT_RDWR)


class SocketWatcher:
    """Shuts the stream's current socket down when the cancel event is set, until ``stop()``.

    Args:
        cancel: the run's cancel event.

    The thread polls ``cancel.wait(0.1)`` only to notice ``stop()``; a cancel is seen at once.
    """

    def __init__(self, cancel: threading.Event) -> None:
        """Start the watcher thread (daemon)."""
        self._cancel = cancel
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._fired = False
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="miniagent-cancel", daemon=True)
        self._thread.start()

    @property
    def fired(self) -> bool:
        """Whether the cancel was seen (the stream's sockets were, or will be, shut down)."""
        return self._fired

    def attach(self, sock: socket.socket | None) -> None:
        """Watch ``sock`` (replacing the previous one); shut it at once if cancel already fired."""
        if sock is None:
            return
        with self._lock:
            if self._stopped:
                return
            self._sock = sock
            if self._fired:
                shutdown_socket(sock)

    def stop(self) -> bool:
        """Stop watching; the socket is never touched afterwards (it may be reused).

        Returns:
            ``True`` when the cancel never fired (the socket was not shut down by this watcher),
            ``False`` when it did (the connection must not be reused).
        """
        with self._lock:
            self._stopped = True
            self._sock = None
            return not self._fired

    def _run(self) -> None:
        while True:
            if self._cancel.wait(_WATCH_POLL):
                with self._lock:
                    if self._stopped:
                        return
                    self._fired = True
                    if self._sock is not None:
                        shutdown_socket(self._sock)  # under the lock: stop() cannot return meanwhile
                return
            with self._lock:
                if self._stopped:
                    return
