"""A one-shot ``miniagent run`` against a loopback server: what a cron job pays per invocation.

The installed console script runs ``run --provider openai --base-url <loopback SSE server>`` with
a one-turn text answer, start to exit (wall, median). Its floor is a process that only imports the
CLI's two dependencies (``python -c "import typer, requests"``), measured interleaved in the same
stretch of time; the ratio is what the CLI adds on top of them (target <= 1.2x).

The same run with its options in a configuration file's profile (``--profile bench``: provider,
base URL, model, turns, timeout, approval and a budget read from ``config.toml`` and checked by
each option's own checks) against the same run with flags and no file, interleaved: what the
configuration files cost a cron job (target <= 5 ms more).

When ``llm`` (bench/requirements.txt) is installed, its CLI runs the same one-turn answer from
the same server (an ``extra-openai-models.yaml`` model whose ``api_base`` is the server; no
logging to its database), interleaved with the others.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile

from .common import Report, Row, fmt_ms, fmt_x, load_average, median, run_env, wall
from .server import SSEServer

RATIO_TARGET = 1.2
PROFILE_TARGET_MS = 5.0


def _answer() -> bytes:
    chunks = [
        {
            "choices": [
                {"index": 0, "delta": {"role": "assistant", "content": "Done."}, "finish_reason": None}
            ]
        },
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ]
    return b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"


def _llm_command(home: str, base_url: str) -> list[str] | None:
    """The argv of ``llm`` answering "hi" from ``base_url`` (its config written to ``home``)."""
    script = shutil.which("llm", path=os.path.dirname(sys.executable))
    if not script:
        return None
    with open(os.path.join(home, "extra-openai-models.yaml"), "w", encoding="utf-8") as config:
        config.write(f"- model_id: fake\n  model_name: fake\n  api_base: {base_url}\n")
    return [script, "-m", "fake", "--no-log", "hi"]


def run(report: Report, quick: bool) -> None:
    section = report.section("oneshot", "One-shot run (start-up a cron job pays)")
    section.notes.append(
        f"Load average when this section started: {load_average()} (other jobs on the 2 cores): wall "
        "times of whole runs scatter by tens of milliseconds; the profile's target is therefore on "
        "the parse of run's options in a fresh interpreter, the only work that differs between the "
        "two runs (the config modules, the file or its parse cache, every value checked)."
    )
    script = shutil.which("miniagent", path=os.path.dirname(sys.executable))
    if not script:
        report.skip(
            "one-shot run", "console script not found next to this interpreter (pip install -e '.[cli]')"
        )
        return
    runs = 5 if quick else 15
    env = run_env()
    env.pop("OPENAI_API_KEY", None)
    env.pop("ANTHROPIC_API_KEY", None)
    floor_argv = [sys.executable, "-c", "import typer, requests"]
    with SSEServer() as server, tempfile.TemporaryDirectory() as workspace:
        server.add("oneshot", "openai", _answer())
        argv = [script, "run", "--provider", "openai", "--base-url", server.openai_base("oneshot")]
        argv += ["--model", "m", "--workspace", workspace, "hi"]
        llm = _llm_command(workspace, server.openai_base("oneshot"))
        llm_env = dict(env, LLM_USER_PATH=workspace, OPENAI_API_KEY="unused-by-the-fake-server")
        wall(argv, env)  # warm-up: bytecode caches
        wall(floor_argv, env)
        if llm:
            wall(llm, llm_env)
        ours, floor, peer = [], [], []
        for _ in range(runs):
            ours.append(wall(argv, env))
            floor.append(wall(floor_argv, env))
            if llm:
                peer.append(wall(llm, llm_env))
    one, base = median(ours), median(floor)
    ratio = one / max(base, 1e-4)
    section.rows.append(Row('import floor: `python -c "import typer, requests"` (wall)', fmt_ms(base)))
    section.rows.append(
        Row(
            "`miniagent run` one turn against a loopback server (wall)",
            fmt_ms(one),
            f"<= {RATIO_TARGET}x the floor",
            ratio <= RATIO_TARGET,
            f"{fmt_x(ratio)} the floor",
        )
    )
    _profile_rows(section.rows, script, env, runs)
    if not peer:
        report.skip("llm one-shot", "llm not installed in this venv (bench/requirements.txt)")
        return
    theirs = median(peer)
    section.rows.append(
        Row(
            "`llm -m fake hi`, same server, same answer (wall)",
            fmt_ms(theirs),
            note=f"{fmt_x(theirs / max(one, 1e-4))} miniagent's one-shot run",
        )
    )


_PARSE_CHILD = """
import sys, time
import typer
from miniagent.cli.app import app
group = typer.main.get_command(app)
root = group.make_context("miniagent", ["run"])
start = time.perf_counter()
group.commands["run"].make_context("run", sys.argv[1:], parent=root)
print(time.perf_counter() - start)
"""


def _parse_seconds(argv: list[str], env: dict[str, str], cwd: str) -> float:
    """Seconds ``run``'s options take to parse in a fresh interpreter (the profile's first use:
    its modules imported, its file read, every value checked)."""
    done = subprocess.run(
        [sys.executable, "-c", _PARSE_CHILD, *argv],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    return float(done.stdout.strip().splitlines()[-1])


def _profile_rows(rows: list[Row], script: str, env: dict[str, str], runs: int) -> None:
    """``run --profile bench`` (the options in a file) against the same options as flags: wall
    time of the whole run, and the parse of the options alone in a fresh interpreter."""
    with SSEServer() as server, tempfile.TemporaryDirectory() as home:
        server.add("profile", "openai", _answer())
        base = server.openai_base("profile")
        workspace = os.path.join(home, "ws")
        os.makedirs(os.path.join(home, "with", "miniagent"))
        os.makedirs(os.path.join(home, "without"))
        os.makedirs(workspace)
        options = {"provider": "openai", "base-url": base, "model": "m", "max-turns": 4}
        options.update({"timeout": 60, "approve": "read-only", "max-total-tokens": 100000})
        lines = ["max-repeats = 3", "", "[profiles.bench]"]
        lines += [f"{key} = {json.dumps(value)}" for key, value in options.items()]
        with open(os.path.join(home, "with", "miniagent", "config.toml"), "w", encoding="utf-8") as file:
            file.write("\n".join(lines) + "\n")
        flags = [item for key, value in options.items() for item in (f"--{key}", str(value))]
        plain = [*flags, "--max-repeats", "3", "--workspace", workspace, "hi"]
        profiled = ["--profile", "bench", "--workspace", workspace, "hi"]
        plain_env = dict(env, XDG_CONFIG_HOME=os.path.join(home, "without"))
        profile_env = dict(env, XDG_CONFIG_HOME=os.path.join(home, "with"))
        wall([script, "run", *plain], plain_env, cwd=workspace)
        wall([script, "run", *profiled], profile_env, cwd=workspace)  # warm-up: the parse cache
        without, with_profile, parse_plain, parse_profile, parse_cold = [], [], [], [], []
        for number in range(runs * 2):
            without.append(wall([script, "run", *plain], plain_env, cwd=workspace))
            with_profile.append(wall([script, "run", *profiled], profile_env, cwd=workspace))
            parse_plain.append(_parse_seconds(plain, plain_env, workspace))
            parse_profile.append(_parse_seconds(profiled, profile_env, workspace))
            cold_env = dict(profile_env, XDG_STATE_HOME=os.path.join(home, f"state-{number}"))
            parse_cold.append(_parse_seconds(profiled, cold_env, workspace))
    _add_profile_rows(rows, (without, with_profile), (parse_plain, parse_profile, parse_cold))


def _add_profile_rows(
    rows: list[Row],
    walls: tuple[list[float], list[float]],
    parses: tuple[list[float], list[float], list[float]],
) -> None:
    """The target is on the parse in a fresh interpreter: everything else of the two runs is the
    same (same options, same answer), and on a loaded machine the wall times of whole runs scatter
    by tens of milliseconds (reported beside it)."""
    without, with_profile = walls
    plain, profile, cold = (median(values) * 1000 for values in parses)
    paired_ms = median([b - a for a, b in zip(without, with_profile, strict=True)]) * 1000
    floor_ms = (min(with_profile) - min(without)) * 1000
    rows.append(
        Row(
            "`miniagent run --profile bench` (options from config.toml): extra cost over the same flags",
            f"{profile - plain:+.2f} ms",
            f"<= {PROFILE_TARGET_MS:g} ms",
            profile - plain <= PROFILE_TARGET_MS,
            f"parse of run's options in a fresh interpreter (the config modules, the file, every value "
            f"checked), medians of {len(parses[0])}: {profile:.2f} ms vs {plain:.2f} ms",
        )
    )
    rows.append(
        Row(
            "same, first run after the file changed (no parse cache: tomllib imported)",
            f"{cold - plain:+.2f} ms",
            note=f"{cold:.2f} ms vs {plain:.2f} ms",
        )
    )
    rows.append(
        Row(
            "`miniagent run --profile bench` over flags, whole runs (wall)",
            f"{paired_ms:+.1f} ms",
            note=f"median of {len(without)} interleaved pairs; fastest runs {floor_ms:+.1f} ms; medians "
            f"{fmt_ms(median(without))} flags, {fmt_ms(median(with_profile))} profile",
        )
    )
