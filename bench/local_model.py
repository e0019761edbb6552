"""The main job on the embedded local model: cold and warm, before and after the prompt cache.

The job is what ``miniagent run --provider local "Please read the file notes.txt and tell me
what it says"`` does: the built-in tools on a small workspace, the CLI's default system prompt,
``max_turns=4``. Each run starts its own server (like a new CLI process) and is timed from the
start of the server to the answer; the first turn (the first model reply) is timed apart.

- "openai API (before)": the chat-completions endpoint with the Jinja template, as the local
  provider worked before the native client; no prompt cache survives the process.
- "native, cold": the native client with an empty prompt-cache folder (the fixed prefix is
  evaluated, then saved).
- "native, warm": the same again: the prefix is restored from the slot file.

Information plus one target: a warm native job at least 2x faster than the "before" job.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Any

from .common import Report, Row, have, load_average

PROMPT = "Please read the file notes.txt and tell me what it says"
NOTES = "The backup runs every night at 02:00 and keeps seven copies."


class _Timed:
    """Counts the model requests of a run and times the first one (until its last event)."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.requests = 0
        self.first = 0.0

    def stream(self, request: Any) -> Any:
        self.requests += 1
        started = time.perf_counter()
        yield from self.client.stream(request)
        if self.requests == 1:
            self.first = time.perf_counter() - started


def _job(api: str, workspace: str, prompt_cache: Path | None) -> dict[str, Any]:
    from miniagent import run_agent
    from miniagent.providers.local import create_local_client
    from miniagent.toolbox import default_tools

    tools = default_tools(workspace)
    try:
        from miniagent.cli.defaults import default_system_prompt

        system = default_system_prompt(Path(workspace), tools)
    except ImportError:  # the CLI extra is missing: a plain prompt
        system = "You are a helpful assistant. Use the tools to answer."
    started = time.perf_counter()
    options: dict[str, Any] = {"prompt_cache": prompt_cache} if api == "native" else {}
    client = create_local_client(api=api, **options)  # type: ignore[arg-type]
    start = time.perf_counter() - started
    try:
        timed = _Timed(client)
        result = run_agent(client=timed, system=system, tools=tools, user=PROMPT, max_turns=4)
    finally:
        client.close()
    total = time.perf_counter() - started
    answers = [m.content for m in result.messages if m.role == "assistant" and m.content]
    right = result.stop_reason == "complete" and bool(answers) and "02:00" in answers[-1]
    return {"total": total, "start": start, "first": timed.first, "turns": timed.requests, "right": right}


def _row(name: str, job: dict[str, Any], target: str = "", met: bool | None = None) -> Row:
    note = (
        f"server start {job['start']:.1f} s, first turn {job['first']:.1f} s, {job['turns']} turns, "
        f"answer {'right' if job['right'] else 'WRONG'}"
    )
    return Row(name, f"{job['total']:.1f} s", target, met, note)


def run(report: Report, quick: bool) -> None:
    section = report.section("local_model", "The main job on the embedded local model")
    if not have("xllamacpp"):
        report.skip("local model", "xllamacpp is not installed (pip install -e '.[local]')")
        return
    from miniagent.providers.local import LocalModelError, default_model_path

    try:
        default_model_path(download=False)
    except LocalModelError:
        try:
            default_model_path(download=True)
        except LocalModelError as error:
            report.skip("local model", f"the model could not be fetched: {error}")
            return
    load = load_average()
    with tempfile.TemporaryDirectory(prefix="bench-local-") as tmp:
        workspace = os.path.join(tmp, "ws")
        os.mkdir(workspace)
        Path(workspace, "notes.txt").write_text(NOTES + "\n")
        Path(workspace, "README.md").write_text("# demo\n")
        cache = Path(tmp, "prompt-cache")
        before = _job("openai", workspace, None)
        cold = _job("native", workspace, cache)
        warm = _job("native", workspace, cache)
        before_again = _job("openai", workspace, None)
    base = min(before["total"], before_again["total"])
    ratio = base / warm["total"] if warm["total"] else 0.0
    section.rows.append(_row("openai API (before), first run", before))
    section.rows.append(_row("openai API (before), again", before_again))
    section.rows.append(_row("native, cold (prefix evaluated and saved)", cold))
    section.rows.append(
        _row("native, warm (prefix restored from disk)", warm, "2x faster than before", ratio >= 2.0)
    )
    section.rows.append(
        Row("warm native vs before", f"{ratio:.1f}x", "", None, "the faster 'before' run counted")
    )
    section.notes.append(
        f"Job: `{PROMPT}` with the built-in tools, the CLI's default system prompt, max_turns=4, "
        f"greedy decoding; each run starts its own server, like a new CLI process. Load average at "
        f"the start: {load} (2 cores shared with other jobs: absolute times vary several-fold)."
    )
