"""A real ``redis-server`` for the tests and the benchmarks: started on 127.0.0.1 and a free port,
without persistence, stopped by its PID.

``.ci/run`` installs the Debian package when it is missing; where it cannot be had, the tests that
need it are skipped with a loud reason (``redis_url_or_skip``).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["RedisServer", "redis_server"]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class RedisServer:
    """One ``redis-server`` child process; ``url`` is ``redis://127.0.0.1:PORT/0``."""

    def __init__(self, binary: str) -> None:
        self.folder = tempfile.mkdtemp(prefix="miniagent-redis-")
        self.process: subprocess.Popen[bytes] | None = None
        for _attempt in range(5):  # another process may take the free port first
            self.port = _free_port()
            options = ["--bind", "127.0.0.1", "--port", str(self.port), "--save", "", "--appendonly", "no"]
            self.process = subprocess.Popen(
                [binary, *options, "--dir", self.folder],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            if self._wait_ready(deadline=time.monotonic() + 10):
                return
            self._stop_process()
        shutil.rmtree(self.folder, ignore_errors=True)
        raise RuntimeError("redis-server did not start on a free loopback port")

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def _wait_ready(self, deadline: float) -> bool:
        assert self.process is not None
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as conn:
                    conn.sendall(b"PING\r\n")
                    if conn.recv(64).startswith(b"+PONG"):
                        return True
            except OSError:
                pass
            time.sleep(0.02)  # polling a starting server: the loop ends on PONG or the deadline
        return False

    def stop(self) -> None:
        """Terminate the server (by its PID), wait for it, remove its folder."""
        self._stop_process()
        shutil.rmtree(self.folder, ignore_errors=True)

    def _stop_process(self) -> None:
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@contextmanager
def redis_server() -> Iterator[RedisServer | None]:
    """A running server, or ``None`` when ``redis-server`` is not installed."""
    binary = shutil.which("redis-server")
    if binary is None:
        yield None
        return
    server = RedisServer(binary)
    try:
        yield server
    finally:
        server.stop()
