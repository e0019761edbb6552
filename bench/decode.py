"""The depth-safe JSON decode (``miniagent._json.loads``) against ``json.loads``, on the texts the
agent really decodes: the streams' event payloads and tool-call arguments (``bench.streams``),
session lines (the shape of ``bench.sessions``), and, as information, a text that has to be
scanned (more brackets than ``MAX_DEPTH``). Rows go into the Streams section.

Each figure is the median over interleaved runs of decoding every text of its kind once with each
decoder; the ratio is the depth-safe decode's time over ``json.loads``'s.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from typing import Any

from .common import Row, Section, fmt_x, median

NORMAL_TARGET = 1.05  # on the texts decoded most often (events, session lines): at most 5% more


def _session_lines(count: int) -> list[str]:
    from miniagent import Message, ToolCall
    from miniagent.messages import message_to_json

    lines = []
    for i in range(count):
        call = ToolCall(f"call_{i:06d}", "read_file", {"path": f"logs/app-{i % 97}.log", "limit": 200})
        lines.append(Message("assistant", "Reading the next log file.", (call,)))
        lines.append(Message("tool", f"line {i}: request handled in {i % 13} ms\n" * 2, (), call.id))
    return [json.dumps(message_to_json(m), ensure_ascii=False) for m in lines]  # type: ignore[arg-type]


def _arguments(count: int) -> list[str]:
    from .streams import _argument_pieces

    rng = random.Random(6)
    return ["".join(_argument_pieces(rng, index, 200)) for index in range(count)]


def _scanned(count: int) -> list[str]:
    rows = [{"id": i, "tags": ["a", "b"], "when": {"day": i % 28}} for i in range(120)]
    return [json.dumps({"rows": rows, "n": n}) for n in range(count)]


def _decode_all(loads: Callable[[str], Any], texts: list[str]) -> float:
    start = time.perf_counter()
    for text in texts:
        loads(text)
    return time.perf_counter() - start


def _compare(texts: list[str], repeats: int) -> tuple[float, float]:
    """(json.loads seconds, depth-safe seconds) per text, medians of interleaved runs."""
    from miniagent._json import loads as safe

    plain_runs, safe_runs = [], []
    for _ in range(repeats):
        plain_runs.append(_decode_all(json.loads, texts))
        safe_runs.append(_decode_all(safe, texts))
    return median(plain_runs) / len(texts), median(safe_runs) / len(texts)


def add_rows(section: Section, payloads: dict[str, list[str]], quick: bool) -> None:
    """Add the comparison rows to ``section``; ``payloads``: each API's stream event payloads."""
    repeats = 5 if quick else 15
    kinds: list[tuple[str, list[str], bool]] = [
        (f"{api} event payloads", texts, True) for api, texts in payloads.items()
    ]
    kinds += [
        ("session lines (a call and its result)", _session_lines(5000 if quick else 20000), True),
        ("(information) tool-call arguments of the streams", _arguments(400 if quick else 2000), False),
        ("(information) a 6 KB text of 120 small objects: walked", _scanned(200 if quick else 1000), False),
    ]
    for label, texts, normal in kinds:
        plain, safe = _compare(texts, repeats)
        ratio = safe / plain
        size = sum(map(len, texts)) / len(texts)
        section.rows.append(
            Row(
                f"depth-safe JSON decode: {label}",
                f"{safe * 1e6:.2f} µs/text",
                f"<= {NORMAL_TARGET}x json.loads" if normal else "",
                ratio <= NORMAL_TARGET if normal else None,
                f"{fmt_x(ratio)} json.loads ({plain * 1e6:.2f} µs); {len(texts)} texts of {size:.0f} chars",
            )
        )
    section.notes.append(
        "Depth-safe decode: `miniagent._json.loads` against `json.loads` on the same texts, median of "
        f"{repeats} interleaved runs each decoding every text once. A text of at most 512 characters is "
        "never walked; a longer one is walked once after decoding, level by level (each array item and "
        "object value looked at once), so a text that is mostly strings costs next to nothing."
    )
