"""The SSE decoder against the WHATWG event-stream rules, on raw chunk lists."""

from __future__ import annotations

import json
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from miniagent.net.sse import SSEDecoder, SSEEvent, iter_sse_events

pytestmark = pytest.mark.timeout(60)

SAMPLE = (
    b": a comment\n"
    b"event: message_start\n"
    b'data: {"a": 1}\n'
    b"\n"
    b"data: first\r\n"
    b"data:  two spaces\r"
    b"data:no space\r\n"
    b"\r\n"
    b"id: 7\n"
    b"event: x\n"
    b"data: caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xe2\x80\xa8 end\n"
    b"\n"
    b"data: [DONE]\n"
    b"\n"
)
EXPECTED = [
    SSEEvent("message_start", '{"a": 1}'),
    SSEEvent("message", "first\n two spaces\nno space"),
    SSEEvent("x", "café € 😀 \u2028 end", "7"),
    SSEEvent("message", "[DONE]", "7"),
]


def decode(chunks: list[bytes]) -> list[SSEEvent]:
    return list(iter_sse_events(chunks))


def test_sample_whole() -> None:
    assert decode([SAMPLE]) == EXPECTED


def test_every_single_split_point() -> None:
    for i in range(len(SAMPLE) + 1):
        assert decode([SAMPLE[:i], SAMPLE[i:]]) == EXPECTED, i


def test_every_pair_of_split_points() -> None:
    n = len(SAMPLE)
    for i in range(n + 1):
        for j in range(i, n + 1):
            assert decode([SAMPLE[:i], SAMPLE[i:j], SAMPLE[j:]]) == EXPECTED, (i, j)


def test_byte_by_byte() -> None:
    assert decode([SAMPLE[i : i + 1] for i in range(len(SAMPLE))]) == EXPECTED


@pytest.mark.parametrize("ending", [b"\n", b"\r\n", b"\r"])
def test_line_endings(ending: bytes) -> None:
    body = b"data: a" + ending + b"data: b" + ending + ending + b"data: c" + ending + ending
    expected = [SSEEvent("message", "a\nb"), SSEEvent("message", "c")]
    assert decode([body]) == expected
    assert decode([body[i : i + 1] for i in range(len(body))]) == expected


def test_crlf_split_between_chunks_makes_no_extra_blank_line() -> None:
    # "\r" ends one chunk, its "\n" starts the next: one line end, not two (no early dispatch).
    chunks = [b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n"]
    assert decode(chunks) == [SSEEvent("message", "a\nb")]


def test_cr_at_chunk_end_dispatches_without_waiting() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\r\r") == [SSEEvent("message", "a")]
    assert decoder.feed(b"\ndata: b\n\n") == [SSEEvent("message", "b")]


def test_comments_are_ignored() -> None:
    assert decode([b":ping\n: keep-alive\n\ndata: x\n:\n\n"]) == [SSEEvent("message", "x")]


def test_only_one_leading_space_is_stripped() -> None:
    assert decode([b"data:   x \n\n"]) == [SSEEvent("message", "  x ")]


def test_field_without_colon_and_empty_data() -> None:
    # "data" alone is a data line with an empty value; an event with empty data is dispatched.
    assert decode([b"data\ndata\n\n"]) == [SSEEvent("message", "\n")]
    assert decode([b"data:\n\n"]) == [SSEEvent("message", "")]


def test_event_without_data_is_not_dispatched_and_resets_type() -> None:
    assert decode([b"event: a\n\ndata: x\n\n"]) == [SSEEvent("message", "x")]


def test_unknown_fields_id_and_retry() -> None:
    body = b"foo: bar\nid: 1\nretry: 1500\ndata: a\n\nid: bad\x00\nretry: soon\ndata: b\n\n"
    assert decode([body]) == [SSEEvent("message", "a", "1", 1500), SSEEvent("message", "b", "1")]


def test_leading_bom_is_dropped_only_at_the_start() -> None:
    bom = "\ufeff".encode()
    assert decode([bom + b"data: x\n\n"]) == [SSEEvent("message", "x")]
    # later, a BOM is part of the field name, so "\ufeffdata" is an unknown field
    assert decode([b"data: x\n\n" + bom + b"data: y\n\n"]) == [SSEEvent("message", "x")]


def test_final_event_without_blank_line_is_dispatched() -> None:
    assert decode([b"data: a\n\ndata: b\n"]) == [SSEEvent("message", "a"), SSEEvent("message", "b")]
    # an unterminated last line is still a line at the end of the stream
    assert decode([b"data: a\n\ndata: [DONE]"]) == [
        SSEEvent("message", "a"),
        SSEEvent("message", "[DONE]"),
    ]


def test_utf8_character_split_at_every_byte() -> None:
    text = "é€😀"
    body = f"data: {text}\n\n".encode()
    for i in range(len(body) + 1):
        assert decode([body[:i], body[i:]]) == [SSEEvent("message", text)], i


def test_invalid_utf8_is_replaced() -> None:
    assert decode([b"data: a\xffb\n\n"]) == [SSEEvent("message", "a\ufffdb")]


def test_u2028_and_u2029_do_not_split_a_line() -> None:
    payload = json.dumps({"t": "a\u2028b\u2029c\x85d"}, ensure_ascii=False)
    events = decode([f"data: {payload}\n\n".encode()])
    assert [json.loads(e.data) for e in events] == [{"t": "a\u2028b\u2029c\x85d"}]


def test_decoder_close_resets_for_reuse() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a") == []
    assert decoder.close() == [SSEEvent("message", "a")]
    assert decoder.feed(b"data: b\n\n") == [SSEEvent("message", "b")]
    assert decoder.close() == []


def test_a_long_line_in_many_small_chunks() -> None:
    data = "x" * 200_000
    body = f"data: {data}\n\n".encode()
    chunks = [body[i : i + 100] for i in range(0, len(body), 100)]
    start = time.perf_counter()
    assert decode(chunks) == [SSEEvent("message", data)]
    assert time.perf_counter() - start < 1.0  # linear, not quadratic


_line_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n"), max_size=12
)


@settings(max_examples=150, deadline=None)
@given(
    events=st.lists(
        st.tuples(st.sampled_from(["", "a", "ping"]), st.lists(_line_text, min_size=1, max_size=3)),
        max_size=6,
    ),
    ending=st.sampled_from(["\n", "\r\n", "\r"]),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=8),
)
def test_any_chunking_gives_the_same_events(
    events: list[tuple[str, list[str]]], ending: str, cuts: list[int]
) -> None:
    lines = []
    for name, data_lines in events:
        if name:
            lines.append(f"event: {name}")
        lines.extend(f"data: {line}" for line in data_lines)
        lines.append("")
    body = (ending.join(lines) + (ending if lines else "")).encode()
    expected = [SSEEvent(name or "message", "\n".join(data)) for name, data in events]
    assert decode([body]) == expected
    points = sorted({min(c, len(body)) for c in cuts})
    pieces = [body[a:b] for a, b in zip([0, *points], [*points, len(body)], strict=False)]
    assert decode(pieces) == expected


def test_throughput_against_json_loads_floor() -> None:
    """~20 MB of OpenAI-style chunks: decode rate vs. the bare json.loads cost per payload."""
    payload = json.dumps(
        {
            "id": "chatcmpl-123",
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {"content": " token"}, "finish_reason": None}],
        }
    )
    event = f"data: {payload}\n\n".encode()
    count = 20_000_000 // len(event)
    body = event * count
    chunks = [body[i : i + 16384] for i in range(0, len(body), 16384)]

    start = time.perf_counter()
    n = 0
    for ev in iter_sse_events(chunks):
        json.loads(ev.data)
        n += 1
    total = time.perf_counter() - start
    assert n == count

    start = time.perf_counter()
    for _ in range(count):
        json.loads(payload)
    floor = time.perf_counter() - start

    start = time.perf_counter()
    for _ in iter_sse_events(chunks):
        pass
    parse_only = time.perf_counter() - start
    mb = len(body) / 1e6
    print(
        f"\nSSE: {mb:.1f} MB, {count} events; decode only {mb / parse_only:.0f} MB/s; "
        f"decode+json {total:.3f}s vs json.loads floor {floor:.3f}s ({total / floor:.2f}x)"
    )
    assert total < 3 * floor
