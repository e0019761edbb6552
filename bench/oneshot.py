"""A one-shot ``miniagent run`` against a loopback server: what a cron job pays per invocation.

The installed console script runs ``run --provider openai --base-url <loopback SSE server>`` with
a one-turn text answer, start to exit (wall, median). Its floor is a process that only imports the
CLI's two dependencies (``python -c "import typer, requests"``), measured interleaved in the same
stretch of time; the ratio is what the CLI adds on top of them (target <= 1.2x).

When ``llm`` (bench/requirements.txt) is installed, its CLI runs the same one-turn answer from
the same server (an ``extra-openai-models.yaml`` model whose ``api_base`` is the server; no
logging to its database), interleaved with the others.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile

from .common import Report, Row, fmt_ms, fmt_x, median, run_env, wall
from .server import SSEServer

RATIO_TARGET = 1.2


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
