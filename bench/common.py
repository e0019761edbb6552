"""Shared pieces of the benchmarks: the report, statistics, the machine, subprocess timing."""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

PEER_DISTRIBUTIONS = (
    "llm",
    "smolagents",
    "pydantic-ai-slim",
    "openai-agents",
    "openai",
    "anthropic",
    "requests",
    "xllamacpp",
)


@dataclass
class Row:
    """One measured figure."""

    name: str
    value: str
    target: str = ""
    met: bool | None = None  # None: information only
    note: str = ""


@dataclass
class Section:
    key: str
    title: str
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0


class Report:
    """Everything the benchmarks measured, in order of sections."""

    def __init__(self, quick: bool) -> None:
        self.quick = quick
        self.sections: list[Section] = []
        self.skipped: list[str] = []

    def section(self, key: str, title: str) -> Section:
        section = Section(key, title)
        self.sections.append(section)
        return section

    def skip(self, what: str, why: str) -> None:
        self.skipped.append(f"{what}: {why}")


# --- statistics -----------------------------------------------------------------------------------


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100)."""
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def fmt_ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms"


def fmt_us(seconds: float) -> str:
    return f"{seconds * 1e6:.1f} µs"


def fmt_x(ratio: float) -> str:
    return f"{ratio:.2f}x" if ratio < 100 else f"{ratio:.0f}x"


def fmt_rate(value: float, unit: str) -> str:
    if value >= 1e6:
        return f"{value / 1e6:.2f} M{unit}"
    if value >= 1e3:
        return f"{value / 1e3:.1f} k{unit}"
    return f"{value:.1f} {unit}"


def timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def repeat(fn: Callable[[], Any], times: int, setup: Callable[[], Any] | None = None) -> list[float]:
    """Run ``fn`` ``times`` times (``setup`` before each, not timed); the durations in seconds."""
    out = []
    for _ in range(times):
        if setup is not None:
            setup()
        out.append(timed(fn))
    return out


# --- the machine ----------------------------------------------------------------------------------


def cpu_model() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def load_average() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def machine() -> dict[str, str]:
    mem = ""
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
    return {
        "CPU": cpu_model(),
        "cores": str(os.cpu_count()),
        "memory": mem or "n/a",
        "Python": f"{platform.python_implementation()} {platform.python_version()}",
        "OS": f"{platform.system()} {platform.release()} ({platform.libc_ver()[0]} {platform.libc_ver()[1]})",
    }


def versions() -> dict[str, str]:
    out: dict[str, str] = {}
    for name in PEER_DISTRIBUTIONS:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def have(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


# --- subprocesses ---------------------------------------------------------------------------------


def site_packages() -> list[str]:
    """This interpreter's site-packages folders (the bench venv's)."""
    import site

    paths = list(site.getsitepackages())
    with contextlib.suppress(AttributeError):
        user = site.getusersitepackages()
        if user and os.path.isdir(user) and user not in paths:
            paths.append(user)
    return [p for p in paths if os.path.isdir(p)]


def bare_python() -> str:
    """The base interpreter behind this venv (no site-packages ``.pth`` hooks of the venv)."""
    base = getattr(sys, "_base_executable", None) or sys.executable
    return base if os.path.exists(base) else sys.executable


def bare_env() -> dict[str, str]:
    """Environment for timed child interpreters.

    ``PYTHONPATH`` = the repository root, then the bench venv's site-packages: every package
    (miniagent and the peers) imports as from a plain folder, with no editable-install finder or
    other ``.pth`` hook loaded at start-up. ``PYTHONDONTWRITEBYTECODE`` is dropped so that the
    ``.pyc`` caches exist after the warm-up run, as they do for any installed package.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *site_packages()])
    return env


def run_env() -> dict[str, str]:
    """Environment for child processes that run the installed commands (bytecode caches on)."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def wall(argv: Sequence[str], env: dict[str, str], cwd: str | None = None) -> float:
    """Wall time of one child process (start to exit), seconds; raises if it fails."""
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.decode()[-500:]}")
    return elapsed


@contextlib.contextmanager
def stopwatch() -> Iterator[list[float]]:
    box: list[float] = []
    start = time.perf_counter()
    try:
        yield box
    finally:
        box.append(time.perf_counter() - start)
