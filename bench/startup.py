"""Start-up: what ``import miniagent`` and the CLI cost a cron job on every run.

- ``python -S -c pass`` against ``python -S -c "import miniagent"``, interleaved, many runs: the
  median of the paired differences. The child is the base interpreter without ``site`` and with the
  repository and the bench venv's site-packages on ``PYTHONPATH`` (see ``common.bare_env``), so no
  editable-install or other ``.pth`` hook runs and every package imports like a plain installed
  one; the strictest measure (modules ``site`` would have loaded are charged to the import).
- ``-X importtime``: the modules that ``import miniagent`` adds, by self time (median of runs).
- ``miniagent --help`` / ``--version``: the installed console script, wall time.
- The same import of the peers (``llm``, ``smolagents``, ``pydantic_ai``, ``agents``), same method.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections import defaultdict

from .common import (
    ROOT,
    Report,
    Row,
    bare_env,
    bare_python,
    fmt_ms,
    fmt_x,
    have,
    median,
    run_env,
    wall,
)

PEERS = ("llm", "smolagents", "pydantic_ai", "agents")
IMPORT_TARGET = 0.015
HELP_TARGET = 0.200
PEER_RATIO_TARGET = 10.0


def _paired(python: str, env: dict[str, str], code: str, runs: int) -> tuple[float, float]:
    """(median of ``import`` minus ``pass`` per pair, median of the ``import`` runs)."""
    base = [python, "-S", "-c", "pass"]
    test = [python, "-S", "-c", code]
    wall(test, env)  # warm-up: writes the bytecode caches
    diffs, totals = [], []
    for i in range(runs):
        if i % 2:
            t_test = wall(test, env)
            t_base = wall(base, env)
        else:
            t_base = wall(base, env)
            t_test = wall(test, env)
        diffs.append(t_test - t_base)
        totals.append(t_test)
    return median(diffs), median(totals)


def _importtime(python: str, env: dict[str, str], module: str, runs: int) -> list[tuple[str, float]]:
    """Modules ``import module`` adds over ``pass``, with their median self time (seconds)."""

    def parse(code: str) -> dict[str, int]:
        done = subprocess.run(
            [python, "-S", "-X", "importtime", "-c", code],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        out: dict[str, int] = {}
        for line in done.stderr.splitlines():
            if not line.startswith("import time:") or "self [us]" in line:
                continue
            self_us, _cumulative, name = line.split(":", 1)[1].split("|")
            out[name.strip()] = int(self_us)
        return out

    baseline = set(parse("pass"))
    samples: dict[str, list[int]] = defaultdict(list)
    for _ in range(runs):
        for name, self_us in parse(f"import {module}").items():
            if name not in baseline:
                samples[name].append(self_us)
    ranked = sorted(((name, median(v) / 1e6) for name, v in samples.items()), key=lambda x: -x[1])
    return ranked


def _cli_command() -> list[str] | None:
    script = shutil.which("miniagent", path=os.path.dirname(sys.executable))
    return [script] if script else None


def run(report: Report, quick: bool) -> None:
    section = report.section("startup", "Start-up")
    python, env = bare_python(), bare_env()
    runs = 15 if quick else 60
    peer_runs = 5 if quick else 9
    section.notes.append(
        f"Child interpreter: `{python} -S` (no `site`: nothing but the interpreter itself is loaded "
        "before the import, whatever `.pth` hooks the machine has) with the repository and the bench "
        "venv's site-packages on PYTHONPATH, bytecode caches warm. Import cost = median over "
        f'{runs} interleaved pairs of (`-c "import X"` minus `-c pass`).'
    )

    bare = median([wall([python, "-S", "-c", "pass"], env) for _ in range(max(5, runs // 4))])
    mini, mini_total = _paired(python, env, "import miniagent", runs)
    section.rows.append(Row("bare interpreter (`python -S -c pass`)", fmt_ms(bare)))
    section.rows.append(
        Row(
            "`import miniagent` over a bare interpreter",
            fmt_ms(mini),
            f"<= {IMPORT_TARGET * 1e3:.0f} ms",
            mini <= IMPORT_TARGET,
            f"whole process {fmt_ms(mini_total)}",
        )
    )

    top = _importtime(python, env, "miniagent", 3 if quick else 7)
    total = sum(t for _, t in top)
    listed = ", ".join(f"{name} {t * 1e3:.1f}" for name, t in top[:10])
    section.notes.append(
        f"`-X importtime` (self ms, median of runs; {len(top)} modules added, {total * 1e3:.1f} ms "
        f"summed under importtime's own overhead): {listed}"
    )
    mini_stdlib = sorted(name for name, _ in top if not name.startswith("miniagent"))
    section.notes.append("Standard-library modules `import miniagent` loads: " + ", ".join(mini_stdlib))

    cli = _cli_command()
    renv = run_env()
    launchers: list[tuple[str, list[str]]] = []
    if cli:
        launchers.append(("`miniagent` console script", cli))
    else:
        report.skip(
            "miniagent console script", "not found next to this interpreter (pip install -e '.[cli]')"
        )
    launchers.append(("`bin/miniagent`", [sys.executable, str(ROOT / "bin" / "miniagent")]))
    cli_runs = 7 if quick else 25
    for label, argv in launchers:
        for flag in ("--help", "--version"):
            try:
                wall([*argv, flag], renv)  # warm-up
                took = median([wall([*argv, flag], renv) for _ in range(cli_runs)])
            except RuntimeError as error:
                report.skip(f"{label} {flag}", str(error)[:200])
                continue
            target = f"< {HELP_TARGET * 1e3:.0f} ms" if flag == "--help" else ""
            met = took < HELP_TARGET if flag == "--help" else None
            section.rows.append(Row(f"{label} `{flag}` (wall)", fmt_ms(took), target, met))

    for peer in PEERS:
        if not have(peer):
            report.skip(f"import {peer}", "not installed in this venv (bench/requirements.txt)")
            continue
        try:
            cost, _ = _paired(python, env, f"import {peer}", peer_runs)
            # miniagent measured again in the same stretch of time, so the ratio is like for like
            again, _ = _paired(python, env, "import miniagent", peer_runs)
        except RuntimeError as error:
            report.skip(f"import {peer}", str(error).splitlines()[-1][:200])
            continue
        ratio = cost / max(again, 1e-4)
        section.rows.append(
            Row(
                f"`import {peer}` over a bare interpreter",
                fmt_ms(cost),
                f">= {PEER_RATIO_TARGET:.0f}x miniagent",
                ratio >= PEER_RATIO_TARGET,
                f"{fmt_x(ratio)} miniagent's {fmt_ms(again)} (measured alongside)",
            )
        )
