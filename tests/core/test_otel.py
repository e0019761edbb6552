"""``run_agent(tracer=OtelTracer(...))``: the GenAI span tree of a run, read back from the
OpenTelemetry SDK's in-memory exporter (a real SDK pipeline; the loop and the tools are real,
the model is a ``ScriptedClient``)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from miniagent import Approval, DoneEvent, ToolCall, ToolResult, Usage, run_agent
from miniagent.errors import IncompleteResponseError, ProviderError
from miniagent.model import ProviderDoneEvent
from miniagent.testing import ScriptedClient
from tests.helpers import recording_tool

otel_sdk = pytest.importorskip("opentelemetry.sdk.trace")
in_memory = pytest.importorskip("opentelemetry.sdk.trace.export.in_memory_span_exporter")

from opentelemetry import trace  # noqa: E402
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.trace import SpanKind, StatusCode  # noqa: E402

from miniagent.otel import OtelTracer  # noqa: E402

SECRET_PROMPT = "the user's private prompt"
SECRET_ANSWER = "a private answer"
SECRET_RESULT = "ran add"  # what the tool answers
CONTENT_KEYS = {
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.system_instructions",
    "gen_ai.tool.definitions",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
}


class ModelClient(ScriptedClient):
    """A scripted model with the attributes a provider client has."""

    model = "gpt-test"
    base_url = "http://127.0.0.1:8765/v1"
    gen_ai_provider = "openai"


@pytest.fixture
def exporter() -> Iterator[Any]:
    memory = in_memory.InMemorySpanExporter()
    yield memory
    memory.clear()


def _tracer(exporter: Any, **options: Any) -> OtelTracer:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return OtelTracer(provider, **options)


def _by_name(spans: tuple[ReadableSpan, ...]) -> dict[str, list[ReadableSpan]]:
    named: dict[str, list[ReadableSpan]] = {}
    for span in spans:
        named.setdefault(span.name, []).append(span)
    return named


def _two_turns() -> ModelClient:
    return ModelClient([
        [ToolCall("call_1", "add", {"a": 2, "b": 3}), Usage(100, 20, requests=1, cost_usd=0.001)],
        [SECRET_ANSWER, Usage(130, 10, cache_read_tokens=64, requests=1, cost_usd=0.0005),
         ProviderDoneEvent("stop", None, "gpt-test-0613", "resp_2")],
    ])


def _run(client: ScriptedClient, tracer: OtelTracer, **options: Any) -> Any:
    return run_agent(
        client=client, system="be brief", tools=[recording_tool("add")], user=SECRET_PROMPT, max_turns=4,
        tracer=tracer, **options,
    )


def test_a_run_is_one_invoke_agent_span_with_chat_and_execute_tool_children(exporter: Any) -> None:
    result = _run(_two_turns(), _tracer(exporter))
    assert result.stop_reason == "complete"
    spans = exporter.get_finished_spans()
    named = _by_name(spans)
    assert sorted(named) == ["chat gpt-test", "execute_tool add", "invoke_agent"]
    run = named["invoke_agent"][0]
    chats = named["chat gpt-test"]
    tool = named["execute_tool add"][0]
    assert len(chats) == 2
    assert run.parent is None
    for child in (*chats, tool):
        assert child.parent is not None and child.parent.span_id == run.context.span_id
        assert child.context.trace_id == run.context.trace_id
    assert run.kind == SpanKind.INTERNAL and tool.kind == SpanKind.INTERNAL
    assert all(chat.kind == SpanKind.CLIENT for chat in chats)
    # the order of the run: chat, tool, chat
    assert chats[0].end_time <= tool.start_time and tool.end_time <= chats[1].start_time

    assert run.attributes is not None
    assert run.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert run.attributes["gen_ai.provider.name"] == "openai"
    assert run.attributes["gen_ai.request.model"] == "gpt-test"
    assert run.attributes["miniagent.stop_reason"] == "complete"
    assert run.attributes["gen_ai.usage.input_tokens"] == 230
    assert run.attributes["gen_ai.usage.output_tokens"] == 30
    assert run.attributes["miniagent.usage.requests"] == 2
    assert run.attributes["miniagent.usage.cost_usd"] == pytest.approx(0.0015)
    assert run.status.status_code == StatusCode.UNSET

    first, second = (chat.attributes or {} for chat in chats)
    assert first["gen_ai.operation.name"] == "chat"
    assert first["gen_ai.request.model"] == "gpt-test"
    assert first["server.address"] == "127.0.0.1" and first["server.port"] == 8765
    assert first["gen_ai.usage.input_tokens"] == 100 and first["gen_ai.usage.output_tokens"] == 20
    assert first["miniagent.usage.cost_usd"] == pytest.approx(0.001)
    assert second["gen_ai.usage.cache_read.input_tokens"] == 64
    assert second["gen_ai.response.model"] == "gpt-test-0613" and second["gen_ai.response.id"] == "resp_2"
    assert second["gen_ai.response.finish_reasons"] == ("stop",)
    assert "gen_ai.response.model" not in first  # the first turn's server named none
    assert "gen_ai.response.time_to_first_chunk" in first

    tool_attributes = tool.attributes or {}
    assert tool_attributes["gen_ai.operation.name"] == "execute_tool"
    assert tool_attributes["gen_ai.tool.name"] == "add"
    assert tool_attributes["gen_ai.tool.call.id"] == "call_1"
    assert tool_attributes["gen_ai.tool.type"] == "function"
    assert tool_attributes["gen_ai.tool.description"] == "the add tool"
    assert "error.type" not in tool_attributes


def test_no_content_on_any_span_unless_asked(exporter: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", raising=False)
    _run(_two_turns(), _tracer(exporter))
    for span in exporter.get_finished_spans():
        attributes = dict(span.attributes or {})
        assert not CONTENT_KEYS & set(attributes), span.name
        text = json.dumps(attributes, default=str)
        for secret in (SECRET_PROMPT, SECRET_ANSWER, SECRET_RESULT, "be brief", '"a": 2'):
            assert secret not in text, (span.name, secret)
        assert not span.events  # no exception or content events either


def test_content_when_the_standard_variable_opts_in(exporter: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    _run(_two_turns(), _tracer(exporter))
    named = _by_name(exporter.get_finished_spans())
    first, second = (c.attributes or {} for c in named["chat gpt-test"])
    sent = json.loads(str(first["gen_ai.input.messages"]))
    assert sent == [{"role": "user", "parts": [{"type": "text", "content": SECRET_PROMPT}]}]
    assert json.loads(str(first["gen_ai.system_instructions"])) == [{"type": "text", "content": "be brief"}]
    asked = json.loads(str(first["gen_ai.output.messages"]))
    call = {"type": "tool_call", "id": "call_1", "name": "add", "arguments": {"a": 2, "b": 3}}
    assert asked[0]["parts"] == [call]
    roles = [m["role"] for m in json.loads(str(second["gen_ai.input.messages"]))]
    assert roles == ["user", "assistant", "tool"]
    answered = json.loads(str(second["gen_ai.output.messages"]))
    assert answered[0]["parts"] == [{"type": "text", "content": SECRET_ANSWER}]
    tool = named["execute_tool add"][0].attributes or {}
    assert json.loads(str(tool["gen_ai.tool.call.arguments"])) == {"a": 2, "b": 3}
    assert tool["gen_ai.tool.call.result"] == SECRET_RESULT


def test_the_parameter_overrides_the_variable(exporter: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    _run(_two_turns(), _tracer(exporter, capture_content=False))
    for span in exporter.get_finished_spans():
        assert not CONTENT_KEYS & set(span.attributes or {})


def test_the_run_span_is_a_child_of_the_current_span(exporter: Any) -> None:
    tracer = _tracer(exporter)
    outer_tracer = trace.get_tracer("test", tracer_provider=_provider_of(exporter))
    with outer_tracer.start_as_current_span("cron job") as outer:
        _run(_two_turns(), tracer)
    run = _by_name(exporter.get_finished_spans())["invoke_agent"][0]
    assert run.parent is not None and run.parent.span_id == outer.get_span_context().span_id
    assert run.context.trace_id == outer.get_span_context().trace_id


def _provider_of(exporter: Any) -> TracerProvider:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider


def test_a_provider_error_marks_the_request_and_the_run(exporter: Any) -> None:
    client = ModelClient([["partial", ProviderError("overloaded (secret detail)", status=529)]])
    with pytest.raises(ProviderError):
        _run(client, _tracer(exporter))
    named = _by_name(exporter.get_finished_spans())
    for span in (named["chat gpt-test"][0], named["invoke_agent"][0]):
        attributes = span.attributes or {}
        assert attributes["error.type"] == "miniagent.errors.ProviderError", span.name
        assert span.status.status_code == StatusCode.ERROR
        assert "secret detail" not in (span.status.description or "")
        assert not span.events
    assert client.closed == 1  # the client's stream was closed through the traced one


def test_an_incomplete_answer_names_its_reason(exporter: Any) -> None:
    client = ModelClient([["The answer is", DoneEvent("length", "max_output_tokens")]])
    with pytest.raises(IncompleteResponseError):
        _run(client, _tracer(exporter))
    named = _by_name(exporter.get_finished_spans())
    chat = named["chat gpt-test"][0].attributes or {}
    assert chat["gen_ai.response.finish_reasons"] == ("length",)
    assert chat["miniagent.incomplete_reason"] == "max_output_tokens"
    run = named["invoke_agent"][0].attributes or {}
    assert run["error.type"] == "miniagent.errors.IncompleteResponseError"
    assert run["miniagent.error.reason"] == "max_output_tokens"


def test_tool_failures_refusals_and_errors_have_their_error_type(exporter: Any) -> None:
    def explode(arguments: dict[str, Any], cancel: threading.Event | None) -> ToolResult:
        raise ValueError("the tool broke (secret detail)")

    client = ModelClient([
        [ToolCall("c1", "add", {}), ToolCall("c2", "nope", {}), ToolCall("c3", "boom", {})],
    ])
    tools = [recording_tool("add"), recording_tool("boom", action=explode)]

    def refuse_add(call: ToolCall) -> Approval:
        return Approval(False, "no") if call.name == "add" else Approval(True)

    with pytest.raises(ValueError):
        run_agent(client=client, system="", tools=tools, user="go", max_turns=2,
                  before_tool_call=refuse_add, tracer=_tracer(exporter))
    named = _by_name(exporter.get_finished_spans())
    refused = named["execute_tool add"][0].attributes or {}
    assert refused["error.type"] == "not_approved" and refused["miniagent.tool.approved"] is False
    unknown = named["execute_tool nope"][0].attributes or {}
    assert unknown["error.type"] == "tool_error"
    boom = named["execute_tool boom"][0]
    assert (boom.attributes or {})["error.type"] == "ValueError"
    assert boom.status.status_code == StatusCode.ERROR and not boom.events
    assert (named["invoke_agent"][0].attributes or {})["error.type"] == "ValueError"


def test_a_cancel_during_the_stream_ends_every_span(exporter: Any) -> None:
    cancel = threading.Event()

    def turn(request: Any) -> Iterator[Any]:
        yield "thinking"
        cancel.set()
        yield "more"

    client = ModelClient([turn])
    result = _run(client, _tracer(exporter), cancel=cancel)
    assert result.stop_reason == "aborted"
    named = _by_name(exporter.get_finished_spans())
    assert (named["chat gpt-test"][0].attributes or {})["error.type"] == "cancelled"
    run = named["invoke_agent"][0].attributes or {}
    assert run["miniagent.stop_reason"] == "aborted" and "error.type" not in run


def test_a_client_without_model_or_url_still_gets_named_spans(exporter: Any) -> None:
    result = run_agent(client=ScriptedClient([["hi"]]), system="", tools=[], user="x", max_turns=1,
                       tracer=_tracer(exporter, agent_name="reviewer"))
    assert result.stop_reason == "complete"
    named = _by_name(exporter.get_finished_spans())
    assert sorted(named) == ["chat", "invoke_agent reviewer"]
    run = named["invoke_agent reviewer"][0].attributes or {}
    assert run["gen_ai.agent.name"] == "reviewer"
    assert run["gen_ai.provider.name"] == "scriptedclient"


def test_the_embedded_model_names_its_model_on_the_request_span(exporter: Any) -> None:
    # Found by a new user: the embedded model's request span was named just "chat".
    from pathlib import Path
    from types import SimpleNamespace

    from miniagent.providers.local.client import LocalModelClient

    server = SimpleNamespace(model_path=Path("/cache/SmolLM2-135M-Instruct-Q8_0.gguf"), running=True)
    client = LocalModelClient(server, ScriptedClient([["hi"]]), api="openai")  # type: ignore[arg-type]
    result = run_agent(client=client, system="", tools=[], user="x", max_turns=1, tracer=_tracer(exporter))
    assert result.stop_reason == "complete"
    [chat] = _by_name(exporter.get_finished_spans())["chat SmolLM2-135M-Instruct-Q8_0"]
    assert (chat.attributes or {})["gen_ai.request.model"] == "SmolLM2-135M-Instruct-Q8_0"


def test_the_compaction_summary_request_is_a_chat_span_too(exporter: Any) -> None:
    from miniagent import Compaction, ToolResult
    from tests.window_model import WindowModel

    def answer(turn: int, request: Any) -> list[object]:
        return ["done"] if turn >= 12 else [ToolCall(f"c{turn}", "read", {"n": 600})]

    model = WindowModel(4_000, answer)
    read = recording_tool("read", action=lambda arguments, cancel: ToolResult("r" * arguments["n"]))
    result = run_agent(client=model, system="", tools=[read], user="go", max_turns=40,
                       compaction=Compaction(2_000, keep_chars=1_500), tracer=_tracer(exporter))
    assert result.stop_reason == "complete" and model.summaries
    spans = exporter.get_finished_spans()
    chats = [s for s in spans if (s.attributes or {}).get("gen_ai.operation.name") == "chat"]
    assert len(chats) == len(model.sent)  # every request: the turns and each summary request
    run = _by_name(spans)["invoke_agent"][0]
    assert all(chat.parent is not None and chat.parent.span_id == run.context.span_id for chat in chats)
