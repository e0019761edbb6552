"""Per-turn loop overhead: a scripted model asks for a trivial tool every turn.

Every turn is one model request (a stream of one tool call and a done event), one approval (the
default), one input check, one tool execution and two committed messages; the last turn answers
in text. Cost per turn = wall time of the whole run / turns. miniagent runs in memory, with a
session file (JSONL, one ``write`` per message, no fsync) and with ``context_max_chars`` (trimming
every request).

Peers, driven without a network and measured in the same run:

- ``llm``: a ``llm.Model`` subclass whose ``execute`` adds one ``ToolCall`` per turn, run with
  ``model.chain(prompt, tools=[...])`` (the pattern of llm's own test mock model).
- ``pydantic-ai``: ``FunctionModel`` returning one ``ToolCallPart`` per turn, ``Agent.run_sync``
  with no request or tool-call limit.
- ``smolagents``: ``ToolCallingAgent`` with a ``Model`` subclass returning one tool call per step
  (the last one calls ``final_answer``), logging off.
"""

from __future__ import annotations

import functools
import gc
import os
import tempfile
import time
from collections.abc import Callable

from .common import Report, Row, Section, fmt_us, fmt_x, have, median

PER_TURN_TARGET = 20e-6
GROWTH_TARGET = 1.5
PEER_TARGET = 1.5
USAGE_TARGET = 1.1  # issue 15: per-turn overhead with usage events within 10%
PEER_BUDGET_SECONDS = 25.0  # most wall time one peer run at one size may take (estimated first)


# --- miniagent --------------------------------------------------------------------------------------


def _miniagent_run(turns: int, mode: str) -> float:
    from miniagent import ToolCall, run_agent, tool
    from miniagent.testing import ScriptedClient

    @tool
    def ping(x: int) -> str:
        """Answer pong.

        Args:
            x: any number.
        """
        return "pong"

    script: list[list[object]] = [[ToolCall(f"call_{i}", "ping", {"x": i})] for i in range(turns - 1)]
    script.append(["done"])
    options: dict[str, object] = {}
    if mode == "usage":  # a UsageEvent per turn, summed, and both budgets checked before each request
        from miniagent import Usage

        used = Usage(1000, 20, 900, 0, 1, 0.0001)
        script = [[*items, used] for items in script]
        options.update(max_total_tokens=10**12, max_cost_usd=10.0**9)
    if mode == "traced":  # OtelTracer into the SDK, a batch processor, an exporter that drops
        options["tracer"] = _tracer()
    client = ScriptedClient(script, record_messages=False)  # type: ignore[arg-type]
    with tempfile.TemporaryDirectory(prefix="bench-loop-") as folder:
        if mode == "session":
            options["session_path"] = os.path.join(folder, "session.jsonl")
        elif mode == "trim":
            options["context_max_chars"] = 2_000
        start = time.perf_counter()
        result = run_agent(client=client, system="bench", tools=[ping], user="go", max_turns=turns, **options)  # type: ignore[arg-type]
        elapsed = time.perf_counter() - start
    assert result.stop_reason == "complete" and len(result.messages) == 2 * turns, result.stop_reason
    return elapsed / turns


@functools.cache
def _tracer() -> object:
    """One ``OtelTracer`` for every traced run, on the OpenTelemetry SDK as the CLI sets it up (a
    ``BatchSpanProcessor``), with an exporter that drops the spans (the cost measured is
    miniagent's and the SDK's)."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    from miniagent.otel import OtelTracer

    class Drop(SpanExporter):  # type: ignore[misc]
        def export(self, spans: object) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(Drop(), max_queue_size=20_000))
    return OtelTracer(provider)


# --- peers ----------------------------------------------------------------------------------------------


def _llm_run(turns: int) -> float:
    from llm.models import Model, ToolCall

    class Scripted(Model):  # type: ignore[misc]
        model_id = "bench-scripted"
        supports_tools = True
        can_stream = True

        def __init__(self) -> None:
            self.calls = 0

        def execute(self, prompt, stream, response, conversation):  # type: ignore[no-untyped-def]
            self.calls += 1
            if self.calls < turns:
                response.add_tool_call(
                    ToolCall(name="ping", arguments={"x": self.calls}, tool_call_id=f"c{self.calls}")
                )
                yield ""
            else:
                yield "done"

    def ping(x: int) -> str:
        """Answer pong."""
        return "pong"

    model = Scripted()
    start = time.perf_counter()
    chain = model.chain("go", tools=[ping])
    chain.chain_limit = turns + 1
    text = chain.text()
    elapsed = time.perf_counter() - start
    assert model.calls == turns and text.endswith("done"), (model.calls, text[-20:])
    return elapsed / turns


def _pydantic_ai_run(turns: int) -> float:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.usage import UsageLimits

    calls = [0]

    def model(messages: list[object], info: AgentInfo) -> ModelResponse:
        calls[0] += 1
        if calls[0] < turns:
            return ModelResponse(parts=[ToolCallPart("ping", {"x": calls[0]}, tool_call_id=f"c{calls[0]}")])
        return ModelResponse(parts=[TextPart("done")])

    agent = Agent(FunctionModel(model))

    @agent.tool_plain
    def ping(x: int) -> str:
        """Answer pong."""
        return "pong"

    start = time.perf_counter()
    result = agent.run_sync("go", usage_limits=UsageLimits(request_limit=None, tool_calls_limit=None))
    elapsed = time.perf_counter() - start
    assert calls[0] == turns and result.output == "done", (calls[0], result.output)
    return elapsed / turns


def _smolagents_run(turns: int) -> float:
    from smolagents import LogLevel, ToolCallingAgent, tool
    from smolagents.models import (
        ChatMessage,
        ChatMessageToolCall,
        ChatMessageToolCallFunction,
        MessageRole,
        Model,
    )

    class Scripted(Model):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__(model_id="bench-scripted")
            self.calls = 0

        def generate(
            self, messages, stop_sequences=None, response_format=None, tools_to_call_from=None, **kwargs
        ):  # type: ignore[no-untyped-def]
            self.calls += 1
            if self.calls < turns:
                function = ChatMessageToolCallFunction({"x": self.calls}, "ping")
            else:
                function = ChatMessageToolCallFunction({"answer": "done"}, "final_answer")
            call = ChatMessageToolCall(function, f"c{self.calls}", "function")
            return ChatMessage(MessageRole.ASSISTANT, content="", tool_calls=[call])

    @tool
    def ping(x: int) -> str:
        """Answer pong.

        Args:
            x: any number.
        """
        return "pong"

    model = Scripted()
    agent = ToolCallingAgent(tools=[ping], model=model, max_steps=turns + 1, verbosity_level=LogLevel.OFF)
    start = time.perf_counter()
    output = agent.run("go")
    elapsed = time.perf_counter() - start
    assert model.calls == turns and output == "done", (model.calls, output)
    return elapsed / turns


PEERS: dict[str, tuple[str, Callable[[int], float]]] = {
    "llm": ("llm", _llm_run),
    "pydantic-ai": ("pydantic_ai", _pydantic_ai_run),
    "smolagents": ("smolagents", _smolagents_run),
}


def _measure(fn: Callable[[int], float], turns: int, repeats: int) -> float:
    gc.collect()
    return median([fn(turns) for _ in range(repeats)])


def run(report: Report, quick: bool) -> None:
    section = report.section("loop", "Per-turn loop overhead")
    sizes = (50, 500, 5000)
    repeats = {50: 15, 500: 5, 5000: 3} if quick else {50: 61, 500: 15, 5000: 7}
    section.notes.append(
        "Cost per turn = wall time of one `run_agent` / turns; each turn streams one tool call, runs "
        "the approval default, the input check, the tool, and commits two messages. Median of "
        + ", ".join(f"{repeats[n]} runs at {n}" for n in sizes)
        + " turns. Session: JSONL file, no fsync. Trimming: `context_max_chars=2000`."
    )
    mini: dict[tuple[str, int], float] = {}
    for mode in ("memory", "session", "trim"):
        _miniagent_run(50, mode)  # warm-up
        for n in sizes:
            mini[mode, n] = _measure(lambda t, m=mode: _miniagent_run(t, m), n, repeats[n])  # type: ignore[misc]
    pairs = [(_miniagent_run(500, "memory"), _miniagent_run(500, "usage")) for _ in range(repeats[500])]
    plain, mini["usage", 500] = median([a for a, _ in pairs]), median([b for _, b in pairs])  # interleaved
    labels = {"memory": "in memory", "session": "with a session file", "trim": "with context_max_chars"}
    for mode in ("memory", "session", "trim"):
        for n in sizes:
            target, met, note = "", None, ""
            if mode == "memory" and n == 5000:
                target, met = f"<= {PER_TURN_TARGET * 1e6:.0f} µs", mini[mode, n] <= PER_TURN_TARGET
            if mode != "memory" and n == 5000:
                growth = mini[mode, 5000] / mini[mode, 50]
                target = f"<= {GROWTH_TARGET}x the cost at 50"
                met = growth <= GROWTH_TARGET
                note = f"{fmt_x(growth)} the cost at 50 turns"
            elif mode == "memory" and n == 5000:
                note = f"{fmt_x(mini[mode, 5000] / mini[mode, 50])} the cost at 50 turns"
            section.rows.append(
                Row(
                    f"miniagent {labels[mode]}, {n} turns", fmt_us(mini[mode, n]) + "/turn", target, met, note
                )
            )

    usage_ratio = mini["usage", 500] / plain
    section.rows.append(
        Row(
            "miniagent in memory with usage and budgets, 500 turns",
            fmt_us(mini["usage", 500]) + "/turn",
            f"<= {USAGE_TARGET}x in memory",
            usage_ratio <= USAGE_TARGET,
            f"{fmt_x(usage_ratio)} the cost in memory (measured alongside)",
        )
    )
    section.notes.append(
        "With usage: every turn also streams a `UsageEvent` (summed into `RunResult.usage`) and the "
        "run has `max_total_tokens` and `max_cost_usd`, checked before each request."
    )
    _traced_rows(section, repeats[500])
    _input_check_rows(section, quick)

    peer_sizes = (50, 500)
    peer_repeats = {50: 3 if quick else 7, 500: 1 if quick else 3}  # fewer when a run is long
    best: dict[int, tuple[str, float]] = {}
    for label, (module, fn) in PEERS.items():
        if not have(module):
            report.skip(f"loop in {label}", "not installed in this venv (bench/requirements.txt)")
            continue
        try:
            fn(10)  # warm-up (imports, first-call caches)
        except Exception as error:  # a peer whose API moved: say so, keep going
            report.skip(
                f"loop in {label}", f"could not be driven offline: {type(error).__name__}: {error}"[:300]
            )
            continue
        previous: float | None = None
        for n in peer_sizes:
            if previous is not None and previous * n * 3 > PEER_BUDGET_SECONDS:
                report.skip(
                    f"loop in {label} at {n} turns",
                    f"estimated over {PEER_BUDGET_SECONDS:.0f} s "
                    f"(at {peer_sizes[0]} turns: {fmt_us(previous)}/turn, growing)",
                )
                continue
            times = peer_repeats[n] if previous is None or previous * n < 3.0 else 1
            cost = _measure(fn, n, times)
            previous = cost
            ratio = cost / mini["memory", n]
            section.rows.append(
                Row(
                    f"{label}, {n} turns",
                    fmt_us(cost) + "/turn",
                    "",
                    None,
                    f"{fmt_x(ratio)} miniagent in memory",
                )
            )
            if n not in best or cost < best[n][1]:
                best[n] = (label, cost)
    for n, (label, cost) in sorted(best.items()):
        ratio = cost / mini["memory", n]
        section.rows.append(
            Row(
                f"fastest peer ({label}) / miniagent, {n} turns",
                fmt_x(ratio),
                f">= {PEER_TARGET}x",
                ratio >= PEER_TARGET,
                f"{fmt_us(cost)} vs {fmt_us(mini['memory', n])} per turn",
            )
        )


def _traced_rows(section: Section, repeats: int) -> None:
    """Tracing on (``run_agent(tracer=OtelTracer(...))``), measured alongside the same runs
    without: two spans per turn (one ``chat``, one ``execute_tool``) go through the SDK."""
    if not (have("opentelemetry.sdk") and have("miniagent.otel")):
        section.notes.append("Tracing on: not measured (the `otel` extra is not installed).")
        return
    _miniagent_run(50, "traced")  # warm-up
    pairs = [(_miniagent_run(500, "memory"), _miniagent_run(500, "traced")) for _ in range(repeats)]
    plain, traced = median([a for a, _ in pairs]), median([b for _, b in pairs])  # interleaved
    section.rows.append(
        Row(
            "miniagent in memory with tracing on, 500 turns",
            fmt_us(traced) + "/turn",
            "reported",
            None,
            f"{fmt_x(traced / plain)} the cost in memory (measured alongside)",
        )
    )
    section.notes.append(
        "Tracing on: `run_agent(tracer=OtelTracer(provider))` with the OpenTelemetry SDK's "
        "`TracerProvider` and a `BatchSpanProcessor` into an exporter that drops the spans: one "
        "`chat` and one `execute_tool` span per turn, under one `invoke_agent` span. Tracing off "
        "(`tracer=None`, the default) is the in-memory row."
    )


UNIQUE_TARGET = 1.0  # seconds: well inside a --timeout of a few seconds


def _input_check_rows(section: Section, quick: bool) -> None:
    """The input check alone: a small tool input (what every turn above runs), and
    ``uniqueItems`` over 20,000 items (linear in the items: hashed canonical forms)."""
    import timeit

    from miniagent import tool
    from miniagent.validation import check_value

    @tool
    def read_file(path: str, offset: int = 0, limit: int = 2000) -> str:
        """Read a file.

        Args:
            path: the file.
            offset: first line.
            limit: most lines.
        """
        return path

    schema, arguments = read_file.input_schema, {"path": "src/app.py", "offset": 10}
    number = 20_000 if quick else 200_000
    small = min(timeit.repeat(lambda: check_value(schema, arguments), number=number, repeat=5)) / number
    label = "input check (check_value) of a small tool input"
    section.rows.append(Row(label, fmt_us(small), note="min of 5 runs"))
    items = [[i, {"n": str(i)}] for i in range(20_000)]
    unique_schema = {"uniqueItems": True}
    unique = median([timeit.timeit(lambda: check_value(unique_schema, items), number=1) for _ in range(5)])
    section.rows.append(
        Row(
            "input check: uniqueItems over 20,000 items",
            f"{unique * 1e3:.1f} ms",
            f"< {UNIQUE_TARGET:.0f} s",
            unique < UNIQUE_TARGET,
            "each item an array holding an object; median of 5",
        )
    )
