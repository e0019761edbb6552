"""Gemini's thought signatures go back on the parts that carried them: in one run, across runs,
in a new process, and never to (or from) another provider.

The real loop runs against a loopback server that enforces the Gemini API's rules
(``api_rules_gemini.GeminiAPI``; for ``gemini-3*`` models the thought-signature rule: a function
call of the current turn without its signature is refused with the API's own 400), and the
other providers' servers enforce theirs (``api_rules``).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from api_rules import ANTHROPIC_RULES, OPENAI_RULES, anthropic_error, enforcing, openai_error
from api_rules_gemini import (
    KEY,
    MISSING_SIGNATURE,
    PLACEHOLDERS,
    GeminiAPI,
    signatures_in,
    thought_signatures,
)
from providers_server import ProviderServer, Reply, anthropic_sse, fixture, random_chunks, sse

from miniagent import Message, Reasoning, RunResult, Tool, ToolCall, ToolResult, load_session, run_agent
from miniagent.providers import GeminiClient, HTTPSettings, RetryPolicy, create_client
from miniagent.providers._gemini_body import SKIP_SIGNATURE, build_contents, gemini_origin

pytestmark = pytest.mark.timeout(60)

NO_RETRY = HTTPSettings(retry=RetryPolicy(max_retries=0))
GEMINI_3 = "gemini-3-pro-preview"


class Recorder:
    """Tools that record the inputs they ran with."""

    def __init__(self) -> None:
        self.ran: list[tuple[str, dict[str, Any]]] = []

    def tool(self, name: str) -> Tool:
        def execute(arguments: dict[str, Any], cancel: Any) -> ToolResult:
            self.ran.append((name, arguments))
            return ToolResult(f"{name} ok")

        return Tool(name, f"the {name} tool", {"type": "object", "properties": {}}, execute)


def gemini_run(
    server: ProviderServer, user: str, tools: list[Tool], *, model: str = GEMINI_3, **options: Any
) -> RunResult:
    client = GeminiClient(model, server.url, KEY, settings=NO_RETRY, **options.pop("client", {}))
    try:
        return run_agent(client=client, system="", tools=tools, user=user, max_turns=6, **options)
    finally:
        client.close()


def model_turns(body: dict[str, Any]) -> list[list[dict[str, Any]]]:
    return [c["parts"] for c in body["contents"] if c["role"] == "model"]


def test_gemini_3_gets_each_signature_back_on_its_part_and_ids_as_they_came() -> None:
    parallel, then_call = fixture("gemini-parallel-calls.sse"), fixture("gemini-text-then-call.sse")
    api = GeminiAPI(
        Reply(random_chunks(parallel, seed=1)),
        Reply(random_chunks(then_call, seed=2)),
        Reply([fixture("gemini-signed-text.sse")]),
    )
    tools = Recorder()
    with ProviderServer(handler=api) as server:
        result = gemini_run(
            server,
            "Weather in Paris and London, then read my notes.",
            [tools.tool("get_weather"), tools.tool("read_file")],
        )
    assert result.stop_reason == "complete", api.refused
    assert api.refused == []
    assert tools.ran == [
        ("get_weather", {"location": "Paris"}),
        ("get_weather", {"location": "London"}),
        ("read_file", {"path": "notes.txt"}),
    ]
    (first,) = signatures_in(parallel)
    (second,) = signatures_in(then_call)
    last = server.requests[2].body["contents"]
    assert last[1:] == [
        {
            "role": "model",
            "parts": [
                {
                    "functionCall": {"id": "9f1k2m7q", "name": "get_weather", "args": {"location": "Paris"}},
                    "thoughtSignature": first,
                },
                {"functionCall": {"id": "4t8w3z0c", "name": "get_weather", "args": {"location": "London"}}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {
                    "functionResponse": {
                        "id": "9f1k2m7q",
                        "name": "get_weather",
                        "response": {"output": "get_weather ok"},
                    }
                },
                {
                    "functionResponse": {
                        "id": "4t8w3z0c",
                        "name": "get_weather",
                        "response": {"output": "get_weather ok"},
                    }
                },
            ],
        },
        {
            "role": "model",
            "parts": [
                {"text": "I'll read the file first."},
                {
                    "functionCall": {"name": "read_file", "args": {"path": "notes.txt"}},
                    "thoughtSignature": second,
                },
            ],
        },
        {
            "role": "user",
            "parts": [{"functionResponse": {"name": "read_file", "response": {"output": "read_file ok"}}}],
        },
    ]
    stripped = copy.deepcopy(server.requests[2].body)
    del stripped["contents"][3]["parts"][1]["thoughtSignature"]
    assert thought_signatures(api.issued)(stripped) == MISSING_SIGNATURE.format(name="read_file", position=2)


def test_thoughts_and_a_signed_empty_text_go_back_as_they_came(tmp_path: Path) -> None:
    session = tmp_path / "s.jsonl"
    api = GeminiAPI(Reply([fixture("gemini-thinking-text.sse")]), Reply([fixture("gemini-signed-text.sse")]))
    with ProviderServer(handler=api) as server:
        gemini_run(
            server,
            "Which is larger, 9.11 or 9.9?",
            [],
            session_path=session,
            client={"include_thoughts": True},
        )
        gemini_run(server, "And 9.11 or 9.2?", [], session_path=session, client={"include_thoughts": True})
    assert api.refused == []
    (signature,) = signatures_in(fixture("gemini-thinking-text.sse"))
    (parts,) = model_turns(server.requests[1].body)
    assert parts == [
        {
            "text": "**Weighing the options**\n\nThe user asks which is larger, 9.11 or 9.9. Comparing the "
            "tenths digit: 9 beats 1, so 9.9 is larger.",
            "thought": True,
        },
        {"text": "9.9 is larger than 9.11: compare the tenths digit (9 > 1)."},
        {"text": "", "thoughtSignature": signature},
    ]


def test_a_session_resumed_in_a_new_process_sends_the_same_signatures(tmp_path: Path) -> None:
    from tests.cli_helpers import run_cli

    session, workspace = tmp_path / "s.jsonl", tmp_path / "work"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("buy milk\n")
    call = fixture("gemini-text-then-call.sse")
    api = GeminiAPI(
        Reply(random_chunks(call, seed=3)),
        Reply([fixture("gemini-signed-text.sse")]),
        Reply([fixture("gemini-text.sse")]),
    )
    env = {"MINIAGENT_API_KEY": KEY}
    with ProviderServer(handler=api) as server:
        common = ["--provider", "gemini", "--model", GEMINI_3, "--base-url", server.url]
        common += ["--session", str(session), "--workspace", str(workspace), "--approve", "read-only"]
        first = run_cli(["run", "Read notes.txt", *common], tmp_path, env=env)
        second = run_cli(["run", "Why is the sky blue?", *common], tmp_path, env=env)
    assert first.returncode == 0 and second.returncode == 0, (first.stderr, second.stderr, api.refused)
    assert api.refused == []
    (call_signature,) = signatures_in(call)
    (text_signature,) = signatures_in(fixture("gemini-signed-text.sse"))
    within, resumed = server.requests[1].body, server.requests[2].body
    assert resumed["contents"][: len(within["contents"])] == within["contents"]
    assert model_turns(resumed) == [
        [
            {"text": "I'll read the file first."},
            {
                "functionCall": {"name": "read_file", "args": {"path": "notes.txt"}},
                "thoughtSignature": call_signature,
            },
        ],
        [{"text": "The result is 2.", "thoughtSignature": text_signature}],
    ]
    assert resumed["contents"][2]["parts"][0]["functionResponse"]["response"]["output"].startswith("buy milk")


ANTHROPIC_SIGNATURE = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds8B1L3rPfeAS0TCdd"


def anthropic_turn(*blocks: dict[str, Any], stop: str) -> Reply:
    events: list[dict[str, Any]] = [{"type": "message_start", "message": {"id": "m", "content": []}}]
    for index, block in enumerate(blocks):
        events.append({"type": "content_block_start", "index": index, "content_block": block})
        events.append({"type": "content_block_stop", "index": index})
    events += [{"type": "message_delta", "delta": {"stop_reason": stop}}, {"type": "message_stop"}]
    return Reply([anthropic_sse(*events)])


def test_a_session_begun_on_anthropic_goes_on_with_gemini_without_its_reasoning(tmp_path: Path) -> None:
    session = tmp_path / "s.jsonl"
    thinking = {"type": "thinking", "thinking": "Paris weather needed.", "signature": ANTHROPIC_SIGNATURE}
    call = {
        "type": "tool_use",
        "id": "toolu_01A09q90qw90lq917835lq9",
        "name": "get_weather",
        "input": {"location": "Paris"},
    }
    claude = enforcing(
        ANTHROPIC_RULES,
        [
            anthropic_turn(thinking, call, stop="tool_use"),
            anthropic_turn({"type": "text", "text": "Sunny."}, stop="end_turn"),
        ],
        anthropic_error,
    )
    tools = Recorder()
    with ProviderServer(handler=claude) as server:
        client = create_client(
            "anthropic", "claude-sonnet-4-5", server.url, "key", retry=RetryPolicy(max_retries=0)
        )
        run_agent(
            client=client,
            system="",
            tools=[tools.tool("get_weather")],
            user="Paris?",
            max_turns=4,
            session_path=session,
        )
    assert any(r.signature for m in load_session(session) for r in m.reasoning)
    api = GeminiAPI(Reply([fixture("gemini-signed-text.sse")]))
    with ProviderServer(handler=api) as server:
        result = gemini_run(server, "And tomorrow?", [tools.tool("get_weather")], session_path=session)
    assert result.stop_reason == "complete" and api.refused == []
    sent = server.requests[0].body["contents"]
    assert ANTHROPIC_SIGNATURE not in json.dumps(sent) and "Paris weather needed." not in json.dumps(sent)
    assert sent[1] == {
        "role": "model",
        "parts": [
            {
                "functionCall": {
                    "id": "toolu_01A09q90qw90lq917835lq9",
                    "name": "get_weather",
                    "args": {"location": "Paris"},
                },
                "thoughtSignature": SKIP_SIGNATURE,
            }
        ],
    }
    assert sent[2]["parts"][0]["functionResponse"]["id"] == "toolu_01A09q90qw90lq917835lq9"


def test_a_session_begun_on_gemini_goes_on_elsewhere_without_gemini_fields(tmp_path: Path) -> None:
    session = tmp_path / "s.jsonl"
    api = GeminiAPI(
        Reply([fixture("gemini-text-then-call.sse")]), Reply([fixture("gemini-thinking-text.sse")])
    )
    tools = Recorder()
    with ProviderServer(handler=api) as server:
        gemini_run(
            server,
            "Read notes.",
            [tools.tool("read_file")],
            session_path=session,
            client={"include_thoughts": True},
        )
    signatures = signatures_in(fixture("gemini-text-then-call.sse")) | signatures_in(
        fixture("gemini-thinking-text.sse")
    )
    openai_reply = Reply(
        [sse({"choices": [{"index": 0, "delta": {"content": "Done."}, "finish_reason": "stop"}]}, done=True)]
    )
    with ProviderServer(handler=enforcing(OPENAI_RULES, [openai_reply], openai_error)) as server:
        client = create_client(
            "openai", "gpt-4o-mini", f"{server.url}/v1", "key", retry=RetryPolicy(max_retries=0)
        )
        run_agent(
            client=client,
            system="",
            tools=[tools.tool("read_file")],
            user="Next?",
            max_turns=2,
            session_path=session,
        )
    chat = json.dumps(server.requests[0].body)
    claude_reply = anthropic_turn({"type": "text", "text": "Done."}, stop="end_turn")
    with ProviderServer(handler=enforcing(ANTHROPIC_RULES, [claude_reply], anthropic_error)) as server:
        client = create_client(
            "anthropic", "claude-sonnet-4-5", server.url, "key", retry=RetryPolicy(max_retries=0)
        )
        run_agent(
            client=client,
            system="",
            tools=[tools.tool("read_file")],
            user="Next?",
            max_turns=2,
            session_path=session,
        )
    messages = json.dumps(server.requests[0].body)
    for signature in signatures:
        assert signature not in chat and signature not in messages
    assert "Weighing the options" not in chat and "Weighing the options" not in messages


def test_another_gemini_model_gets_placeholders_not_the_signatures_of_the_first(tmp_path: Path) -> None:
    session = tmp_path / "s.jsonl"
    tools = Recorder()
    api = GeminiAPI(
        Reply([fixture("gemini-function-call-signature.sse")]),
        Reply([fixture("gemini-signed-text.sse")]),
        Reply([fixture("gemini-text.sse")]),
    )
    with ProviderServer(handler=api) as server:
        gemini_run(
            server,
            "Divide 10 by 2.",
            [tools.tool("customDivide")],
            model="gemini-2.5-flash",
            session_path=session,
        )
        result = gemini_run(
            server, "Why is the sky blue?", [tools.tool("customDivide")], session_path=session
        )
    assert result.stop_reason == "complete" and api.refused == []
    sent = server.requests[2].body["contents"]
    assert {p.get("thoughtSignature") for c in sent for p in c["parts"]} <= {None, SKIP_SIGNATURE}
    assert sent[1]["parts"] == [
        {
            "functionCall": {"name": "customDivide", "args": {"denominator": 2, "numerator": 10}},
            "thoughtSignature": SKIP_SIGNATURE,
        }
    ]
    assert SKIP_SIGNATURE in PLACEHOLDERS


def test_a_layout_that_no_longer_fits_its_message_is_not_trusted() -> None:
    origin, model = gemini_origin("https://generativelanguage.googleapis.com"), "gemini-2.5-flash"
    entries = [{"text": 3, "thoughtSignature": "s1"}, {"call": 0, "thoughtSignature": "s2"}]
    layout = Reasoning("", origin=origin, data={"model": model, "parts": entries})
    call = ToolCall("c1", "t", {"a": 1})
    fits = Message("assistant", "abc", (call,), reasoning=(layout,))
    edited = Message("assistant", "abcd", (call,), reasoning=(layout,))
    answer = Message("tool", "ok", tool_call_id="c1")

    def parts(message: Message) -> list[dict[str, Any]]:
        return build_contents([Message("user", "go"), message, answer], origin, model)[1]["parts"]

    assert parts(fits) == [
        {"text": "abc", "thoughtSignature": "s1"},
        {"functionCall": {"id": "c1", "name": "t", "args": {"a": 1}}, "thoughtSignature": "s2"},
    ]
    assert parts(edited) == [
        {"text": "abcd"},
        {"functionCall": {"id": "c1", "name": "t", "args": {"a": 1}}, "thoughtSignature": SKIP_SIGNATURE},
    ]
    unsigned = [
        {"text": "abc"},
        {"functionCall": {"id": "c1", "name": "t", "args": {"a": 1}}, "thoughtSignature": SKIP_SIGNATURE},
    ]
    assert (
        build_contents([Message("user", "go"), fits, answer], "gemini other", model)[1]["parts"] == unsigned
    )
    assert (
        build_contents([Message("user", "go"), fits, answer], origin, "gemini-3-pro-preview")[1]["parts"]
        == unsigned
    )
    broken = Reasoning("", origin=origin, data={"model": model, "parts": [{"text": True}, {"call": 0}]})
    assert parts(Message("assistant", "abc", (call,), reasoning=(broken,)))[0] == {"text": "abc"}
