"""Long runs: compaction and the prompt cache, on a loopback Anthropic fake.

The fake is a real HTTP server on 127.0.0.1 that speaks the Messages API's SSE stream and counts
the prompt cache as Anthropic documents it
(https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching): the prompt is the blocks
``tools``, then ``system``, then each message's content blocks, in that order; a request writes a
cache entry for the prefix ending at each ``cache_control`` breakpoint, and reads the longest
earlier entry that is a prefix of it, looked for at each of its breakpoints and up to 20 blocks
before it. Tokens are characters of each block's JSON / 4. Every request reports
``input_tokens`` (the uncached part), ``cache_read_input_tokens`` and
``cache_creation_input_tokens``, as the API does; the real ``AnthropicClient`` reads them.

The model of the fake: every turn request is answered with one ``read`` call (a seeded size of
result), the summary request (a request without tools) with a summary of 2,000 characters. The
window is 32,768 tokens.

Per-turn overhead without compaction: the loop benchmark's run (a trivial tool every turn, in
memory, and with ``context_max_chars``), in a child process each, alternating this tree and the
tree of the commit this branch started from (``git archive`` of the merge base with ``main``),
CPU time of the run's thread, min of runs.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .common import ROOT, Report, Row, Section, fmt_us, load_average

WINDOW = 32_768
TRIGGER = 24_000
CACHED_TARGET = 0.90
OVERHEAD_TARGET = 1.05  # per-turn overhead without compaction: within 5% of the base commit
LOOKBACK = 20  # blocks before a breakpoint where a cache hit is looked for


# --- the fake ---------------------------------------------------------------------------------------


@dataclass
class Counted:
    """One request as the fake counted it (tokens)."""

    summary: bool
    total: int
    read: int
    written: int


def _blocks(body: dict[str, Any]) -> tuple[list[str], list[int]]:
    """The prompt's blocks in cache order (each as canonical JSON with its place, without
    ``cache_control``) and the indexes of the blocks that carried a breakpoint."""
    blocks: list[str] = []
    breakpoints: list[int] = []

    def add(place: str, block: dict[str, Any]) -> None:
        if "cache_control" in block:
            breakpoints.append(len(blocks))
        plain = {k: v for k, v in block.items() if k != "cache_control"}
        blocks.append(place + json.dumps(plain, sort_keys=True, separators=(",", ":")))

    for tool in body.get("tools", []):
        add("tool:", tool)
    system = body.get("system")
    if isinstance(system, str):
        add("system:", {"type": "text", "text": system})
    for block in system if isinstance(system, list) else []:
        add("system:", block)
    for number, message in enumerate(body["messages"]):
        for block in message["content"]:
            add(f"{number}:{message['role']}:", block)
    return blocks, breakpoints


class PromptCache:
    """The cache of one API key: prefix hashes -> their token counts."""

    def __init__(self) -> None:
        self.entries: set[str] = set()
        self.lock = threading.Lock()

    def count(self, body: dict[str, Any]) -> tuple[int, int, int]:
        """``(total, read, written)`` tokens of a request, and its entries written."""
        blocks, breakpoints = _blocks(body)
        digest = hashlib.sha256()
        keys: list[str] = []
        cumulative: list[int] = []
        total = 0
        for block in blocks:
            digest.update(block.encode())
            digest.update(b"\0")
            keys.append(digest.hexdigest())
            total += -(-len(block) // 4)
            cumulative.append(total)
        with self.lock:
            read_end = -1
            for point in breakpoints:
                for index in range(point, max(-1, point - LOOKBACK - 1), -1):
                    if keys[index] in self.entries:
                        read_end = max(read_end, index)
                        break
            read = cumulative[read_end] if read_end >= 0 else 0
            written = 0
            if breakpoints:
                written = max(0, cumulative[breakpoints[-1]] - read)
                self.entries.update(keys[point] for point in breakpoints)
        return total, read, written


@dataclass
class Script:
    """What the fake model answers."""

    sizes: list[int]
    summary_chars: int = 2_000
    turns: int = 0
    counted: list[Counted] = field(default_factory=list)


def _sse(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


def _answer(script: Script, summary: bool, usage: dict[str, int]) -> bytes:
    start = {
        "type": "message_start",
        "message": {
            "id": "msg",
            "type": "message",
            "role": "assistant",
            "content": [],
            "model": "bench",
            "usage": usage,
        },
    }
    out = [_sse("message_start", start)]
    if summary:
        text = "S" * script.summary_chars
        out += [
            _sse(
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            ),
            _sse(
                "content_block_delta",
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
            ),
            _sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ]
        stop = "end_turn"
    else:
        turn = script.turns
        script.turns += 1
        arguments = json.dumps({"n": script.sizes[turn % len(script.sizes)]})
        out += [
            _sse(
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "tool_use", "id": f"toolu_{turn}", "name": "read", "input": {}},
                },
            ),
            _sse(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": arguments},
                },
            ),
            _sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ]
        stop = "tool_use"
    out += [
        _sse(
            "message_delta",
            {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 20}},
        ),
        _sse("message_stop", {"type": "message_stop"}),
    ]
    return b"".join(out)


@contextlib.contextmanager
def fake_anthropic(script: Script) -> Iterator[str]:
    """Serve the fake on 127.0.0.1; yields its base URL."""
    cache = PromptCache()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            total, read, written = cache.count(body)
            summary = "tools" not in body
            script.counted.append(Counted(summary, total, read, written))
            usage = {
                "input_tokens": total - read - written,
                "cache_read_input_tokens": read,
                "cache_creation_input_tokens": written,
                "output_tokens": 1,
            }
            payload = _answer(script, summary, usage)
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


# --- runs -------------------------------------------------------------------------------------------


def _sizes(seed: int, count: int) -> list[int]:
    rng = random.Random(seed)
    return [rng.choice([100, 400, 1_000, 2_500, 6_000]) for _ in range(count)]


def _run(turns: int, **options: Any) -> tuple[Script, int]:
    """A run of ``turns`` turns against the fake: what it counted, and how many summaries the
    record holds."""
    from miniagent import Summary, run_agent, tool
    from miniagent.providers import AnthropicClient

    @tool
    def read(n: int) -> str:
        """Read n characters of a file.

        Args:
            n: how many characters.
        """
        return ("log line: build step ok\n" * (n // 24 + 1))[:n]

    script = Script(_sizes(31, turns))
    with fake_anthropic(script) as url:
        client = AnthropicClient(
            "claude-bench", base_url=url, api_key="bench-key", prices={"input": 3.0, "output": 15.0}
        )
        try:
            result = run_agent(
                client=client,
                system="You fix builds. " * 20,
                tools=[read],
                user="fix the build",
                max_turns=turns,
                **options,
            )
        finally:
            client.close()
    assert result.stop_reason == "max_turns", result.stop_reason
    return script, sum(1 for m in result.messages if isinstance(m, Summary))


def _share(counted: list[Counted]) -> float:
    total = sum(c.total for c in counted)
    return sum(c.read for c in counted) / total if total else 0.0


def _compaction_rows(section: Section, turns: int) -> None:
    from miniagent import Compaction

    script, compactions = _run(turns, compaction=Compaction(TRIGGER))
    counted = script.counted
    summaries = [i for i, c in enumerate(counted) if c.summary]
    over = [c for c in counted if c.total > WINDOW]
    section.rows.append(
        Row(
            f"requests over the {WINDOW:,}-token window, {turns} turns",
            str(len(over)),
            "0",
            not over,
            f"{len(counted)} requests, the largest {max(c.total for c in counted):,} tokens",
        )
    )
    section.rows.append(
        Row(
            "extra requests per compaction",
            f"{len(summaries)} for {compactions}",
            "<= 1",
            len(summaries) <= compactions,
            f"--compact-at {TRIGGER:,}: a compaction every "
            f"{(turns / max(1, len(summaries))):.0f} turns on average",
        )
    )
    if not summaries:
        return
    after = [c for c in counted[summaries[0] :] if not c.summary]
    share = _share(after)
    section.rows.append(
        Row(
            "cached share of input tokens, turn requests after the first compaction",
            f"{100 * share:.1f}%",
            f">= {100 * CACHED_TARGET:.0f}%",
            share >= CACHED_TARGET,
            f"{len(after)} requests",
        )
    )
    firsts = [counted[i + 1] for i in summaries if i + 1 < len(counted)]
    section.rows.append(
        Row(
            "  the first request after each compaction",
            f"{100 * _share(firsts):.1f}%",
            "",
            None,
            "tools and system read from the cache; the summary and kept units written",
        )
    )
    section.rows.append(
        Row(
            "  with the summary requests counted too",
            f"{100 * _share(counted[summaries[0] :]):.1f}%",
            "",
            None,
            "a summary request shares no prefix with the turns (no tools; a transcript)",
        )
    )


def _trim_rows(section: Section, turns: int) -> None:
    import miniagent.context as context

    budget = 60_000
    shares: dict[str, float] = {}
    saved = context.SLACK
    for label, slack in (("with slack", saved), ("longest suffix (before)", 10**9)):
        context.SLACK = slack
        try:
            counted = _run(turns, context_max_chars=budget)[0].counted
        finally:
            context.SLACK = saved
        full = next((i for i, c in enumerate(counted) if c.total > budget // 4 * 0.9), len(counted))
        shares[label] = _share(counted[full:])
    section.rows.append(
        Row(
            f"trimming without compaction (context_max_chars={budget:,}), cached share",
            f"{100 * shares['with slack']:.1f}%",
            "",
            None,
            f"{100 * shares['longest suffix (before)']:.1f}% when trimming dropped the fewest units each "
            "request (the trimmer before this change), once the budget was full",
        )
    )


# --- per-turn overhead against the base commit ---------------------------------------------------------


_CHILD = """
import sys, time
from miniagent import ToolCall, run_agent, tool
from miniagent.testing import ScriptedClient

@tool
def ping(x: int) -> str:
    \"\"\"Answer pong.

    Args:
        x: any number.
    \"\"\"
    return "pong"

def cost(turns, mode):
    script = [[ToolCall(f"call_{i}", "ping", {"x": i})] for i in range(turns - 1)] + [["done"]]
    client = ScriptedClient(script, record_messages=False)
    options = {"context_max_chars": 2_000} if mode == "trim" else {}
    start = time.thread_time()
    run_agent(client=client, system="bench", tools=[ping], user="go", max_turns=turns, **options)
    return (time.thread_time() - start) / turns

mode, runs = sys.argv[1], int(sys.argv[2])
cost(200, mode)
print(min(cost(2_000, mode) for _ in range(runs)))
"""


def _base_tree(folder: str) -> str | None:
    """The tree of the merge base with ``main``, unpacked into ``folder``; ``None`` without git."""
    try:
        base = subprocess.run(
            ["git", "merge-base", "HEAD", "main"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
        archive = subprocess.run(["git", "archive", base], cwd=ROOT, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", folder], input=archive, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return base


def _child_cost(root: str, mode: str, runs: int) -> float:
    """CPU seconds per turn of the loop benchmark's run (2,000 turns), min of ``runs``, in a child
    that imports the ``miniagent`` of ``root`` (CPU time of the thread: what the loop costs,
    without the time other processes of a loaded machine take)."""
    env = {**os.environ, "PYTHONPATH": root, "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run(
        [sys.executable, "-B", "-c", _CHILD, mode, str(runs)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return float(done.stdout.strip().splitlines()[-1])


def _overhead_rows(section: Section, report: Report, quick: bool) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-base-") as folder:
        base = _base_tree(folder)
        if base is None:
            report.skip("compaction: per-turn overhead against the base commit", "no git history here")
            return
        rounds, runs = (3, 3) if quick else (10, 5)
        for mode, label in (("memory", "in memory"), ("trim", "with context_max_chars")):
            best = {"base": float("inf"), "this": float("inf")}
            for _ in range(rounds):  # interleaved: both trees see the same load
                best["base"] = min(best["base"], _child_cost(folder, mode, runs))
                best["this"] = min(best["this"], _child_cost(str(ROOT), mode, runs))
            ratio = best["this"] / best["base"]
            section.rows.append(
                Row(
                    f"per-turn overhead without compaction, {label}, 2,000 turns",
                    fmt_us(best["this"]) + "/turn",
                    f"<= {OVERHEAD_TARGET}x the base",
                    ratio <= OVERHEAD_TARGET,
                    f"{ratio:.3f}x the base commit {base[:9]} ({fmt_us(best['base'])}/turn); CPU "
                    f"time, min of {rounds * runs} runs each, interleaved",
                )
            )


def run(report: Report, quick: bool) -> None:
    section = report.section("compaction", "Long runs: compaction and the prompt cache")
    load = load_average()
    turns = 120 if quick else 300
    _compaction_rows(section, turns)
    _trim_rows(section, 80 if quick else 160)
    _overhead_rows(section, report, quick)
    section.notes.append(
        f"A loopback Anthropic fake counts the prompt cache as the API documents it (a cache entry "
        f"per `cache_control` breakpoint, read back as the longest earlier prefix, looked for up to "
        f"{LOOKBACK} blocks before each breakpoint; tokens = characters / 4). Every turn the fake "
        "model calls `read`, whose result is 100 to 6,000 characters (seeded). The summary request "
        "reads nothing from the cache: it offers no tools (the Messages API refuses tool blocks "
        "then) and sends the older messages as one transcript. Not measured here: the embedded "
        "model (llama.cpp's prompt cache), whose 135M-parameter default model cannot drive a "
        "300-turn tool run, and whose cache the same byte-stable prefix serves."
    )
    section.notes.append(
        f"Load average when this section started: {load} (other jobs on the 2 cores): the "
        "overhead rows compare CPU time of runs interleaved with the base commit's, so both trees "
        "saw the same load; their differences within a few percent are noise."
    )
