"""The main job on the embedded local model (information, no target).

``create_client("local")`` starts llama.cpp's server in-process with the default
SmolLM2-135M-Instruct (cached under ``~/.cache/miniagent``; a fetch, when needed, is timed and
reported apart). The job is what ``miniagent run`` does: the built-in tools on a small workspace,
the CLI's default system prompt, a prompt that needs a tool, ``max_turns=4``.

- first run: server start + the job (cold caches, first prompt processing);
- warm run: the same job again on the running server;
- seconds per turn (wall time / model requests) and tokens per second as llama.cpp reports them
  (``timings`` of a direct, non-streamed completion of 128 tokens).
"""

from __future__ import annotations

import json
import os
import tempfile
import time
import urllib.request
from typing import Any

from .common import Report, Row, have

PROMPT = "Read the file notes.txt and tell me what it says."


class _Counting:
    """Counts the model requests of a run."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.requests = 0

    def stream(self, request: Any) -> Any:
        self.requests += 1
        return self.client.stream(request)


def _job(client: Any, workspace: str) -> tuple[float, int, str]:
    from pathlib import Path

    from miniagent import run_agent
    from miniagent.toolbox import default_tools

    tools = default_tools(workspace)
    try:
        from miniagent.cli import default_system_prompt

        system = default_system_prompt(Path(workspace), tools)
    except ImportError:  # the CLI extra is missing: a plain prompt
        system = "You are a helpful assistant. Use the tools to answer."
    counting = _Counting(client)
    start = time.perf_counter()
    result = run_agent(client=counting, system=system, tools=tools, user=PROMPT, max_turns=4)
    elapsed = time.perf_counter() - start
    return elapsed, counting.requests, result.stop_reason


def _timings(base_url: str) -> dict[str, Any]:
    body = json.dumps(
        {
            "messages": [
                {"role": "user", "content": "Write a short story about a robot who learns to cook."}
            ],
            "max_tokens": 128,
            "temperature": 0,
        }
    ).encode()
    request = urllib.request.Request(
        f"{base_url}/v1/chat/completions", data=body, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=120) as response:
        data = json.loads(response.read())
    timings: dict[str, Any] = data.get("timings") or {}
    return timings


CACHE_TURNS = 10
CACHE_TARGET = 0.9  # issue 15: turns 2..10 read >= 90% of their input from the prompt cache
CACHE_SYSTEM = (
    "You are a helpful assistant. Answer every question with one short sentence. "
    "Keep answers plain: no lists, no code, no markdown."
)


def _conversation(server: Any, stable: bool) -> tuple[list[float], list[Any]]:
    """A ``CACHE_TURNS``-turn conversation through the OpenAI client (usage asked for): per-turn
    seconds and ``Usage``. ``stable=False`` starts the system prompt with a per-request value,
    as a timestamp would, so no request shares a prefix with the one before."""
    from miniagent import Message, ModelRequest, TextEvent, UsageEvent

    client = server.openai_client(max_tokens=24)
    history: list[Any] = []
    seconds: list[float] = []
    usages: list[Any] = []
    try:
        for turn in range(CACHE_TURNS):
            system = CACHE_SYSTEM if stable else f"Request {time.time_ns()}. {CACHE_SYSTEM}"
            history.append(Message("user", f"Question {turn + 1}: name one colour of the rainbow."))
            start = time.perf_counter()
            events = list(client.stream(ModelRequest(system, list(history), ())))
            seconds.append(time.perf_counter() - start)
            text = "".join(e.text for e in events if isinstance(e, TextEvent))
            history.append(Message("assistant", text or "Red."))
            usages += [e.usage for e in events if isinstance(e, UsageEvent)]
    finally:
        client.close()
    return seconds, usages


def _prompt_cache_rows(section: Any, server: Any) -> None:
    """Rows: the cached share of turns 2..10 with a stable prefix, and per-turn latency with and
    without one (the llama.cpp server reuses the longest common token prefix of its slot)."""
    from .common import median

    stable_seconds, stable = _conversation(server, stable=True)
    moving_seconds, moving = _conversation(server, stable=False)
    later = stable[1:]
    if len(later) != CACHE_TURNS - 1 or not all(u.input_tokens for u in later):
        section.rows.append(Row("prompt cache", "no usage reported", "", None, ""))
        return
    share = min(u.cache_read_tokens / u.input_tokens for u in later)
    section.rows.append(
        Row(
            f"prompt cache: cached share of input, turns 2..{CACHE_TURNS} (stable prefix)",
            f"{share:.0%} (lowest)",
            f">= {CACHE_TARGET:.0%}",
            share >= CACHE_TARGET,
            f"{sum(u.cache_read_tokens for u in later)} of {sum(u.input_tokens for u in later)} input tokens "
            "read from the cache",
        )
    )
    moving_input = max(1, sum(u.input_tokens for u in moving[1:]))
    moving_share = sum(u.cache_read_tokens for u in moving[1:]) / moving_input
    stable_turn, moving_turn = median(stable_seconds[1:]), median(moving_seconds[1:])
    section.rows.append(
        Row(
            f"prompt cache: seconds per turn, turns 2..{CACHE_TURNS}",
            f"{stable_turn:.2f} s stable, {moving_turn:.2f} s without",
            "",
            None,
            f"{moving_turn / stable_turn:.2f}x slower when the system prompt starts with a per-request "
            f"value ({moving_share:.0%} cached)",
        )
    )


def run(report: Report, quick: bool) -> None:
    section = report.section("local_model", "The main job on the embedded local model")
    if not have("xllamacpp"):
        report.skip("local model", "xllamacpp is not installed (pip install -e '.[local]')")
        return
    from miniagent.providers import create_client
    from miniagent.providers.local import LocalModelError, default_model_path

    try:
        default_model_path(download=False)
        section.rows.append(Row("model fetch", "cached", "", None, "already under the cache; not timed"))
    except LocalModelError:
        start = time.perf_counter()
        try:
            default_model_path(download=True)
        except LocalModelError as error:
            report.skip("local model", f"the model could not be fetched: {error}")
            return
        section.rows.append(Row("model fetch (once, excluded below)", f"{time.perf_counter() - start:.1f} s"))

    with tempfile.TemporaryDirectory(prefix="bench-local-") as workspace:
        with open(os.path.join(workspace, "notes.txt"), "w") as stream:
            stream.write("The backup runs every night at 02:00 and keeps seven copies.\n")
        with open(os.path.join(workspace, "README.md"), "w") as stream:
            stream.write("# demo\n")
        start = time.perf_counter()
        client: Any = create_client("local")
        started = time.perf_counter() - start
        try:
            first, first_turns, first_stop = _job(client, workspace)
            section.rows.append(Row("server start (model load, health check)", f"{started:.2f} s"))
            section.rows.append(
                Row(
                    "first run: start + job",
                    f"{started + first:.2f} s",
                    "",
                    None,
                    f"job {first:.2f} s, {first_turns} turns "
                    f"({first / max(1, first_turns):.2f} s/turn), {first_stop}",
                )
            )
            warm_runs = [_job(client, workspace) for _ in range(1 if quick or first > 20 else 3)]
            warm_runs.sort()
            warm, warm_turns, warm_stop = warm_runs[len(warm_runs) // 2]
            section.rows.append(
                Row(
                    "warm run: job on the running server",
                    f"{warm:.2f} s",
                    "",
                    None,
                    f"{warm_turns} turns ({warm / max(1, warm_turns):.2f} s/turn), {warm_stop}",
                )
            )
            _prompt_cache_rows(section, client.server)
            timings = _timings(client.server.base_url)
            if timings:
                section.rows.append(
                    Row(
                        "generation speed (llama.cpp timings)",
                        f"{timings.get('predicted_per_second', 0):.0f} tokens/s",
                        "",
                        None,
                        f"prompt processing {timings.get('prompt_per_second', 0):.0f} tokens/s; "
                        f"{timings.get('predicted_n', '?')} tokens generated",
                    )
                )
        finally:
            client.close()
    section.notes.append(
        f"Job: `{PROMPT}` with the built-in tools on a two-file workspace, the CLI's default system "
        "prompt, max_turns=4, greedy decoding. Information only: the model's speed, not the loop's."
    )
