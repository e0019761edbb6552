"""Streams: the SSE decoder and both stream mappings on a large recorded-style stream.

The stream is one long answer shaped like the providers' real wire format: text deltas of a
few words (``chat.completion.chunk`` events / ``content_block_delta`` ``text_delta`` events), then
tool calls whose JSON arguments arrive in small fragments (``delta.tool_calls`` /
``input_json_delta``), then the finish (``finish_reason`` and ``[DONE]`` / ``message_delta`` and
``message_stop``; Anthropic ``ping`` events sprinkled in). Measured:

- from memory: ``SSEDecoder.feed`` in 64 KiB pieces, alone and with ``map_chat_stream`` /
  ``map_messages_stream``, against the floor of ``json.loads`` of each event's payload;
- over loopback (``bench.server``, chunked ``text/event-stream``): miniagent's
  ``OpenAIChatClient`` / ``AnthropicClient`` against the official ``openai`` / ``anthropic``
  SDKs (``create(stream=True)``, iterating the typed chunks/events and accumulating text and tool
  arguments as the mapping does), on the same bytes;
- time to first event over loopback (request sent -> first event in hand), small stream.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from .common import Report, Row, fmt_ms, fmt_rate, fmt_x, have, median

READ = 65536
FLOOR_TARGET = 3.0
SDK_TARGET = 1.0

_WORDS = (  # noqa: SIM905
    "the loop reads each event as it arrives and hands text to the caller while tool calls wait "
    "for their arguments to be complete before they run in order one after another"
).split()


def _text_pieces(rng: random.Random, count: int) -> list[str]:
    return [" ".join(rng.choices(_WORDS, k=rng.randint(1, 3))) + " " for _ in range(count)]


def _argument_pieces(rng: random.Random, index: int, pieces: int) -> list[str]:
    content = " ".join(rng.choices(_WORDS, k=pieces * 2))
    text = json.dumps({"path": f"src/module_{index}.py", "content": content})
    size = max(1, len(text) // pieces)
    return [text[i : i + size] for i in range(0, len(text), size)]


def openai_stream(target_bytes: int, seed: int = 6) -> tuple[bytes, int]:
    """(body, length of the first event) of one chat completion stream of about target_bytes."""
    rng = random.Random(seed)
    base = {
        "id": "chatcmpl-bench0001",
        "object": "chat.completion.chunk",
        "created": 1767225600,
        "model": "gpt-4o-mini-2024-07-18",
        "system_fingerprint": "fp_0aa8d3e20b",
    }
    events: list[bytes] = []

    def emit(delta: dict[str, Any], finish: str | None = None) -> None:
        chunk = {**base, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}
        events.append(b"data: " + json.dumps(chunk, separators=(",", ":")).encode() + b"\n\n")

    emit({"role": "assistant", "content": "", "refusal": None})
    first = len(events[0])
    text_budget, size = target_bytes * 6 // 10, first
    while size < text_budget:
        for piece in _text_pieces(rng, 256):
            emit({"content": piece})
            size += len(events[-1])
    call = 0
    while size < target_bytes:
        pieces = _argument_pieces(rng, call, 200)
        emit(
            {
                "tool_calls": [
                    {
                        "index": call,
                        "id": f"call_{call:08d}",
                        "type": "function",
                        "function": {"name": "write_file", "arguments": ""},
                    }
                ]
            }
        )
        for piece in pieces:
            emit({"tool_calls": [{"index": call, "function": {"arguments": piece}}]})
            size += len(events[-1])
        call += 1
    emit({}, "tool_calls")
    events.append(b"data: [DONE]\n\n")
    return b"".join(events), first


def anthropic_stream(target_bytes: int, seed: int = 6) -> tuple[bytes, int]:
    """(body, length of the first event) of one Messages stream of about target_bytes."""
    rng = random.Random(seed)
    events: list[bytes] = []

    def emit(kind: str, data: dict[str, Any]) -> None:
        events.append(
            b"event: "
            + kind.encode()
            + b"\ndata: "
            + json.dumps({"type": kind, **data}, separators=(",", ":")).encode()
            + b"\n\n"
        )

    emit(
        "message_start",
        {
            "message": {
                "id": "msg_bench0001",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 1200, "output_tokens": 1},
            }
        },
    )
    first = len(events[0])
    emit("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}})
    emit("ping", {})
    text_budget, size = target_bytes * 6 // 10, first
    while size < text_budget:
        for piece in _text_pieces(rng, 256):
            emit("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": piece}})
            size += len(events[-1])
    emit("content_block_stop", {"index": 0})
    block = 1
    while size < target_bytes:
        emit(
            "content_block_start",
            {
                "index": block,
                "content_block": {
                    "type": "tool_use",
                    "id": f"toolu_{block:020d}",
                    "name": "write_file",
                    "input": {},
                },
            },
        )
        for piece in _argument_pieces(rng, block, 200):
            emit(
                "content_block_delta",
                {"index": block, "delta": {"type": "input_json_delta", "partial_json": piece}},
            )
            size += len(events[-1])
        emit("content_block_stop", {"index": block})
        block += 1
    emit(
        "message_delta",
        {"delta": {"stop_reason": "tool_use", "stop_sequence": None}, "usage": {"output_tokens": 9000}},
    )
    emit("message_stop", {})
    return b"".join(events), first


def _pieces(body: bytes) -> list[bytes]:
    return [body[i : i + READ] for i in range(0, len(body), READ)]


def _decode_only(chunks: list[bytes]) -> int:
    from miniagent.net.sse import SSEDecoder

    decoder = SSEDecoder()
    count = 0
    for chunk in chunks:
        count += len(decoder.feed(chunk))
    return count + len(decoder.close())


def _decode_map(chunks: list[bytes], mapper: Callable[..., Iterable[Any]]) -> int:
    from miniagent.net.sse import iter_sse_events

    count = 0
    for _ in mapper(iter_sse_events(chunks)):
        count += 1
    return count


def _payloads(body: bytes) -> list[str]:
    from miniagent.net.sse import iter_sse_events

    return [e.data for e in iter_sse_events([body]) if e.data and e.data != "[DONE]"]


def _floor(payloads: list[str]) -> None:
    loads = json.loads
    for data in payloads:
        loads(data)


# --- clients over loopback --------------------------------------------------------------------------


def _request() -> Any:
    from miniagent import Message, ModelRequest

    return ModelRequest("You are a benchmark.", [Message("user", "Write the files.")], (), threading.Event())


def _mini_openai(base: str) -> Callable[[], int]:
    from miniagent.providers import HTTPSettings, OpenAIChatClient, RetryPolicy

    no_retry = HTTPSettings(retry=RetryPolicy(max_retries=0))

    client = OpenAIChatClient("gpt-4o-mini", base_url=base, settings=no_retry)
    request = _request()

    def run() -> int:
        return sum(1 for _ in client.stream(request))

    return run


def _mini_anthropic(base: str) -> Callable[[], int]:
    from miniagent.providers import AnthropicClient, HTTPSettings, RetryPolicy

    no_retry = HTTPSettings(retry=RetryPolicy(max_retries=0))

    client = AnthropicClient("claude-sonnet-4-5", base_url=base, settings=no_retry)
    request = _request()

    def run() -> int:
        return sum(1 for _ in client.stream(request))

    return run


def _sdk_openai(base: str) -> Callable[[], int]:
    import openai

    client = openai.OpenAI(base_url=base, api_key="bench", max_retries=0)

    def run() -> int:
        count = 0
        text: list[str] = []
        arguments: dict[int, list[str]] = {}
        stream = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "Write the files."}], stream=True
        )
        for chunk in stream:
            count += 1
            if not chunk.choices:
                continue
            delta = chunk.choices[0].delta
            if delta.content:
                text.append(delta.content)
            for call in delta.tool_calls or ():
                if call.function is not None and call.function.arguments:
                    arguments.setdefault(call.index, []).append(call.function.arguments)
        for parts in arguments.values():
            json.loads("".join(parts))
        return count

    return run


def _sdk_anthropic(base: str) -> Callable[[], int]:
    import anthropic

    client = anthropic.Anthropic(base_url=base, api_key="bench", max_retries=0)

    def run() -> int:
        count = 0
        text: list[str] = []
        arguments: dict[int, list[str]] = {}
        stream = client.messages.create(
            model="claude-sonnet-4-5",
            max_tokens=4096,
            messages=[{"role": "user", "content": "Write the files."}],
            stream=True,
        )
        for event in stream:
            count += 1
            if event.type == "content_block_delta":
                delta = event.delta
                if delta.type == "text_delta":
                    text.append(delta.text)
                elif delta.type == "input_json_delta":
                    arguments.setdefault(event.index, []).append(delta.partial_json)
            elif event.type == "content_block_stop" and event.index in arguments:
                json.loads("".join(arguments[event.index]))
        return count

    return run


def _first_event(make_iter: Callable[[], Iterable[Any]]) -> float:
    start = time.perf_counter()
    iterator = iter(make_iter())
    next(iterator)
    elapsed = time.perf_counter() - start
    for _ in iterator:  # drain, so the connection goes back to the pool
        pass
    return elapsed


def run(report: Report, quick: bool) -> None:
    from miniagent.providers.anthropic import map_messages_stream
    from miniagent.providers.openai import map_chat_stream

    from .server import SSEServer

    section = report.section("streams", "Streams")
    size = (4 if quick else 24) * 1_000_000
    repeats = 3 if quick else 5
    bodies = {"openai": openai_stream(size), "anthropic": anthropic_stream(size)}
    mappers = {"openai": map_chat_stream, "anthropic": map_messages_stream}
    section.notes.append(
        f"Stream bodies: OpenAI {len(bodies['openai'][0]) / 1e6:.1f} MB, Anthropic "
        f"{len(bodies['anthropic'][0]) / 1e6:.1f} MB; 60% text deltas, then tool calls of 200 "
        f"argument fragments each. Fed in {READ // 1024} KiB pieces; median of {repeats} runs. "
        "MB/s counts body bytes; events/s counts SSE events. Over loopback: the same shape at a third "
        "of the size, served chunked from 127.0.0.1 with TCP_NODELAY; clients interleaved."
    )

    from .decode import add_rows as add_decode_rows

    add_decode_rows(section, {api: _payloads(body) for api, (body, _first) in bodies.items()}, quick)

    mini_rates: dict[str, float] = {}
    for api, (body, _first) in bodies.items():
        chunks = _pieces(body)
        payloads = _payloads(body)
        n_events = _decode_only(chunks)
        decode = median([_time(lambda c=chunks: _decode_only(c)) for _ in range(repeats)])  # type: ignore[misc]
        both, floor = [], []
        for _ in range(repeats):  # interleaved with its floor
            both.append(_time(lambda c=chunks, a=api: _decode_map(c, mappers[a])))  # type: ignore[misc]
            floor.append(_time(lambda p=payloads: _floor(p)))  # type: ignore[misc]
        mapped, floor_t = median(both), median(floor)
        mb = len(body) / 1e6
        section.rows.append(
            Row(
                f"{api}: SSE decoder alone, from memory",
                f"{mb / decode:.0f} MB/s",
                "",
                None,
                fmt_rate(n_events / decode, "events/s"),
            )
        )
        section.rows.append(
            Row(
                f"{api}: SSE decoder + stream mapping, from memory",
                f"{mb / mapped:.0f} MB/s",
                f"within {FLOOR_TARGET:.0f}x the floor",
                mapped <= FLOOR_TARGET * floor_t,
                f"{fmt_rate(n_events / mapped, 'events/s')}; {fmt_x(mapped / floor_t)} the floor",
            )
        )
        section.rows.append(
            Row(
                f"{api}: floor, json.loads per payload",
                f"{mb / floor_t:.0f} MB/s",
                "",
                None,
                fmt_rate(len(payloads) / floor_t, "events/s"),
            )
        )
        mini_rates[api] = mb / mapped

    with SSEServer() as server:
        # over loopback a smaller body: the SDKs parse at a few MB/s
        wire = {"openai": openai_stream(size // 3), "anthropic": anthropic_stream(size // 3)}
        for api, (body, first) in wire.items():
            server.add("big", api, body, first)
        small = {"openai": openai_stream(20_000), "anthropic": anthropic_stream(20_000)}
        for api, (body, first) in small.items():
            server.add("small", api, body, first)

        clients: dict[str, dict[str, Callable[[str], Callable[[], int]]]] = {
            "openai": {"miniagent OpenAIChatClient": _mini_openai},
            "anthropic": {"miniagent AnthropicClient": _mini_anthropic},
        }
        if have("openai"):
            clients["openai"]["openai SDK"] = _sdk_openai
        else:
            report.skip("openai SDK", "not installed in this venv (bench/requirements.txt)")
        if have("anthropic"):
            clients["anthropic"]["anthropic SDK"] = _sdk_anthropic
        else:
            report.skip("anthropic SDK", "not installed in this venv (bench/requirements.txt)")

        for api, makers in clients.items():
            base = server.openai_base if api == "openai" else server.anthropic_base
            body = wire[api][0]
            mb = len(body) / 1e6
            runners: dict[str, Callable[[], int]] = {}
            for label, make in makers.items():
                try:
                    runner = make(base("big"))
                    runner()  # warm-up: imports, connection pool
                    runners[label] = runner
                except Exception as error:
                    report.skip(f"{label} over loopback", f"{type(error).__name__}: {error}"[:300])
            times: dict[str, list[float]] = {label: [] for label in runners}
            for _ in range(repeats):
                for label, runner in runners.items():
                    times[label].append(_time(runner))
            rates = {label: mb / median(t) for label, t in times.items()}
            mini_label = next(iter(makers))
            for label, rate in rates.items():
                if label == mini_label:
                    section.rows.append(Row(f"{api}: {label} over loopback", f"{rate:.0f} MB/s"))
                else:
                    ratio = rates.get(mini_label, 0.0) / rate
                    section.rows.append(
                        Row(
                            f"{api}: {label} over loopback",
                            f"{rate:.1f} MB/s",
                            "miniagent >= SDK",
                            ratio >= SDK_TARGET,
                            f"miniagent {fmt_x(ratio)} as fast",
                        )
                    )

            # time to first event, small stream, interleaved
            firsts: dict[str, list[float]] = {label: [] for label in runners}
            makers_small: dict[str, Callable[[], Iterable[Any]]] = {}
            for label in runners:
                makers_small[label] = _first_event_maker(api, label, base("small"))
            for maker in makers_small.values():
                _first_event(maker)
            for _ in range(15 if quick else 40):
                for label, maker in makers_small.items():
                    firsts[label].append(_first_event(maker))
            mini_first = median(firsts[mini_label])
            for label, samples in firsts.items():
                first_t = median(samples)
                if label == mini_label:
                    section.rows.append(Row(f"{api}: {label}, time to first event", fmt_ms(first_t)))
                else:
                    section.rows.append(
                        Row(
                            f"{api}: {label}, time to first event",
                            fmt_ms(first_t),
                            "miniagent <= SDK",
                            mini_first <= first_t,
                            f"miniagent {fmt_ms(mini_first)}",
                        )
                    )
    _endless_line_memory(section)


_ENDLESS_LINE = r"""
import resource, socket, threading
from miniagent import ProviderError
from miniagent.providers import HTTPSettings, OpenAIChatClient, RetryPolicy
from miniagent.model import ModelRequest
from miniagent.messages import Message

listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(1)
piece = b"x" * 65536

def serve():
    conn, _ = listener.accept()
    conn.recv(65536)
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\ndata: ")
    try:
        while True:
            conn.sendall(piece)
    except OSError:
        pass

threading.Thread(target=serve, daemon=True).start()
base = "http://127.0.0.1:%d/v1" % listener.getsockname()[1]
client = OpenAIChatClient("m", base, settings=HTTPSettings(retry=RetryPolicy(max_retries=0)))
try:
    for _ in client.stream(ModelRequest("", [Message("user", "hi")], (), None)):
        pass
    print("no error")
except ProviderError as err:
    print(err.kind)
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
"""


def _endless_line_memory(section: Any) -> None:
    """Peak RSS of a process whose client reads an SSE line that never ends (issue 13 kind 3)."""
    import subprocess
    import sys

    from .common import ROOT

    done = subprocess.run(
        [sys.executable, "-c", _ENDLESS_LINE], capture_output=True, text=True, timeout=300, cwd=ROOT
    )
    lines = done.stdout.split()
    if done.returncode != 0 or len(lines) != 2:
        section.rows.append(Row("SSE line that never ends: peak RSS", "failed", note=done.stderr[-200:]))
        return
    kind, peak = lines[0], int(lines[1])
    section.rows.append(
        Row(
            "SSE line that never ends: peak RSS of the client process",
            f"{peak / 1e6:.0f} MB",
            "< 200 MB, ProviderError",
            peak < 200e6 and kind == "sse_too_large",
            f"stopped at the 64 MiB line cap ({kind})",
        )
    )


def _first_event_maker(api: str, label: str, base: str) -> Callable[[], Iterable[Any]]:
    """A callable that opens one stream and returns its iterator (the request starts there)."""
    if label.startswith("miniagent"):
        from miniagent.providers import AnthropicClient, HTTPSettings, OpenAIChatClient, RetryPolicy

        no_retry = HTTPSettings(retry=RetryPolicy(max_retries=0))

        client: Any = (
            OpenAIChatClient("gpt-4o-mini", base_url=base, settings=no_retry)
            if api == "openai"
            else AnthropicClient("claude-sonnet-4-5", base_url=base, settings=no_retry)
        )
        request = _request()
        return lambda: client.stream(request)
    messages = [{"role": "user", "content": "Hi"}]
    if api == "openai":
        import openai

        sdk = openai.OpenAI(base_url=base, api_key="bench", max_retries=0)
        return lambda: sdk.chat.completions.create(model="gpt-4o-mini", messages=messages, stream=True)  # type: ignore[arg-type]
    import anthropic

    sdk2 = anthropic.Anthropic(base_url=base, api_key="bench", max_retries=0)
    return lambda: sdk2.messages.create(
        model="claude-sonnet-4-5", max_tokens=64, messages=messages, stream=True
    )  # type: ignore[arg-type]


def _time(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start
