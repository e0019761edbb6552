"""Traces of a real CLI run: the CLI child sends its spans with the SDK's OTLP/HTTP exporter into
a real OTLP receiver of ours on 127.0.0.1 (protobuf decoded with ``opentelemetry-proto``),
while a loopback fake of the OpenAI API plays the model. Configured only by the standard
``OTEL_*`` variables and ``TRACEPARENT``, as a cron job would."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk.trace")
pytest.importorskip("opentelemetry.exporter.otlp.proto.http.trace_exporter")
pytest.importorskip("opentelemetry.proto.collector.trace.v1.trace_service_pb2")

from miniagent.cli.tracing import wanted_exporters
from tests.cli_helpers import STALL, FakeOpenAI, model_args, run_cli, spawn_cli, text_turn, tool_turn
from tests.otlp_receiver import OTLPReceiver, ReceivedSpan

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"
NOTES = "the secret notes of the workspace"
PROMPT = "summarise my private notes"
INTERNAL, CLIENT, ERROR = 1, 3, 2  # OTLP enums


def _workspace(tmp_path: Path) -> Path:
    workspace = tmp_path / "work"
    workspace.mkdir()
    (workspace / "notes.txt").write_text(NOTES)
    return workspace


def _otel_env(receiver: OTLPReceiver, **extra: str) -> dict[str, str]:
    return {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "OTEL_BSP_SCHEDULE_DELAY": "60000", **extra}


def _named(spans: list[ReceivedSpan]) -> dict[str, list[ReceivedSpan]]:
    named: dict[str, list[ReceivedSpan]] = {}
    for span in spans:
        named.setdefault(span.name, []).append(span)
    return named


def test_a_run_sends_its_span_tree_under_traceparent(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path)
    turns = [tool_turn("read_file", {"path": "notes.txt"}), text_turn("They are notes.")]
    with FakeOpenAI(turns) as server, OTLPReceiver() as receiver:
        env = _otel_env(receiver, TRACEPARENT=TRACEPARENT)
        done = run_cli(["run", *model_args(server, workspace), PROMPT], tmp_path, env=env)
        assert done.returncode == 0, done.stderr
        # The schedule delay is a minute: the spans arrived because the CLI flushed at the run's end.
        spans = receiver.wait_spans(4, timeout=1)
    assert set(receiver.paths) == {"/v1/traces"}
    assert set(receiver.content_types) == {"application/x-protobuf"}
    named = _named(spans)
    assert sorted(named) == ["chat test", "execute_tool read_file", "invoke_agent"]
    run = named["invoke_agent"][0]
    assert run.trace_id == TRACE_ID and run.parent_span_id == PARENT_ID  # a child of TRACEPARENT
    assert run.kind == INTERNAL
    assert run.scope == "miniagent"
    assert run.resource["service.name"] == "miniagent"
    assert run.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert run.attributes["gen_ai.provider.name"] == "openai"
    assert run.attributes["gen_ai.request.model"] == "test"
    assert run.attributes["miniagent.stop_reason"] == "complete"
    chats = named["chat test"]
    assert len(chats) == 2
    tool = named["execute_tool read_file"][0]
    for child in (*chats, tool):
        assert child.trace_id == TRACE_ID and child.parent_span_id == run.span_id
    assert all(chat.kind == CLIENT for chat in chats)
    assert chats[0].attributes["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert chats[1].attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert chats[0].attributes["server.address"] == "127.0.0.1"
    assert chats[0].attributes["gen_ai.response.model"] == "test"  # as the server's chunks say
    assert chats[0].attributes["gen_ai.response.id"] == "chatcmpl-test"
    assert tool.attributes["gen_ai.tool.call.id"] == "call_1"
    assert tool.attributes["gen_ai.tool.name"] == "read_file"
    assert "error.type" not in tool.attributes
    for span in spans:  # no content without the opt-in
        text = repr(span.attributes)
        assert NOTES not in text and PROMPT not in text, span.name


def test_contents_go_on_spans_with_the_standard_opt_in(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path)
    turns = [tool_turn("read_file", {"path": "notes.txt"}), text_turn("They are notes.")]
    with FakeOpenAI(turns) as server, OTLPReceiver() as receiver:
        env = _otel_env(receiver, OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="true")
        done = run_cli(["run", *model_args(server, workspace), PROMPT], tmp_path, env=env)
        assert done.returncode == 0, done.stderr
        named = _named(receiver.wait_spans(4, timeout=1))
    tool = named["execute_tool read_file"][0]
    assert NOTES in str(tool.attributes["gen_ai.tool.call.result"])
    assert PROMPT in str(named["chat test"][0].attributes["gen_ai.input.messages"])


@pytest.mark.parametrize(
    ("how", "code"), [("SIGINT", 130), ("timeout", 124)], ids=["ctrl-c", "timeout"]
)
def test_a_cancelled_run_still_sends_its_spans(tmp_path: Path, how: str, code: int) -> None:
    workspace = _workspace(tmp_path)
    with FakeOpenAI([STALL]) as server, OTLPReceiver() as receiver:
        extra = ["--timeout", "1"] if how == "timeout" else []
        args = ["run", *extra, *model_args(server, workspace), "go"]
        child = spawn_cli(args, tmp_path, env=_otel_env(receiver))
        try:
            assert server.first_event_sent.wait(15)  # the child is blocked reading the stream
            if how == "SIGINT":
                child.send_signal(signal.SIGINT)
            _, stderr = child.communicate(timeout=15)
        finally:
            child.kill()
        assert child.returncode == code, stderr
        named = _named(receiver.wait_spans(2, timeout=1))
    run = named["invoke_agent"][0]
    assert run.attributes["miniagent.stop_reason"] == "aborted"
    chat = named["chat test"][0]
    assert chat.attributes["error.type"] == "cancelled" and chat.status_code == ERROR
    assert chat.parent_span_id == run.span_id


def test_a_provider_error_is_the_error_type_of_the_run(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path)
    with FakeOpenAI([("status", 400, "bad request")]) as server, OTLPReceiver() as receiver:
        done = run_cli(["run", *model_args(server, workspace), "go"], tmp_path, env=_otel_env(receiver))
        assert done.returncode == 1, done.stderr
        named = _named(receiver.wait_spans(2, timeout=1))
    for name in ("invoke_agent", "chat test"):
        span = named[name][0]
        assert span.attributes["error.type"] == "miniagent.errors.ProviderError", name
        assert span.status_code == ERROR


def test_an_unknown_exporter_is_one_line_and_the_run_goes_on(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path)
    with FakeOpenAI([text_turn("Fine.")]) as server:
        env = {"OTEL_TRACES_EXPORTER": "zipkin"}
        done = run_cli(["run", *model_args(server, workspace), "go"], tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Fine.\n"
    assert "OTEL_TRACES_EXPORTER=zipkin is not supported" in done.stderr


def test_which_variables_turn_tracing_on() -> None:
    assert wanted_exporters({}) == []
    assert wanted_exporters({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}) == ["otlp"]
    traces_only = {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}
    assert wanted_exporters(traces_only) == ["otlp"]
    assert wanted_exporters({"OTEL_TRACES_EXPORTER": "otlp,console"}) == ["otlp", "console"]
    assert wanted_exporters({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://x"}) == []
    assert wanted_exporters({"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}) == []


def test_a_collector_that_is_not_there_does_not_fail_the_run(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path)
    with OTLPReceiver() as gone:
        endpoint = gone.endpoint  # a port that was just closed: nothing listens there
    with FakeOpenAI([text_turn("Fine.")]) as server:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint}
        done = run_cli(["run", *model_args(server, workspace), "go"], tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Fine.\n"
    assert "Transient error" not in done.stderr  # the SDK's retry lines stay quiet without -v
    failed = [line for line in done.stderr.splitlines() if line.startswith("miniagent: traces: ")]
    assert len(failed) == 1, done.stderr


def test_chat_traces_each_run_and_the_console_exporter_keeps_stdout_clean(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path)
    with FakeOpenAI([text_turn("Fine."), text_turn("Again.")]) as server:
        env = {"OTEL_TRACES_EXPORTER": "console"}
        done = run_cli(["chat", *model_args(server, workspace)], tmp_path, input="hi\nagain\n", env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Fine.\nAgain.\n"  # the spans went to stderr
    assert done.stderr.count('"name": "invoke_agent"') == 2
    assert done.stderr.count('"name": "chat test"') == 2


def test_traces_asked_for_without_the_extra_are_one_line_and_the_run_goes_on(tmp_path: Path) -> None:
    from tests.cli_helpers import REPO

    blocker = tmp_path / "no-otel" / "opentelemetry"  # an opentelemetry that is not installed
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'opentelemetry'\", name='opentelemetry')\n"
    )
    workspace = _workspace(tmp_path)
    with FakeOpenAI([text_turn("Fine.")]) as server:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}
        env["PYTHONPATH"] = f"{blocker.parent}:{REPO}"  # the blocker first
        done = run_cli(["run", *model_args(server, workspace), "go"], tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Fine.\n"
    lines = [line for line in done.stderr.splitlines() if "traces need" in line]
    assert lines == [
        "miniagent: traces need the OpenTelemetry SDK (opentelemetry): pip install 'miniagent[otel]'; "
        "no traces sent"
    ]
