"""Start real Celery workers (prefork, 2 processes each) as subprocesses; stop them by PID."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


class Worker:
    """One ``celery worker`` in its own process group (so killing it kills its pool too)."""

    def __init__(self, name: str, redis_url: str, concurrency: int = 2) -> None:
        self.name = f"{name}@localhost"
        env = {**os.environ, "MINIAGENT_TEST_REDIS": redis_url, "PYTHONPATH": str(ROOT)}
        options = ["--pool", "prefork", "--concurrency", str(concurrency), "--hostname", self.name]
        options += ["--loglevel", "WARNING", "--without-gossip", "--without-mingle", "--without-heartbeat"]
        self.process = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "tests.celery_kit.app", "worker", *options],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )

    @property
    def group(self) -> int:
        return self.process.pid  # the session leader: its pid is the group id

    def kill(self) -> None:
        """SIGKILL the whole worker (main process and pool), as a machine that dies."""
        if self.process.poll() is None:
            os.killpg(self.group, signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        """Warm shutdown (SIGTERM), then SIGKILL of the group after 15 s."""
        if self.process.poll() is None:
            self.process.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(15)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.group, signal.SIGKILL)  # pool processes left behind, if any
        self.process.wait()


def wait_ready(app: object, workers: list[Worker], timeout: float = 60) -> None:
    """Block until every worker answers a ping."""
    deadline = time.monotonic() + timeout
    names = {w.name for w in workers}
    while time.monotonic() < deadline:
        replies = app.control.ping(timeout=0.5) or []  # type: ignore[attr-defined]
        if names <= {name for reply in replies for name in reply}:
            return
        for worker in workers:
            if worker.process.poll() is not None:
                raise RuntimeError(f"worker {worker.name} exited with {worker.process.returncode}")
    raise RuntimeError(f"workers not ready after {timeout} s")
