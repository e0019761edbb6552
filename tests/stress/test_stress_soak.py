"""Soak: thousands of turns with a session and trimming on; memory stays flat, turns stay fast.

A tiny client (no history copies) asks for one ``echo`` call per turn; the loop records the
assistant message and the result (memory and session file) and trims each request to 4,000
characters. 5,000 turns in CI, 20,000 with ``MINIAGENT_STRESS_FULL=1``.

- Time: the per-turn times of the first and the last thousand turns (medians) must be within 3x
  (generous, against noise); the real numbers are printed (``-s``).
- Memory (tracemalloc, a second run): the record itself grows by the messages of each turn, so
  the check is on the growth per turn BEYOND what the same messages cost when simply kept in a
  list (measured the same way): it must stay under 200 bytes per turn (the trimmer's per-unit
  bookkeeping is two list slots and two ints, about 80 bytes; anything leaking a request, a
  window, a stream or a JSON line per turn would cost far more).
"""

from __future__ import annotations

import statistics
import time
import tracemalloc
from array import array
from collections.abc import Iterator
from pathlib import Path

import pytest
from stress_support import scale

from miniagent import (
    DoneEvent,
    Message,
    ModelRequest,
    TextEvent,
    ToolCall,
    ToolCallEvent,
    load_session,
    run_agent,
)
from miniagent.model import ModelEvent
from miniagent.tools import tool

TURNS = scale(5_000, 20_000)
WINDOW = 1_000

pytestmark = pytest.mark.timeout(600)


@tool
def echo(text: str) -> str:
    """Return the text.

    Args:
        text: the text.
    """
    return "echo: " + text


class TinyClient:
    """One echo call per turn for ``turns`` turns, then a final text; timestamps every request."""

    def __init__(self, turns: int, memory: bool = False) -> None:
        self.turns = turns
        self.count = 0
        # Preallocated, so the client's own bookkeeping does not grow during the run.
        self.stamps = array("d", bytes(8 * (turns + 1)))
        self.memory = array("q", bytes(8 * (turns + 1)))
        self.track_memory = memory
        self.largest_window = 0

    def stream(self, request: ModelRequest) -> Iterator[ModelEvent]:
        self.stamps[self.count] = time.perf_counter()
        if self.track_memory:
            self.memory[self.count] = tracemalloc.get_traced_memory()[0]
        self.largest_window = max(self.largest_window, len(request.messages))
        self.count += 1
        if self.count > self.turns:
            return iter((TextEvent("all done"), DoneEvent()))
        call = ToolCall(f"call_{self.count}", "echo", {"text": f"turn {self.count} " + "x" * 40})
        return iter((ToolCallEvent(call), DoneEvent()))


def soak(tmp_path: Path, name: str, memory: bool) -> TinyClient:
    client = TinyClient(TURNS, memory)
    result = run_agent(
        client=client,
        system="s",
        tools=[echo],
        user="go",
        max_turns=TURNS + 1,
        session_path=tmp_path / f"{name}.jsonl",
        context_max_chars=4_000,
    )
    assert result.stop_reason == "complete"
    assert len(result.messages) == 2 * TURNS + 2
    assert client.largest_window < 100  # trimming is on
    return client


def test_per_turn_time_does_not_grow(tmp_path: Path) -> None:
    client = soak(tmp_path, "time", memory=False)
    gaps = [b - a for a, b in zip(client.stamps, client.stamps[1:], strict=False)]
    first = statistics.median(gaps[:WINDOW])
    last = statistics.median(gaps[-WINDOW:])
    print(
        f"\n[soak] {TURNS} turns: per-turn median first {WINDOW}: {first * 1e6:.1f} us, "
        f"last {WINDOW}: {last * 1e6:.1f} us (ratio {last / first:.2f}); "
        f"mean first {statistics.fmean(gaps[:WINDOW]) * 1e6:.1f} us, "
        f"last {statistics.fmean(gaps[-WINDOW:]) * 1e6:.1f} us"
    )
    assert last < 3 * first
    assert len(load_session(tmp_path / "time.jsonl")) == 2 * TURNS + 2


def kept_message_cost(turns: int) -> float:
    """Bytes per turn of simply keeping the same two messages per turn in a list, and their call
    ids in a set (the loop's index that keeps call ids unique in the record), with tracemalloc."""
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        kept: list[Message] = []
        ids: set[str] = set()
        for i in range(turns):
            call = ToolCall(f"call_{i}", "echo", {"text": f"turn {i} " + "x" * 40})
            kept.append(Message("assistant", "", (call,)))
            ids.add(call.id)
            kept.append(Message("tool", "echo: " + call.input["text"], (), call.id, False))
        used = tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()
    del kept, ids
    return used / turns


def test_memory_stays_flat_beyond_the_record(tmp_path: Path) -> None:
    tracemalloc.start()
    try:
        client = soak(tmp_path, "memory", memory=True)
    finally:
        tracemalloc.stop()
    warm = min(1_000, TURNS // 5)
    samples = client.memory
    growth = (samples[-1] - samples[warm]) / (len(samples) - 1 - warm)
    baseline = kept_message_cost(TURNS)
    beyond = growth - baseline
    print(
        f"\n[soak] memory: {growth:.0f} bytes/turn total growth after warm-up, {baseline:.0f} bytes/turn are "
        f"the messages themselves, {beyond:.0f} bytes/turn beyond them "
        f"({samples[warm] / 1e6:.2f} MB at turn {warm}, {samples[-1] / 1e6:.2f} MB at turn {TURNS})"
    )
    assert beyond < 200
