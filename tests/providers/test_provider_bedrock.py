"""The Bedrock client against a loopback server that answers as Bedrock's runtime does.

Streams are the transcripts of tests/fixtures/eventstream/ (README there), encoded as AWS event
stream frames and served whole, byte by byte and in random chunks, and cut at every message
boundary. The server (``api_rules_bedrock.BedrockAPI``) checks the bearer key or the SigV4
signature (recomputed from the documented algorithm), the path and the body, and answers a
breaking request with the API's own error.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from api_rules_bedrock import (
    ACCESS_KEY,
    EVENTSTREAM,
    KEY,
    SECRET_KEY,
    SESSION_TOKEN,
    BedrockAPI,
    anthropic_thinking,
    bedrock_error,
    bedrock_reply,
)
from eventstream_frames import boundaries, encoded, transcript
from providers_server import ProviderServer, RecordingWait, Reply, byte_by_byte, random_chunks, request, run

from miniagent import (
    IncompleteResponseError,
    Message,
    ModelRequest,
    ProviderError,
    Reasoning,
    Tool,
    ToolCall,
    ToolResult,
    ToolSpec,
    load_session,
    run_agent,
)
from miniagent.model import ReasoningEvent, UsageEvent
from miniagent.process.environment import is_secret_name
from miniagent.providers import HTTPSettings, RetryPolicy, create_client
from miniagent.providers._bedrock_body import bedrock_origin, build_converse_body
from miniagent.providers.bedrock import BedrockClient, endpoint

pytestmark = pytest.mark.timeout(30)

NO_RETRY = HTTPSettings(retry=RetryPolicy(max_retries=0))
CLAUDE = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
THINKING = {"additionalModelRequestFields": {"thinking": {"type": "enabled", "budget_tokens": 1024}}}

# name -> (text, calls as (id, name, input, cut?), stopReason, incomplete, usage (input, output, read, write))
FIXTURES: dict[
    str, tuple[str, list[tuple[str, str, dict[str, Any], bool]], str, str | None, tuple[int, ...]]
] = {
    "bedrock-text.json": ("Hello! How can I help you today?", [], "end_turn", None, (12, 10, 0, 0)),
    "bedrock-tool-use.json": (
        "I'll check the weather in Seattle.",
        [
            (
                "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q",
                "get_weather",
                {"location": "Seattle, WA", "unit": "fahrenheit"},
                False,
            )
        ],
        "tool_use",
        None,
        (391, 93, 0, 0),
    ),
    "bedrock-parallel-tools.json": (
        "",
        [
            ("tooluse_Ab3dE5fG7hI9jK1lM3nO5p", "read_file", {"path": "notes.txt"}, False),
            ("tooluse_Qr7sT9uV1wX3yZ5aB7cD9e", "list_dir", {"path": "."}, False),
        ],
        "tool_use",
        None,
        (512, 71, 0, 0),
    ),
    "bedrock-reasoning-tool-use.json": (
        "Let me look that up.",
        [("tooluse_PaR1s0wEaTh3rCaLl00000a", "get_weather", {"location": "Paris"}, False)],
        "tool_use",
        None,
        (602, 157, 0, 0),
    ),
    "bedrock-redacted-reasoning.json": ("Here is the answer: 42.", [], "end_turn", None, (88, 40, 0, 0)),
    "bedrock-max-tokens-mid-call.json": (
        "I'll write the chapter now.",
        [("tooluse_Wr1teCh4pterCutOff000b", "write_file", {}, True)],
        "max_tokens",
        "max_output_tokens",
        (240, 1024, 0, 0),
    ),
    "bedrock-max-tokens-text.json": (
        "Here is a short story about a lighthouse keeper named Ada. Every night she",
        [],
        "max_tokens",
        "max_output_tokens",
        (31, 16, 0, 0),
    ),
    "bedrock-guardrail.json": (
        "Sorry, the model cannot answer this question.",
        [],
        "guardrail_intervened",
        "content_filter",
        (44, 0, 0, 0),
    ),
    "bedrock-content-filtered.json": (
        "To make it you would first",
        [],
        "content_filtered",
        "content_filter",
        (19, 7, 0, 0),
    ),
    "bedrock-context-window.json": (
        "Summing up the files above: the parser",
        [],
        "model_context_window_exceeded",
        "context_window",
        (199000, 1000, 0, 0),
    ),
    "bedrock-malformed-tool-use.json": ("", [], "malformed_tool_use", "provider_error", (377, 52, 0, 0)),
    "bedrock-cached-usage.json": (
        "The function `parse_args` is defined in cli.py at line 42.",
        [],
        "end_turn",
        None,
        (4 + 12288 + 1196, 18, 12288, 1196),
    ),
}
VARIANTS = {
    "whole": lambda body: [body],
    "byte_by_byte": byte_by_byte,
    "random": lambda body: random_chunks(body, seed=len(body), max_size=97),
}


def client(server: ProviderServer, model: str = CLAUDE, **options: Any) -> BedrockClient:
    options.setdefault("settings", NO_RETRY)
    return BedrockClient(model, server.url, KEY, **options)


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("name", list(FIXTURES))
def test_every_transcript_maps_the_same_however_it_is_served(name: str, variant: str) -> None:
    text, calls, stop_reason, incomplete, usage = FIXTURES[name]
    reply = Reply(VARIANTS[variant](encoded(name)), content_type=EVENTSTREAM)
    with ProviderServer(handler=BedrockAPI(reply)) as server:
        c = client(server)
        out = run(c.stream(request()))
        c.close()
    assert out.text == text
    assert [(c.id, c.name, c.input, c.input_error is not None) for c in out.calls] == calls
    assert [(d.stop_reason, d.incomplete) for d in out.done] == [(stop_reason, incomplete)]
    used = [e.usage for e in out.events if isinstance(e, UsageEvent)]
    fields = [(u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens) for u in used]
    assert fields == [usage]


def test_reasoning_is_kept_with_its_signature_or_its_redacted_data() -> None:
    blocks = []
    for name in ("bedrock-reasoning-tool-use.json", "bedrock-redacted-reasoning.json"):
        with ProviderServer(handler=BedrockAPI(bedrock_reply(name))) as server:
            c = client(server)
            blocks += [e.reasoning for e in c.stream(request()) if isinstance(e, ReasoningEvent)]
            c.close()
    signed, redacted = blocks
    pieces = transcript("bedrock-reasoning-tool-use.json")
    signature = pieces[3]["payload"]["delta"]["reasoningContent"]["signature"]
    assert (signed.text, signed.signature) == (
        "The user wants the weather in Paris. I should call get_weather.",
        signature,
    )
    assert (
        redacted.redacted_data
        == transcript("bedrock-redacted-reasoning.json")[1]["payload"]["delta"]["reasoningContent"][
            "redactedContent"
        ]
    )
    assert signed.data == redacted.data == {"model": CLAUDE}


@pytest.mark.parametrize("name", list(FIXTURES))
def test_a_stream_cut_before_message_stop_is_a_retryable_error(name: str) -> None:
    body = encoded(name)
    stop = next(i for i, m in enumerate(transcript(name)) if m["headers"][":event-type"] == "messageStop")
    for cut in [0, *boundaries(name)[:stop]]:
        with ProviderServer(Reply([body[:cut]], content_type=EVENTSTREAM)) as server:
            c = client(server)
            with pytest.raises(ProviderError, match="no messageStop") as caught:
                run(c.stream(request()))
            c.close()
        assert caught.value.retryable


def test_a_frame_cut_or_corrupted_in_transit_is_retried_before_the_first_event() -> None:
    body = encoded("bedrock-text.json")
    corrupt = body[:40] + bytes([body[40] ^ 0xFF]) + body[41:]
    wait = RecordingWait()
    settings = HTTPSettings(retry=RetryPolicy(max_retries=3, wait=wait))
    replies = (Reply([corrupt], content_type=EVENTSTREAM), Reply([body[:5]], content_type=EVENTSTREAM))
    with ProviderServer(*replies, Reply([body], content_type=EVENTSTREAM)) as server:
        c = client(server, settings=settings)
        out = run(c.stream(request()))
        c.close()
    assert (
        out.text == "Hello! How can I help you today?" and len(server.requests) == 3 and len(wait.delays) == 2
    )


def test_a_stream_exception_after_text_raises_and_is_not_retried() -> None:
    wait = RecordingWait()
    with ProviderServer(bedrock_reply("bedrock-throttling-midstream.json")) as server:
        c = client(server, settings=HTTPSettings(retry=RetryPolicy(max_retries=3, wait=wait)))
        seen: list[Any] = []
        with pytest.raises(ProviderError) as caught:
            for e in c.stream(request()):
                seen.append(e)
        c.close()
    assert str(caught.value) == (
        "Bedrock stream error (throttlingException): Too many tokens, please wait before trying again."
    )
    assert caught.value.kind == "throttlingException" and caught.value.retryable
    assert [e.text for e in seen] == ["Let me"] and len(server.requests) == 1 and wait.delays == []


def test_a_model_stream_error_before_any_event_is_retried() -> None:
    wait = RecordingWait()
    replies = (bedrock_reply("bedrock-model-stream-error.json"), bedrock_reply("bedrock-text.json"))
    with ProviderServer(*replies) as server:
        c = client(server, settings=HTTPSettings(retry=RetryPolicy(max_retries=2, wait=wait)))
        assert run(c.stream(request())).text == "Hello! How can I help you today?"
        c.close()
    assert len(server.requests) == 2


def test_a_validation_exception_is_the_api_s_words_and_not_retried() -> None:
    message = "The provided model identifier is invalid."
    with ProviderServer(bedrock_error(message)) as server:
        c = client(server, settings=HTTPSettings(retry=RetryPolicy(max_retries=3, wait=RecordingWait())))
        with pytest.raises(ProviderError) as caught:
            run(c.stream(request()))
        c.close()
    assert str(caught.value) == f"Bedrock HTTP 400: {message}" and len(server.requests) == 1


def test_the_request_is_what_the_api_takes() -> None:
    spec = ToolSpec(
        "read_file", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}}
    )
    bare = ToolSpec("now", "", {"type": "object", "properties": {}})
    api = BedrockAPI(bedrock_reply("bedrock-text.json"))
    with ProviderServer(handler=api) as server:
        c = client(server, max_tokens=512, temperature=0.3)
        run(c.stream(ModelRequest("Be brief.", [Message("user", "hi")], (spec, bare))))
        c.close()
    (sent,) = server.requests
    assert api.refused == [] and api.models == [CLAUDE]
    assert sent.path == "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream"
    headers = {k.lower(): v for k, v in sent.headers.items()}
    assert headers["authorization"] == f"Bearer {KEY}" and headers["accept"] == EVENTSTREAM
    assert sent.body == {
        "messages": [{"role": "user", "content": [{"text": "hi"}]}],
        "system": [{"text": "Be brief."}],
        "inferenceConfig": {"maxTokens": 512, "temperature": 0.3},
        "toolConfig": {
            "tools": [
                {
                    "toolSpec": {
                        "name": "read_file",
                        "description": "Read a file.",
                        "inputSchema": {
                            "json": {"type": "object", "properties": {"path": {"type": "string"}}}
                        },
                    }
                },
                {"toolSpec": {"name": "now", "inputSchema": {"json": {"type": "object", "properties": {}}}}},
            ]
        },
    }
    assert KEY not in repr(c)


def test_the_endpoint_follows_the_region_and_the_key_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_BEARER_TOKEN_BEDROCK"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", KEY)
    assert (
        BedrockClient(CLAUDE).base_url
        == endpoint("us-east-1")
        == "https://bedrock-runtime.us-east-1.amazonaws.com"
    )
    monkeypatch.setenv("AWS_REGION", "eu-west-3")
    made = create_client("bedrock")
    assert (
        isinstance(made, BedrockClient)
        and made.base_url == endpoint("eu-west-3")
        and made.region == "eu-west-3"
    )
    assert made._headers["Authorization"] == f"Bearer {KEY}"
    assert BedrockClient(CLAUDE, region="ap-south-1").base_url == endpoint("ap-south-1")
    assert BedrockClient(CLAUDE, "https://bedrock-runtime.us-west-2.amazonaws.com").region == "us-west-2"
    local = BedrockClient(CLAUDE, "http://127.0.0.1:9")
    assert "Authorization" not in local._headers  # a server on this machine never gets the key
    assert is_secret_name("AWS_BEARER_TOKEN_BEDROCK")  # kept out of the tools' commands too


def test_without_a_key_or_botocore_the_error_says_what_to_do(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_BEARER_TOKEN_BEDROCK", raising=False)
    monkeypatch.setitem(sys.modules, "botocore", None)  # as if the extra were not installed
    with pytest.raises(
        ProviderError, match=r"set AWS_BEARER_TOKEN_BEDROCK .*pip install 'miniagent\[bedrock\]'"
    ):
        BedrockClient(CLAUDE)


@pytest.fixture
def aws_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    pytest.importorskip("botocore")
    monkeypatch.delenv("AWS_BEARER_TOKEN_BEDROCK", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    monkeypatch.setenv("AWS_SESSION_TOKEN", SESSION_TOKEN)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


@pytest.mark.usefixtures("aws_credentials")
def test_without_a_key_requests_are_signed_over_their_exact_bytes() -> None:
    api = BedrockAPI(bedrock_reply("bedrock-tool-use.json"), bedrock_reply("bedrock-text.json"))
    record = Recorder()
    with ProviderServer(handler=api) as server:
        c = BedrockClient(CLAUDE, server.url, region="us-east-1", sigv4=True, settings=NO_RETRY)
        result = run_agent(
            client=c, system="", tools=[record.tool("get_weather")], user="Weather? é ✓", max_turns=3
        )
        c.close()
    assert result.stop_reason == "complete" and api.refused == [] and api.signed == [True, True]
    headers = {k.lower(): v for k, v in server.requests[0].headers.items()}
    assert headers["x-amz-security-token"] == SESSION_TOKEN and SECRET_KEY not in json.dumps(headers)


@pytest.mark.usefixtures("aws_credentials")
def test_a_signature_of_other_bytes_is_refused_with_the_api_s_words(monkeypatch: pytest.MonkeyPatch) -> None:
    from miniagent.providers import bedrock

    real = bedrock._SigV4.headers
    monkeypatch.setattr(bedrock._SigV4, "headers", lambda self, url, payload: real(self, url, payload + b" "))
    with ProviderServer(handler=BedrockAPI(bedrock_reply("bedrock-text.json"))) as server:
        c = BedrockClient(CLAUDE, server.url, region="us-east-1", sigv4=True, settings=NO_RETRY)
        with pytest.raises(
            ProviderError, match="The request signature we calculated does not match"
        ) as caught:
            run(c.stream(request()))
        c.close()
    assert caught.value.status == 403


def test_reasoning_goes_back_first_and_unchanged_with_thinking_on(tmp_path: Path) -> None:
    pieces = transcript("bedrock-reasoning-tool-use.json")
    signature = pieces[3]["payload"]["delta"]["reasoningContent"]["signature"]
    issued = {signature: "The user wants the weather in Paris. I should call get_weather."}
    api = BedrockAPI(
        bedrock_reply("bedrock-reasoning-tool-use.json", chunked=byte_by_byte),
        bedrock_reply("bedrock-text.json"),
        extra_rules=(anthropic_thinking(issued),),
    )
    record, session = Recorder(), tmp_path / "s.jsonl"
    with ProviderServer(handler=api) as server:
        c = BedrockClient(
            CLAUDE, server.url, KEY, settings=HTTPSettings(retry=RetryPolicy(0), extra_body=THINKING)
        )
        result = run_agent(
            client=c,
            system="",
            tools=[record.tool("get_weather")],
            user="Paris?",
            max_turns=3,
            session_path=session,
        )
        c.close()
    assert result.stop_reason == "complete" and api.refused == []
    assistant = server.requests[1].body["messages"][1]
    assert assistant["content"][0] == {
        "reasoningContent": {"reasoningText": {"text": issued[signature], "signature": signature}}
    }
    assert [next(iter(b)) for b in assistant["content"]] == ["reasoningContent", "text", "toolUse"]
    stripped = json.loads(json.dumps(server.requests[1].body))
    del stripped["messages"][1]["content"][0]
    assert (anthropic_thinking(issued)(stripped, CLAUDE) or "").startswith(
        "The model returned the following errors: messages.1.content.0.type: Expected `thinking`"
    )
    assert any(r.signature == signature for m in load_session(session) for r in m.reasoning)


def test_reasoning_of_another_origin_or_model_is_never_sent() -> None:
    origin = bedrock_origin("https://bedrock-runtime.us-east-1.amazonaws.com")
    record = [
        Message("user", "go"),
        Message(
            "assistant",
            "done",
            reasoning=(
                Reasoning("mine", "sig-1", origin=origin, data={"model": CLAUDE}),
                Reasoning("other model", "sig-2", origin=origin, data={"model": "amazon.nova-pro-v1:0"}),
                Reasoning("anthropic api", "sig-3"),
                Reasoning("deepseek"),
            ),
        ),
        Message("user", "again"),
    ]
    sent = build_converse_body(CLAUDE, "", record, (), origin=origin)["messages"][1]["content"]
    assert sent == [
        {"reasoningContent": {"reasoningText": {"text": "mine", "signature": "sig-1"}}},
        {"text": "done"},
    ]
    from miniagent.providers._anthropic_body import build_messages

    assert build_messages(record)[1]["content"][0]["thinking"] == "anthropic api"  # Bedrock's stay home
    assert len(build_messages(record)[1]["content"]) == 2


def test_ids_the_api_refuses_are_mapped_and_mapped_back_and_results_keep_their_status() -> None:
    long_id = "chatcmpl-tool-" + "8f3a2c91d4e64b7f9a0c5e1d2b3f4a6c" * 2  # 78 characters
    record = [
        Message("user", "go"),
        Message("assistant", "", (ToolCall(long_id, "read_file", {"path": "a"}),)),
        Message("tool", "", tool_call_id=long_id, is_error=True),
        Message("user", "and?"),
    ]
    for model, status in ((CLAUDE, True), ("amazon.nova-pro-v1:0", False)):
        api = BedrockAPI(bedrock_reply("bedrock-text.json"))
        with ProviderServer(handler=api) as server:
            c = client(server, model=model)
            run(c.stream(ModelRequest("", record, ())))
            c.close()
        assert api.refused == []
        messages = server.requests[0].body["messages"]
        use, result = messages[1]["content"][0]["toolUse"], messages[2]["content"][0]["toolResult"]
        assert use["toolUseId"] == result["toolUseId"] != long_id and len(use["toolUseId"]) <= 64
        assert ("status" in result) is status and result.get("status", "error") == "error"
        assert result["content"] == [{"text": "the tool reported an error without a message"}]
        assert server.requests[0].body["toolConfig"]["tools"][0]["toolSpec"]["name"] == "read_file"


def test_a_mapped_id_the_model_repeats_comes_back_as_the_record_s() -> None:
    long_id = "call/" + "x" * 70
    frames = transcript("bedrock-tool-use.json")
    record = [Message("user", "go"), Message("assistant", "", (ToolCall(long_id, "get_weather", {}),))]
    body = build_converse_body(
        CLAUDE, "", [*record, Message("tool", "ok", tool_call_id=long_id)], (), origin="x"
    )
    wire_id = body["messages"][1]["content"][0]["toolUse"]["toolUseId"]
    for message in frames:
        start = message["payload"].get("start")
        if start:
            start["toolUse"]["toolUseId"] = wire_id
    from eventstream_frames import encode_messages

    reply = Reply([b"".join(encode_messages(frames))], content_type=EVENTSTREAM)
    with ProviderServer(handler=BedrockAPI(reply)) as server:
        c = client(server)
        out = run(c.stream(ModelRequest("", [*record, Message("tool", "ok", tool_call_id=long_id)], ())))
        c.close()
    assert [call.id for call in out.calls] == [long_id]


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("bedrock-max-tokens-text.json", "max_output_tokens"),
        ("bedrock-guardrail.json", "content_filter"),
        ("bedrock-context-window.json", "context_window"),
        ("bedrock-malformed-tool-use.json", "provider_error"),
    ],
)
def test_an_answer_bedrock_did_not_end_naturally_is_never_committed(
    tmp_path: Path, name: str, reason: str
) -> None:
    session = tmp_path / "s.jsonl"
    with (
        ProviderServer(handler=BedrockAPI(bedrock_reply(name))) as server,
        pytest.raises(IncompleteResponseError) as caught,
    ):
        run_agent(client=client(server), system="", tools=[], user="go", max_turns=2, session_path=session)
    assert caught.value.reason == reason and caught.value.text == FIXTURES[name][0]
    assert [json.loads(line)["role"] for line in session.read_text().splitlines()] == ["user"]


def test_a_call_cut_by_max_tokens_is_answered_with_an_error_and_never_runs() -> None:
    record = Recorder()
    api = BedrockAPI(bedrock_reply("bedrock-max-tokens-mid-call.json"), bedrock_reply("bedrock-text.json"))
    with ProviderServer(handler=api) as server:
        result = run_agent(
            client=client(server), system="", tools=[record.tool("write_file")], user="go", max_turns=3
        )
    assert result.stop_reason == "complete" and record.ran == [] and api.refused == []
    answer = server.requests[1].body["messages"][2]["content"][0]["toolResult"]
    assert answer["status"] == "error" and "cut off by the output token limit" in answer["content"][0]["text"]


def test_cost_from_prices_and_from_the_table_on_aws() -> None:
    with ProviderServer(handler=BedrockAPI(bedrock_reply("bedrock-cached-usage.json"))) as server:
        c = client(server, prices={"input": 3.0, "output": 15.0, "cache_read": 0.3, "cache_write": 3.75})
        (usage,) = [e.usage for e in c.stream(request()) if isinstance(e, UsageEvent)]
        c.close()
    assert usage.cost_usd == pytest.approx((4 * 3.0 + 12288 * 0.3 + 1196 * 3.75 + 18 * 15.0) / 1e6)
    pytest.importorskip("genai_prices")
    assert BedrockClient(CLAUDE, api_key="not-real").can_price()


class Recorder:
    """Tools that record the inputs they ran with."""

    def __init__(self) -> None:
        self.ran: list[tuple[str, dict[str, Any]]] = []

    def tool(self, name: str) -> Tool:
        def execute(arguments: dict[str, Any], cancel: Any) -> ToolResult:
            self.ran.append((name, arguments))
            return ToolResult(f"{name} ok")

        return Tool(name, f"the {name} tool", {"type": "object", "properties": {}}, execute)
