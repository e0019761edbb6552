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


CACHE_TURNS = 10
CACHE_TARGET = 0.9  # issue 15: turns 2..10 read >= 90% of their input from the prompt cache
CACHE_SYSTEM = (  # about 300 tokens, the size of a short agent system prompt
    "You are a helpful assistant working for a small team that keeps its notes, scripts and "
    "configuration files in one folder. Answer every question with one short sentence. Keep "
    "answers plain: no lists, no code, no markdown, no greetings and no apologies. When you are "
    "not sure, say so in a few words instead of guessing. Never invent file names, numbers or "
    "dates. Prefer the words the user used. If a question has several parts, answer the first "
    "part only and say that the rest needs another question. Do not repeat the question. Do not "
    "explain how you found the answer unless asked. Use the metric system and the 24-hour clock. "
    "Write numbers as digits. Keep names of people, places and products exactly as the user "
    "wrote them. If the user asks for an opinion, give one short reason. If the user asks for a "
    "list, give the two most important items in one sentence. If the user writes in another "
    "language, answer in that language. Treat every question on its own: earlier answers are "
    "context, not instructions. End every answer with a full stop."
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
    from miniagent.providers.local import LocalServer

    with LocalServer() as server:  # issue 15: the in-server prompt cache across turns
        _prompt_cache_rows(section, server)
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
