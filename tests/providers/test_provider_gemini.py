"""The Gemini client against a loopback server that answers as the Gemini API does.

Streams are the transcripts of tests/fixtures/sse/README.md (``gemini-*.sse``), served whole,
byte by byte, with CRLF line endings and in random chunks, and cut at every event boundary. The
server (``api_rules_gemini.GeminiAPI``) checks the key, the path and the body the way the API
does and answers a breaking request with the API's own error.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from api_rules_gemini import KEY, GeminiAPI, gemini_error, signatures_in
from providers_server import (
    ProviderServer,
    RecordingWait,
    Reply,
    byte_by_byte,
    crlf,
    event_boundaries,
    fixture,
    random_chunks,
    request,
    run,
    whole,
)

from miniagent import (
    IncompleteResponseError,
    Message,
    ModelRequest,
    ProviderError,
    ToolSpec,
    run_agent,
)
from miniagent.model import ReasoningEvent, UsageEvent
from miniagent.providers import GeminiClient, HTTPSettings, RetryPolicy, create_client

pytestmark = pytest.mark.timeout(30)

NO_RETRY = HTTPSettings(retry=RetryPolicy(max_retries=0))
SKY = "The sky is blue due to a phenomenon called **Rayleigh scattering**."

# name -> (text, calls as (id or None for a made-up one, name, input), finishReason, incomplete,
#          usage as (input, output, cache read))
FIXTURES: dict[
    str, tuple[str, list[tuple[str | None, str, dict[str, Any]]], str, str | None, tuple[int, int, int]]
] = {
    "gemini-text.sse": (SKY, [], "STOP", None, (6, 377, 0)),
    "gemini-max-tokens.sse": (
        "The sky is blue because of a phenomenon called **Rayleigh scattering**. Here's a breakdown:",
        [],
        "MAX_TOKENS",
        "max_output_tokens",
        (6, 20, 0),
    ),
    "gemini-function-call-signature.sse": (
        "",
        [(None, "customDivide", {"denominator": 2, "numerator": 10})],
        "STOP",
        None,
        (81, 199, 0),
    ),
    "gemini-signed-text.sse": ("The result is 2.", [], "STOP", None, (435, 108, 0)),
    "gemini-thinking-text.sse": (
        "9.9 is larger than 9.11: compare the tenths digit (9 > 1).",
        [],
        "STOP",
        None,
        (14, 136, 0),
    ),
    "gemini-parallel-calls.sse": (
        "",
        [
            ("9f1k2m7q", "get_weather", {"location": "Paris"}),
            ("4t8w3z0c", "get_weather", {"location": "London"}),
        ],
        "STOP",
        None,
        (96, 246, 0),
    ),
    "gemini-text-then-call.sse": (
        "I'll read the file first.",
        [(None, "read_file", {"path": "notes.txt"})],
        "STOP",
        None,
        (120, 64, 0),
    ),
    "gemini-safety.sse": ("To make it at home you would first", [], "SAFETY", "content_filter", (11, 8, 0)),
    "gemini-recitation.sse": (
        "It was the best of times, it was the worst of times, it was the age of wisdom,",
        [],
        "RECITATION",
        "content_filter",
        (9, 19, 0),
    ),
    "gemini-prohibited-content.sse": (
        "Sure. The first step is",
        [],
        "PROHIBITED_CONTENT",
        "content_filter",
        (27, 6, 0),
    ),
    "gemini-malformed-function-call.sse": ("", [], "MALFORMED_FUNCTION_CALL", "provider_error", (402, 55, 0)),
    "gemini-prompt-blocked.sse": ("", [], "prompt blocked: PROHIBITED_CONTENT", "content_filter", (31, 0, 0)),
    "gemini-usage-cached.sse": (
        "The function `parse_args` is defined in cli.py at line 42.",
        [],
        "STOP",
        None,
        (12450, 112, 8192),
    ),
    "gemini-thoughts-cut.sse": ("", [], "MAX_TOKENS", "max_output_tokens", (17, 19, 0)),
}
VARIANTS = {
    "whole": whole,
    "byte_by_byte": byte_by_byte,
    "crlf": lambda body: whole(crlf(body)),
    "random": lambda body: random_chunks(crlf(body), seed=len(body)),
}


def json_answer() -> Reply:
    """A stream whose answer is the JSON text ``{"answer": 4}``."""
    part = {"text": json.dumps({"answer": 4})}
    event = {"candidates": [{"content": {"parts": [part], "role": "model"}, "finishReason": "STOP"}]}
    return Reply([f"data: {json.dumps(event)}\n\n".encode()])


def client(server: ProviderServer, model: str = "gemini-2.5-flash", **options: Any) -> GeminiClient:
    options.setdefault("settings", NO_RETRY)
    return GeminiClient(model, server.url, KEY, **options)


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("name", list(FIXTURES))
def test_every_transcript_maps_the_same_however_it_is_served(name: str, variant: str) -> None:
    text, calls, stop_reason, incomplete, usage = FIXTURES[name]
    with ProviderServer(handler=GeminiAPI(Reply(VARIANTS[variant](fixture(name))))) as server:
        c = client(server)
        out = run(c.stream(request()))
        c.close()
    if name == "gemini-text.sse":
        assert out.text.startswith(SKY) and out.text.endswith("even a hazy appearance.")
    else:
        assert out.text == text
    assert [(call.name, call.input, call.input_error) for call in out.calls] == [
        (n, i, None) for _, n, i in calls
    ]
    for (wire_id, _, _), call in zip(calls, out.calls, strict=True):
        assert call.id == wire_id if wire_id else call.id.startswith("call_")
    assert [(d.stop_reason, d.incomplete) for d in out.done] == [(stop_reason, incomplete)]
    used = [e.usage for e in out.events if isinstance(e, UsageEvent)]
    assert [(u.input_tokens, u.output_tokens, u.cache_read_tokens, u.requests) for u in used] == [(*usage, 1)]


@pytest.mark.parametrize("name", [n for n in FIXTURES if n != "gemini-prompt-blocked.sse"])
def test_a_stream_cut_before_its_finish_reason_is_a_retryable_error(name: str) -> None:
    body = fixture(name)
    for cut in event_boundaries(body)[:-1] or [0]:
        with ProviderServer(Reply([body[:cut]])) as server:
            c = client(server)
            with pytest.raises(ProviderError, match="no finishReason") as caught:
                run(c.stream(request()))
            c.close()
        assert caught.value.retryable


def test_an_error_event_after_text_raises_and_is_not_retried() -> None:
    wait = RecordingWait()
    settings = HTTPSettings(retry=RetryPolicy(max_retries=3, wait=wait))
    with ProviderServer(Reply([fixture("gemini-error-midstream.sse")])) as server:
        c = client(server, settings=settings)
        events: list[Any] = []
        with pytest.raises(ProviderError) as caught:
            for event in c.stream(request()):
                events.append(event)
        c.close()
    assert (
        str(caught.value)
        == "Gemini stream error (UNAVAILABLE): The model is overloaded. Please try again later."
    )
    assert caught.value.kind == "UNAVAILABLE" and caught.value.retryable
    assert [e.text for e in events] == ["Here is a summary"]
    assert len(server.requests) == 1 and wait.delays == []


def test_errors_before_the_first_event_are_retried() -> None:
    wait = RecordingWait()
    settings = HTTPSettings(retry=RetryPolicy(max_retries=3, wait=wait))
    overloaded = gemini_error("The model is overloaded. Please try again later.", 503, "UNAVAILABLE")
    early_error = Reply(
        [
            b'data: {"error": {"code": 500, "message": "Internal error encountered.", '
            b'"status": "INTERNAL"}}\n\n'
        ]
    )
    with ProviderServer(overloaded, early_error, Reply([fixture("gemini-signed-text.sse")])) as server:
        c = client(server, settings=settings)
        out = run(c.stream(request()))
        c.close()
    assert out.text == "The result is 2." and len(server.requests) == 3 and len(wait.delays) == 2


def test_a_refused_request_names_the_api_s_own_words() -> None:
    with ProviderServer(gemini_error("API key not valid. Please pass a valid API key.")) as server:
        c = client(server)
        with pytest.raises(ProviderError) as caught:
            run(c.stream(request()))
        c.close()
    assert (
        str(caught.value)
        == "Gemini HTTP 400 (INVALID_ARGUMENT): API key not valid. Please pass a valid API key."
    )
    assert not caught.value.retryable


def test_the_request_is_what_the_api_takes_and_the_key_only_a_header() -> None:
    spec = ToolSpec(
        "read_file", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}}
    )
    api = GeminiAPI(Reply([fixture("gemini-signed-text.sse")]))
    with ProviderServer(handler=api) as server:
        c = client(server, temperature=0.2, max_tokens=256)
        run(c.stream(ModelRequest("Be brief.", [Message("user", "hi")], (spec,))))
        c.close()
    (sent,) = server.requests
    assert api.refused == []
    assert sent.path == "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    assert KEY not in sent.path and "key=" not in sent.path
    assert {k.lower(): v for k, v in sent.headers.items()}["x-goog-api-key"] == KEY
    assert sent.body == {
        "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
        "systemInstruction": {"parts": [{"text": "Be brief."}]},
        "tools": [
            {
                "functionDeclarations": [
                    {
                        "name": "read_file",
                        "description": "Read a file.",
                        "parametersJsonSchema": {
                            "type": "object",
                            "properties": {"path": {"type": "string"}},
                        },
                    }
                ]
            }
        ],
        "generationConfig": {"temperature": 0.2, "maxOutputTokens": 256},
    }
    assert KEY not in repr(c)


def test_base_url_forms_and_model_names_give_one_path() -> None:
    for suffix in ("", "/", "/v1beta", "/v1beta/"):
        with ProviderServer(handler=GeminiAPI(Reply([fixture("gemini-signed-text.sse")]))) as server:
            c = GeminiClient("models/gemini-2.5-flash", server.url + suffix, KEY, settings=NO_RETRY)
            assert run(c.stream(request())).text == "The result is 2."
            c.close()
        assert server.requests[0].path == "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"


def test_the_key_comes_from_gemini_api_key_else_google_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    with pytest.raises(
        ProviderError,
        match=r"^no Gemini API key: pass api_key=\.\.\. or set GEMINI_API_KEY \(or GOOGLE_API_KEY\)$",
    ):
        GeminiClient("gemini-2.5-flash")
    monkeypatch.setenv("GOOGLE_API_KEY", "from-google")
    assert GeminiClient("gemini-2.5-flash")._headers["x-goog-api-key"] == "from-google"
    monkeypatch.setenv("GEMINI_API_KEY", "from-gemini")
    assert GeminiClient("gemini-2.5-flash")._headers["x-goog-api-key"] == "from-gemini"
    local = GeminiClient("gemini-2.5-flash", "http://127.0.0.1:9")
    assert "x-goog-api-key" not in local._headers  # a server on this machine never gets the key


def test_a_request_without_the_key_gets_the_api_s_403(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    with ProviderServer(handler=GeminiAPI(Reply([fixture("gemini-text.sse")]))) as server:
        c = GeminiClient("gemini-2.5-flash", server.url, settings=NO_RETRY)  # local: the key is held back
        with pytest.raises(ProviderError) as caught:
            run(c.stream(request()))
        c.close()
    assert caught.value.status == 403 and "GEMINI_API_KEY is set but was not sent" in str(caught.value)


def test_create_client_builds_it_with_its_options() -> None:
    with ProviderServer(handler=GeminiAPI(Reply([fixture("gemini-usage-cached.sse")]))) as server:
        c = create_client(
            "gemini",
            "gemini-2.5-flash",
            server.url,
            KEY,
            max_tokens=64,
            temperature=0.0,
            retry=RetryPolicy(max_retries=0),
            prices={"input": 0.3, "output": 2.5, "cache_read": 0.075},
        )
        assert isinstance(c, GeminiClient)
        out = run(c.stream(request()))
        c.close()
    assert server.requests[0].body["generationConfig"] == {"temperature": 0.0, "maxOutputTokens": 64}
    (usage,) = [e.usage for e in out.events if isinstance(e, UsageEvent)]
    fresh, cached, output = 12450 - 8192, 8192, 112
    assert usage.cost_usd == pytest.approx((fresh * 0.3 + cached * 0.075 + output * 2.5) / 1e6)


def test_the_price_table_knows_the_default_model_on_google_s_host() -> None:
    pytest.importorskip("genai_prices")
    official = GeminiClient("gemini-2.5-flash", api_key="not-real")
    assert official.can_price()
    assert not GeminiClient("gemini-2.5-flash", "http://127.0.0.1:9", "k").can_price()


# --- schemas and structured output ----------------------------------------------------------------


def test_a_top_level_combination_reaches_gemini_as_an_object_and_json_schema_stays() -> None:
    combined = {
        "anyOf": [
            {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
            {"type": "object", "properties": {"glob": {"type": "string"}}, "required": ["glob"]},
        ]
    }
    rich = {
        "$defs": {
            "Point": {
                "type": "object",
                "properties": {"x": {"type": "number"}},
                "additionalProperties": False,
            }
        },
        "type": "object",
        "properties": {"at": {"$ref": "#/$defs/Point"}, "tags": {"type": ["string", "null"]}},
        "additionalProperties": False,
    }
    api = GeminiAPI(Reply([fixture("gemini-signed-text.sse")]))
    tools = (ToolSpec("find", "Find files.", combined), ToolSpec("mark", "Mark a point.", rich))
    with ProviderServer(handler=api) as server:
        c = client(server)
        run(c.stream(ModelRequest("", [Message("user", "hi")], tools)))
        c.close()
    assert api.refused == []
    declarations = server.requests[0].body["tools"][0]["functionDeclarations"]
    assert declarations[0]["parametersJsonSchema"] == {
        "type": "object",
        "properties": {"path": {"type": "string"}, "glob": {"type": "string"}},
    }
    assert declarations[1]["parametersJsonSchema"] == rich


def test_structured_output_is_native_without_tools_and_an_instruction_with_them() -> None:
    schema = {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]}
    reply = json_answer()
    spec = ToolSpec("calc", "Compute.", {"type": "object", "properties": {}})
    api = GeminiAPI(reply)
    with ProviderServer(handler=api) as server:
        c = client(server)
        for tools in ((), (spec,)):
            run(c.stream(ModelRequest("Answer.", [Message("user", "2+2?")], tools, output_schema=schema)))
        c.close()
    assert api.refused == []
    bare, with_tools = (r.body for r in server.requests)
    assert bare["generationConfig"] == {"responseMimeType": "application/json", "responseJsonSchema": schema}
    assert bare["systemInstruction"] == {"parts": [{"text": "Answer."}]}
    assert "generationConfig" not in with_tools
    assert json.dumps(schema, separators=(",", ":")) in with_tools["systemInstruction"]["parts"][0]["text"]


def test_a_run_with_an_output_schema_completes_with_the_value(tmp_path: Path) -> None:
    reply = json_answer()
    with ProviderServer(handler=GeminiAPI(reply)) as server:
        result = run_agent(
            client=client(server),
            system="",
            tools=[],
            user="2+2?",
            max_turns=2,
            output_schema={"type": "object", "properties": {"answer": {"type": "integer"}}},
        )
    assert result.stop_reason == "complete" and result.output == {"answer": 4}


# --- endings through the loop ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "reason", "detail"),
    [
        ("gemini-max-tokens.sse", "max_output_tokens", "MAX_TOKENS"),
        ("gemini-safety.sse", "content_filter", "SAFETY"),
        ("gemini-recitation.sse", "content_filter", "RECITATION"),
        ("gemini-prohibited-content.sse", "content_filter", "PROHIBITED_CONTENT"),
        ("gemini-malformed-function-call.sse", "provider_error", "MALFORMED_FUNCTION_CALL"),
        ("gemini-prompt-blocked.sse", "content_filter", "prompt blocked: PROHIBITED_CONTENT"),
        ("gemini-thoughts-cut.sse", "max_output_tokens", "MAX_TOKENS"),
    ],
)
def test_an_answer_gemini_did_not_end_naturally_is_never_committed(
    tmp_path: Path, name: str, reason: str, detail: str
) -> None:
    session = tmp_path / "s.jsonl"
    with (
        ProviderServer(handler=GeminiAPI(Reply(random_chunks(fixture(name), seed=7)))) as server,
        pytest.raises(IncompleteResponseError) as caught,
    ):
        run_agent(client=client(server), system="", tools=[], user="go", max_turns=2, session_path=session)
    assert (caught.value.reason, caught.value.detail) == (reason, detail)
    assert caught.value.text == FIXTURES[name][0]
    assert [json.loads(line)["role"] for line in session.read_text().splitlines()] == ["user"]


def test_thought_parts_stream_as_reasoning_with_their_signature() -> None:
    with ProviderServer(Reply([fixture("gemini-thinking-text.sse")])) as server:
        c = client(server, include_thoughts=True)
        out = run(c.stream(request()))
        c.close()
    assert server.requests[0].body["generationConfig"] == {"thinkingConfig": {"includeThoughts": True}}
    blocks = [e.reasoning for e in out.events if isinstance(e, ReasoningEvent)]
    assert blocks[0].text.startswith("**Weighing the options**") and blocks[0].text.endswith(
        "so 9.9 is larger."
    )
    assert blocks[0].data == {"thought": True, "model": "gemini-2.5-flash"}
    (signature,) = signatures_in(fixture("gemini-thinking-text.sse"))
    assert blocks[1].data == {
        "model": "gemini-2.5-flash",
        "parts": [{"thought": 0}, {"text": 58}, {"text": 0, "thoughtSignature": signature}],
    }
    assert {b.origin for b in blocks} == {f"gemini {server.url}"}


def test_calls_without_ids_get_unique_ones_and_bad_arguments_an_error() -> None:
    parts = [
        {"functionCall": {"name": "read_file", "args": {"path": "a"}}},
        {"functionCall": {"name": "read_file", "args": {"path": "b"}}},
        {"functionCall": {"name": "list_dir"}},
        {"functionCall": {"name": "read_file", "args": [1]}},
        {"functionCall": {"args": {"path": "c"}}},
    ]
    event = {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}]}
    with ProviderServer(Reply([f"data: {json.dumps(event)}\n\n".encode()])) as server:
        c = client(server)
        out = run(c.stream(request()))
        c.close()
    assert [(call.name, call.input, call.input_error) for call in out.calls] == [
        ("read_file", {"path": "a"}, None),
        ("read_file", {"path": "b"}, None),
        ("list_dir", {}, None),
        ("read_file", {}, "arguments must be a JSON object, got list"),
    ]
    assert len({call.id for call in out.calls}) == 4


def test_the_key_never_reaches_an_error_text() -> None:
    echoed = gemini_error(f"API key not valid: {KEY}. Please pass a valid API key.")
    midstream = Reply([f'data: {{"error": {{"code": 400, "message": "bad key {KEY}"}}}}\n\n'.encode()])
    for reply in (echoed, midstream):
        with ProviderServer(reply) as server:
            c = client(server)
            with pytest.raises(ProviderError) as caught:
                run(c.stream(request()))
            c.close()
        assert KEY not in str(caught.value) and "***" in str(caught.value)
