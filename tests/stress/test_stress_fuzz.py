"""Fuzzing the stream parsers: the SSE decoder and both stream mappers.

- random bytes, cut into random chunks, through ``iter_sse_events``: never raises anything;
  through ``map_chat_stream`` (OpenAI) and ``map_messages_stream`` (Anthropic): never raises
  anything but ``ProviderError``;
- random valid-but-odd event sequences (JSON of the right shape with wrong types, unhashable and
  out-of-range indexes, unknown event types, missing fields, huge numbers, error events, ...):
  only ``ProviderError``;
- a valid stream (random text deltas and tool calls, LF or CRLF, comments, ``retry``/``id`` lines)
  decodes to the same model events however it is chunked, and to what was sent.

Every test has a pytest-timeout (a hang fails). Examples per test: 200 in CI, 2,000 with
``MINIAGENT_STRESS_FULL=1``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from stress_support import scale

from miniagent import ProviderError, TextEvent, ToolCall, ToolCallEvent
from miniagent.model import ModelEvent
from miniagent.net.sse import SSEEvent, iter_sse_events
from miniagent.providers.anthropic import map_messages_stream
from miniagent.providers.openai import map_chat_stream

pytestmark = pytest.mark.timeout(300)

EXAMPLES = scale(200, 2000)
fuzz = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

Mapper = Callable[[Iterable[SSEEvent]], Iterator[ModelEvent]]
MAPPERS: list[tuple[str, Mapper]] = [("openai", map_chat_stream), ("anthropic", map_messages_stream)]


def drain(mapper: Mapper, events: Iterable[SSEEvent]) -> list[ModelEvent] | ProviderError:
    """The mapper's events, or the ``ProviderError`` it raised; anything else fails the test."""
    out: list[ModelEvent] = []
    try:
        for event in mapper(events):
            out.append(event)
    except ProviderError as error:
        return error
    return out


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    pieces, last = [], 0
    for point in points:
        pieces.append(data[last:point])
        last = point
    pieces.append(data[last:])
    return pieces


# --- random bytes -------------------------------------------------------------------------------

sse_alphabet = st.sampled_from(
    [
        b"data:",
        b"data: ",
        b"event: ",
        b"id: ",
        b"retry: ",
        b":",
        b"\n",
        b"\r",
        b"\r\n",
        b"\n\n",
        b"{",
        b"}",
        b'"',
        b"[DONE]",
        b"\xef\xbb\xbf",
        b"\xff",
        b"\xc3",
        b"\x00",
        b"9" * 5000,
        b"error",
        b"ping",
        b'{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"a","name":"n"}}',
        b'{"type":"content_block_stop","index":[0]}',
        b'{"choices":[{"delta":{"tool_calls":[{"index":0}]}}]}',
    ]
)
raw_bodies = st.one_of(st.binary(max_size=2000), st.lists(sse_alphabet, max_size=60).map(b"".join))


@fuzz
@given(body=raw_bodies, cuts=st.lists(st.integers(0, 5000), max_size=12))
def test_random_bytes_never_raise_in_the_decoder(body: bytes, cuts: list[int]) -> None:
    whole = list(iter_sse_events([body]))
    assert list(iter_sse_events(split(body, cuts))) == whole


@fuzz
@given(body=raw_bodies, cuts=st.lists(st.integers(0, 5000), max_size=12))
@pytest.mark.parametrize(("name", "mapper"), MAPPERS, ids=[m[0] for m in MAPPERS])
def test_random_bytes_only_provider_errors(name: str, mapper: Mapper, body: bytes, cuts: list[int]) -> None:
    whole = drain(mapper, iter_sse_events([body]))
    chunked = drain(mapper, iter_sse_events(split(body, cuts)))
    if isinstance(whole, ProviderError):
        assert isinstance(chunked, ProviderError) and str(chunked) == str(whole)
    else:
        assert chunked == whole or _same_but_generated_ids(chunked, whole)


def _same_but_generated_ids(a: Any, b: Any) -> bool:
    """Call ids made up for calls without one are random per stream: compare without them."""
    if isinstance(a, ProviderError) or isinstance(b, ProviderError):
        return False

    def norm(events: list[ModelEvent]) -> list[Any]:
        return [
            ("call", e.call.name, e.call.input, e.call.input_error) if isinstance(e, ToolCallEvent) else e
            for e in events
        ]

    return norm(a) == norm(b)


# --- odd event sequences ------------------------------------------------------------------------

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=False), st.text(max_size=8)
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
odd = st.one_of(json_values, st.sampled_from([0, 1, -1, "0", [0], {"a": 1}, None, True, 1.5, 10**30]))


def maybe(key: str, value: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(st.just({}), value.map(lambda v: {key: v}))


def merged(*parts: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    return st.tuples(*parts).map(lambda ds: {k: v for d in ds for k, v in d.items()})


openai_fragment = merged(
    maybe("index", odd),
    maybe("id", st.one_of(st.sampled_from(["a", "b", ""]), odd)),
    maybe(
        "function",
        st.one_of(
            odd,
            merged(
                maybe("name", st.one_of(st.sampled_from(["f", "g"]), odd)),
                maybe("arguments", st.one_of(st.sampled_from(['{"a":', "1}", "[]", ""]), odd)),
            ),
        ),
    ),
)
openai_chunk = st.one_of(
    json_values,
    merged(
        maybe(
            "choices",
            st.one_of(
                odd,
                st.lists(
                    st.one_of(
                        odd,
                        merged(
                            maybe("index", odd),
                            maybe(
                                "delta",
                                st.one_of(
                                    odd,
                                    merged(
                                        maybe("content", st.one_of(st.text(max_size=5), odd)),
                                        maybe(
                                            "tool_calls",
                                            st.one_of(odd, st.lists(openai_fragment, max_size=3)),
                                        ),
                                    ),
                                ),
                            ),
                            maybe(
                                "finish_reason",
                                st.one_of(st.sampled_from(["stop", "length", "tool_calls"]), odd),
                            ),
                        ),
                    ),
                    max_size=2,
                ),
            ),
        ),
        maybe("error", odd),
    ),
)
anthropic_types = st.sampled_from(
    [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
        "ping",
        "error",
        "unknown",
    ]
)
anthropic_chunk = st.one_of(
    json_values,
    merged(
        maybe("type", st.one_of(anthropic_types, odd)),
        maybe("index", st.one_of(st.integers(0, 2), odd)),
        maybe(
            "content_block",
            st.one_of(
                odd,
                merged(
                    maybe("type", st.one_of(st.sampled_from(["text", "tool_use", "thinking"]), odd)),
                    maybe("id", odd),
                    maybe("name", odd),
                    maybe("input", odd),
                    maybe("text", odd),
                ),
            ),
        ),
        maybe(
            "delta",
            st.one_of(
                odd,
                merged(
                    maybe("type", st.one_of(st.sampled_from(["text_delta", "input_json_delta"]), odd)),
                    maybe("text", odd),
                    maybe("partial_json", st.one_of(st.sampled_from(['{"a":', "1}", "x"]), odd)),
                    maybe(
                        "stop_reason", st.one_of(st.sampled_from(["end_turn", "max_tokens", "tool_use"]), odd)
                    ),
                ),
            ),
        ),
        maybe("error", odd),
    ),
)


def to_events(chunks: list[Any], names: list[str]) -> list[SSEEvent]:
    events = []
    for i, chunk in enumerate(chunks):
        data = chunk if isinstance(chunk, str) and chunk in ("[DONE]", "{broken") else json.dumps(chunk)
        events.append(SSEEvent(names[i % len(names)] if names else "message", data))
    return events


extra = st.sampled_from(["[DONE]", "{broken"])


@fuzz
@given(
    chunks=st.lists(st.one_of(openai_chunk, extra), max_size=8),
    names=st.lists(st.sampled_from(["message", "error", "ping"]), max_size=3),
)
def test_odd_openai_sequences_only_provider_errors(chunks: list[Any], names: list[str]) -> None:
    drain(map_chat_stream, to_events(chunks, names))


@fuzz
@given(
    chunks=st.lists(st.one_of(anthropic_chunk, extra), max_size=10),
    names=st.lists(anthropic_types, max_size=3),
)
def test_odd_anthropic_sequences_only_provider_errors(chunks: list[Any], names: list[str]) -> None:
    drain(map_messages_stream, to_events(chunks, names))


# --- valid streams, any chunking ----------------------------------------------------------------

texts = st.text(st.characters(blacklist_categories=["Cs"]), min_size=1, max_size=12)
# Tool arguments are strict JSON: NaN and infinities are refused (see test_provider_trial.py).
finite_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=False, allow_infinity=False)
)
inputs = st.dictionaries(st.text(max_size=4), finite_scalars | st.text(max_size=8), max_size=3)
items = st.lists(st.one_of(texts, st.tuples(st.just("call"), inputs)), min_size=1, max_size=6)


def openai_body(parts: list[Any]) -> tuple[list[str], bytes]:
    lines, call_index = [": keep-alive comment"], 0
    for part in parts:
        if isinstance(part, str):
            delta: dict[str, Any] = {"content": part}
        else:
            arguments = json.dumps(part[1])
            half = len(arguments) // 2
            delta = {
                "tool_calls": [
                    {
                        "index": call_index,
                        "id": f"c{call_index}",
                        "type": "function",
                        "function": {"name": "f", "arguments": arguments[:half]},
                    }
                ]
            }
            lines.append("data: " + json.dumps({"choices": [{"index": 0, "delta": delta}]}))
            lines.append("")
            delta = {"tool_calls": [{"index": call_index, "function": {"arguments": arguments[half:]}}]}
            call_index += 1
        lines.append("retry: 100")
        lines.append("data: " + json.dumps({"choices": [{"index": 0, "delta": delta}]}))
        lines.append("")
    lines += ['data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}', "", "data: [DONE]", "", ""]
    return lines, b""


def anthropic_body(parts: list[Any]) -> tuple[list[str], bytes]:
    lines: list[str] = []

    def event(payload: dict[str, Any]) -> None:
        lines.extend([f"event: {payload['type']}", "data: " + json.dumps(payload), ""])

    event({"type": "message_start", "message": {"id": "m", "content": []}})
    lines.extend(["event: ping", 'data: {"type": "ping"}', ""])
    for index, part in enumerate(parts):
        if isinstance(part, str):
            event(
                {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}
            )
            event(
                {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": part}}
            )
        else:
            event(
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "tool_use", "id": f"c{index}", "name": "f", "input": {}},
                }
            )
            arguments = json.dumps(part[1])
            for piece in (arguments[: len(arguments) // 2], arguments[len(arguments) // 2 :]):
                event(
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "input_json_delta", "partial_json": piece},
                    }
                )
        event({"type": "content_block_stop", "index": index})
    event({"type": "message_delta", "delta": {"stop_reason": "end_turn"}})
    event({"type": "message_stop"})
    return lines, b""


@fuzz
@given(parts=items, cuts=st.lists(st.integers(0, 10_000), max_size=20), crlf=st.booleans(), bom=st.booleans())
@pytest.mark.parametrize("name", ["openai", "anthropic"])
def test_valid_streams_parse_the_same_however_chunked(
    name: str, parts: list[Any], cuts: list[int], crlf: bool, bom: bool
) -> None:
    lines, _ = openai_body(parts) if name == "openai" else anthropic_body(parts)
    body = ("\r\n" if crlf else "\n").join(lines).encode("utf-8")
    if bom:
        body = b"\xef\xbb\xbf" + body
    mapper = map_chat_stream if name == "openai" else map_messages_stream
    whole = drain(mapper, iter_sse_events([body]))
    chunked = drain(mapper, iter_sse_events(split(body, cuts)))
    one_byte = drain(mapper, iter_sse_events(body[i : i + 1] for i in range(len(body))))
    assert not isinstance(whole, ProviderError), whole
    assert chunked == whole == one_byte
    text = "".join(e.text for e in whole if isinstance(e, TextEvent))
    calls = [e.call for e in whole if isinstance(e, ToolCallEvent)]
    assert text == "".join(p for p in parts if isinstance(p, str))
    expected_inputs = [p[1] for p in parts if not isinstance(p, str)]
    assert [c.input for c in calls] == expected_inputs
    assert all(isinstance(c, ToolCall) and c.input_error is None and c.name == "f" for c in calls)
