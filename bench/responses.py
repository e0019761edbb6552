"""The OpenAI Responses API: miniagent's reader against the official ``openai`` SDK, and cancel.

- Interop: every ``tests/fixtures/sse/responses-*.sse`` served over loopback to
  ``OpenAIResponsesClient`` and to the SDK's ``client.responses.create(stream=True)``; both must
  read the same text, the same calls (id, name, arguments; ``None`` for a cut call) and the same
  ending (``completed``, ``refusal``, the incomplete reason, or the error code).
- Throughput: one long stream built from the fixtures' own events (the text deltas of
  ``responses-text.sse``, the argument deltas of ``responses-function-call.sse``, renumbered),
  from memory (decoder + ``map_responses_stream`` against the ``json.loads`` floor) and over
  loopback (miniagent against the SDK, which builds a typed event per SSE event; both accumulate
  text and arguments).
- Cancel: the Responses client blocked in each phase of a request (connect to a full accept
  queue, sending 30 MB to a server that never reads, waiting for headers, reading a silent body),
  p50 and p99 from ``cancel`` to ``run_agent``'s return (``bench.cancel``'s harness).
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable
from typing import Any

from .common import ROOT, Report, Row, fmt_ms, fmt_rate, fmt_x, have, median, percentile

FIXTURES = ROOT / "tests" / "fixtures" / "sse"
SDK_TARGET = 10.0
FLOOR_TARGET = 3.0
READ = 65536
CANCEL_TARGET = 0.100


# --- the long stream ------------------------------------------------------------------------------


def _events(name: str) -> list[dict[str, Any]]:
    body = (FIXTURES / name).read_text()
    return [json.loads(line[6:]) for line in body.splitlines() if line.startswith("data: ")]


def long_stream(target_bytes: int) -> tuple[bytes, int]:
    """(body, length of the first event): the fixtures' own events, repeated to ``target_bytes``
    (60% text deltas, then calls whose arguments arrive in the fixture's fragments)."""
    text_events = _events("responses-text.sse")
    call_events = _events("responses-function-call.sse")
    created = text_events[0]
    deltas = [e for e in text_events if e["type"] == "response.output_text.delta"]
    message = next(e for e in text_events if e["type"] == "response.output_item.added")
    call_added = next(
        e
        for e in call_events
        if e["type"] == "response.output_item.added" and e["item"]["type"] == "function_call"
    )
    call_deltas = [e for e in call_events if e["type"] == "response.function_call_arguments.delta"]
    completed = text_events[-1]
    out: list[bytes] = []
    number = 0

    def emit(event: dict[str, Any]) -> int:
        nonlocal number
        data = {**event, "sequence_number": number}
        number += 1
        out.append(f"event: {event['type']}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode())
        return len(out[-1])

    first = emit(created)
    size = first + emit(message)
    while size < target_bytes * 6 // 10:
        for delta in deltas:
            size += emit(delta)
    call = 0
    while size < target_bytes:
        call += 1
        item_id, call_id = f"fc_bench_{call}", f"call_bench_{call}"
        added = {
            **call_added,
            "output_index": call,
            "item": {**call_added["item"], "id": item_id, "call_id": call_id},
        }
        size += emit(added)
        fragments = ['{"calls":[', *_fragments(call_deltas, 25), "]}"]
        arguments = "".join(fragments)
        for fragment in fragments:
            size += emit(
                {
                    "type": "response.function_call_arguments.delta",
                    "item_id": item_id,
                    "output_index": call,
                    "delta": fragment,
                }
            )
        done_item = {**added["item"], "arguments": arguments, "status": "completed"}
        size += emit({"type": "response.output_item.done", "output_index": call, "item": done_item})
    emit(completed)
    return b"".join(out), first


def _fragments(call_deltas: list[dict[str, Any]], copies: int) -> list[str]:
    """The fixture's argument fragments, ``copies`` times, joined by commas (one JSON array's items)."""
    out: list[str] = []
    for copy in range(copies):
        pieces = [d["delta"] for d in call_deltas]
        if copy:
            pieces[0] = "," + pieces[0]
        out += pieces
    return out


# --- readers --------------------------------------------------------------------------------------


def _mini_summary(base: str) -> Callable[[], tuple[Any, ...]]:
    from miniagent import Message, ModelRequest, ProviderError
    from miniagent.providers import HTTPSettings, OpenAIResponsesClient, RetryPolicy

    client = OpenAIResponsesClient(
        "gpt-5-mini", base, api_key="bench", settings=HTTPSettings(retry=RetryPolicy(max_retries=0))
    )
    request = ModelRequest("be brief", [Message("user", "go")], (), threading.Event())

    def read() -> tuple[Any, ...]:
        text, calls, ending = [], [], ""
        try:
            for event in client.stream(request):
                if event.type == "text":
                    text.append(event.text)
                elif event.type == "tool_call":
                    call = event.call
                    calls.append((call.id, call.name, None if call.input_error else call.input))
                elif event.type == "done":
                    ending = event.stop_reason or ""
        except ProviderError as error:
            ending = f"error {error.kind}"
        return "".join(text), calls, ending

    return read


def _sdk_summary(base: str) -> Callable[[], tuple[Any, ...]]:
    import openai

    client = openai.OpenAI(base_url=base, api_key="bench", max_retries=0)

    def read() -> tuple[Any, ...]:
        text: dict[str, list[str]] = {}
        calls: dict[str, Any] = {}
        ending, refused = "", False
        for event in client.responses.create(model="gpt-5-mini", input="go", stream=True):
            kind = event.type
            if kind in ("response.output_text.delta", "response.refusal.delta"):
                text.setdefault(event.item_id, []).append(event.delta)
                refused = refused or kind == "response.refusal.delta"
            elif kind == "response.output_item.added" and event.item.type == "function_call":
                calls[event.item.id or ""] = (event.item.call_id, event.item.name, None)
            elif kind == "response.output_item.done" and event.item.type == "function_call":
                item = event.item
                calls[item.id or ""] = (item.call_id, item.name, json.loads(item.arguments))
            elif (
                kind == "response.output_item.done"
                and event.item.type == "message"
                and event.item.id not in text
            ):
                text[event.item.id] = [getattr(part, "text", "") for part in event.item.content]
            elif kind == "response.completed":
                ending = "refusal" if refused else "completed"
            elif kind == "response.incomplete":
                ending = event.response.incomplete_details.reason
            elif kind == "response.failed":
                ending = f"error {event.response.error.code}"
            elif kind == "error":
                ending = f"error {event.code}"
        return "".join("".join(parts) for parts in text.values()), list(calls.values()), ending

    return read


def _mini_throughput(base: str) -> Callable[[], int]:
    from miniagent import Message, ModelRequest
    from miniagent.providers import HTTPSettings, OpenAIResponsesClient, RetryPolicy

    client = OpenAIResponsesClient(
        "gpt-5-mini", base, api_key="bench", settings=HTTPSettings(retry=RetryPolicy(max_retries=0))
    )
    request = ModelRequest("be brief", [Message("user", "go")], (), threading.Event())

    def run() -> int:
        return sum(1 for _ in client.stream(request))

    return run


def _sdk_throughput(base: str) -> Callable[[], int]:
    import openai

    client = openai.OpenAI(base_url=base, api_key="bench", max_retries=0)

    def run() -> int:
        count = 0
        text: list[str] = []
        arguments: dict[str, list[str]] = {}
        for event in client.responses.create(model="gpt-5-mini", input="go", stream=True):
            count += 1
            if event.type == "response.output_text.delta":
                text.append(event.delta)
            elif event.type == "response.function_call_arguments.delta":
                arguments.setdefault(event.item_id, []).append(event.delta)
            elif event.type == "response.output_item.done" and event.item.type == "function_call":
                json.loads("".join(arguments.pop(event.item.id or "", [])))
        return count

    return run


def _time(fn: Callable[[], Any]) -> float:
    import time

    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


# --- the section ----------------------------------------------------------------------------------


def run(report: Report, quick: bool) -> None:
    from .server import SSEServer

    section = report.section("responses", "Responses API streams")
    repeats = 3 if quick else 5
    size = (3 if quick else 12) * 1_000_000
    with SSEServer() as server:
        _interop(report, section, server)
        _throughput(report, section, server, size, repeats)
    _cancel(section, 50 if quick else 200)


def _interop(report: Report, section: Any, server: Any) -> None:
    names = sorted(p.name for p in FIXTURES.glob("responses-*.sse"))
    for name in names:
        server.add(name, "responses", (FIXTURES / name).read_bytes())
    mini = {name: _mini_summary(server.openai_base(name))() for name in names}
    if not have("openai"):
        report.skip("openai SDK (Responses)", "not installed in this venv (bench/requirements.txt)")
        return
    differ = []
    for name in names:
        try:
            theirs = _sdk_summary(server.openai_base(name))()
        except Exception as error:  # the SDK refused the file
            theirs = (f"{type(error).__name__}: {error}",)
        if theirs != mini[name]:
            differ.append(f"{name}: miniagent {mini[name]!r}, SDK {theirs!r}"[:300])
    section.rows.append(
        Row(
            "fixtures read alike by miniagent and the openai SDK",
            f"{len(names) - len(differ)} of {len(names)}",
            "all",
            not differ,
            "; ".join(differ) or "same text, calls (id, name, arguments) and ending",
        )
    )


def _throughput(report: Report, section: Any, server: Any, size: int, repeats: int) -> None:
    from miniagent.net.sse import SSEDecoder, iter_sse_events
    from miniagent.providers._responses_stream import map_responses_stream

    body, _first = long_stream(size)
    chunks = [body[i : i + READ] for i in range(0, len(body), READ)]
    payloads = [e.data for e in iter_sse_events([body]) if e.data]
    n_events = len(payloads)
    mb = len(body) / 1e6

    def mapped() -> int:
        return sum(1 for _ in map_responses_stream(iter_sse_events(chunks)))

    def floor() -> None:
        for data in payloads:
            json.loads(data)

    def decoded() -> int:
        decoder = SSEDecoder()
        return sum(len(decoder.feed(chunk)) for chunk in chunks)

    both, base = [], []
    for _ in range(repeats):
        both.append(_time(mapped))
        base.append(_time(floor))
    mapped_t, floor_t, decode_t = median(both), median(base), median([_time(decoded) for _ in range(repeats)])
    section.rows.append(
        Row(
            "SSE decoder alone, from memory",
            f"{mb / decode_t:.0f} MB/s",
            note=fmt_rate(n_events / decode_t, "events/s"),
        )
    )
    section.rows.append(
        Row(
            "SSE decoder + map_responses_stream, from memory",
            f"{mb / mapped_t:.0f} MB/s",
            f"within {FLOOR_TARGET:.0f}x the floor",
            mapped_t <= FLOOR_TARGET * floor_t,
            f"{fmt_rate(n_events / mapped_t, 'events/s')}; {fmt_x(mapped_t / floor_t)} the floor "
            "(json.loads per payload)",
        )
    )
    wire, wire_first = long_stream(size // 3)
    server.add("big", "responses", wire, wire_first)
    runners: dict[str, Callable[[], int]] = {
        "miniagent OpenAIResponsesClient": _mini_throughput(server.openai_base("big"))
    }
    if have("openai"):
        runners["openai SDK responses.create(stream=True)"] = _sdk_throughput(server.openai_base("big"))
    for runner in runners.values():
        runner()  # warm-up: imports, connection pool
    times: dict[str, list[float]] = {label: [] for label in runners}
    for _ in range(repeats):
        for label, runner in runners.items():
            times[label].append(_time(runner))
    rates = {label: len(wire) / 1e6 / median(t) for label, t in times.items()}
    mini_label = next(iter(runners))
    section.rows.append(Row(f"{mini_label} over loopback", f"{rates[mini_label]:.0f} MB/s"))
    for label, rate in rates.items():
        if label != mini_label:
            ratio = rates[mini_label] / rate
            section.rows.append(
                Row(
                    f"{label} over loopback",
                    f"{rate:.1f} MB/s",
                    f"miniagent >= {SDK_TARGET:.0f}x the SDK",
                    ratio >= SDK_TARGET,
                    f"miniagent {fmt_x(ratio)} as fast",
                )
            )
    section.notes.append(
        f"Long stream: {mb:.1f} MB from memory ({n_events:,} events), {len(wire) / 1e6:.1f} MB over "
        "loopback, made of the events of responses-text.sse (text deltas, 60%) and "
        "responses-function-call.sse (argument fragments, 25 copies per call); "
        f"median of {repeats} runs, the clients interleaved."
    )


# --- cancel ---------------------------------------------------------------------------------------


def _cancel(section: Any, trials: int) -> None:
    from .cancel import BIG_BODY, _Listener, _trial
    from .server import SSEServer

    silent = (
        b'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","item_id":"m",'
        b'"output_index":0,"delta":"Thinking"}\n\n'
    )
    with contextlib.ExitStack() as stack, SSEServer() as server:
        server.add("silent", "responses", silent)
        listeners = {mode: _Listener(mode) for mode in ("full", "idle", "reads")}
        for listener in listeners.values():
            stack.callback(listener.close)
        cases = {
            "connect: accept queue full": (listeners["full"], "", 1),
            "send: 30 MB body, server never reads": (listeners["idle"], "x" * BIG_BODY, 10),
            "waiting for headers": (listeners["reads"], "", 1),
            "reading: a silent body after one event": (None, "", 1),
        }
        for label, (listener, user, divisor) in cases.items():
            start = _cancel_case(listener, user, server.openai_base("silent"))
            _trial(start)
            samples = [_trial(start) for _ in range(max(5, trials // divisor))]
            p50, p99 = median(samples), percentile(samples, 99)
            section.rows.append(
                Row(
                    f"cancel, OpenAIResponsesClient, {label}",
                    f"p50 {fmt_ms(p50)}, p99 {fmt_ms(p99)}",
                    f"p99 < {CANCEL_TARGET * 1e3:.0f} ms",
                    p99 < CANCEL_TARGET,
                    f"max {fmt_ms(max(samples))}; {len(samples)} trials",
                )
            )


def _cancel_case(
    listener: Any, user: str, silent_base: str
) -> Callable[[threading.Event, threading.Event], Any]:
    from miniagent import run_agent
    from miniagent.providers import HTTPSettings, OpenAIResponsesClient, RetryPolicy

    slow = HTTPSettings(read_timeout=60.0, connect_timeout=60.0, retry=RetryPolicy(max_retries=0))
    base = silent_base if listener is None else f"http://127.0.0.1:{listener.port}/v1"

    def start(cancel: threading.Event, blocked: threading.Event) -> Any:
        client = OpenAIResponsesClient("gpt-5-mini", base, api_key="bench", settings=slow)
        on_event: Any = None
        if listener is None:
            on_event = lambda event: blocked.set()  # noqa: E731 (the one event arrived: the socket is silent)
        else:
            listener.seen.clear()
            if listener.mode == "full":
                listener.seen.set()
            threading.Thread(target=lambda: listener.seen.wait(30) and blocked.set(), daemon=True).start()
        try:
            return run_agent(
                client=client,
                system="bench",
                tools=[],
                user=user or "go",
                max_turns=1,
                cancel=cancel,
                on_event=on_event,
            )
        finally:
            client.close()

    return start
