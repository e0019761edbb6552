"""The real loop on the Responses API against a loopback server that enforces the API's rules
(``api_rules_responses``): reasoning replayed byte for byte and in place, across a session file and
a new process; sessions that cross providers; cut, refused and incomplete turns."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from api_rules import ANTHROPIC_RULES, anthropic_error, enforcing
from api_rules_responses import ResponsesAPI, call_reply, issued_in, text_reply
from providers_server import ProviderServer, Reply, anthropic_sse, fixture

from miniagent import (
    IncompleteResponseError,
    Message,
    RunResult,
    Tool,
    ToolCall,
    ToolResult,
    load_session,
    run_agent,
)
from miniagent.model import ModelRequest
from miniagent.providers import RetryPolicy, create_client
from miniagent.providers._history import short_id
from miniagent.providers._responses_body import responses_origin

pytestmark = pytest.mark.timeout(60)

ROOT = Path(__file__).resolve().parents[2]
NO_RETRY = RetryPolicy(max_retries=0)
VLLM_ID = "chatcmpl-tool-8f3a2c91d4e64b7f9a0c5e1d2b3f4a6c"


def recording_tool(name: str, seen: list[dict[str, Any]]) -> Tool:
    def execute(arguments: dict[str, Any], cancel: Any) -> ToolResult:
        seen.append(arguments)
        return ToolResult(f"{name} ok")

    return Tool(name, f"the {name} tool", {"type": "object", "additionalProperties": True}, execute)


def run_on(
    provider: str,
    handler: Any,
    tools: list[Tool],
    *,
    model: str = "gpt-5-mini",
    session: Path | None = None,
    user: str = "go",
    **options: Any,
) -> tuple[RunResult, ProviderServer]:
    with ProviderServer(handler=handler) as server:
        url = server.url if provider == "anthropic" else f"{server.url}/v1"
        client = create_client(provider, model, url, "key", retry=NO_RETRY, **options)
        try:
            result = run_agent(
                client=client, system="be brief", tools=tools, user=user, max_turns=4, session_path=session
            )
        finally:
            client.close()  # type: ignore[attr-defined]
    return result, server


def sent_reasoning(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [item for item in body["input"] if item.get("type") == "reasoning"]


def kinds(body: dict[str, Any]) -> list[str]:
    return [item.get("type") or item["role"] for item in body["input"]]


def test_a_tool_turn_sends_its_reasoning_back_byte_for_byte(tmp_path: Path) -> None:
    session = tmp_path / "s.jsonl"
    handler = ResponsesAPI(Reply([fixture("responses-function-call.sse")]), text_reply("Sunny."))
    seen: list[dict[str, Any]] = []
    result, server = run_on(
        "openai-responses", handler, [recording_tool("get_weather", seen)], session=session
    )
    assert result.stop_reason == "complete", handler.refused
    assert seen == [{"location": "Paris, France"}]
    (issued_id, issued) = next(iter(issued_in(fixture("responses-function-call.sse")).items()))
    body = server.requests[1].body
    assert kinds(body) == ["user", "reasoning", "function_call", "function_call_output"]
    assert sent_reasoning(body) == [
        {"type": "reasoning", "id": issued_id, "summary": [], "encrypted_content": issued}
    ]
    # the record keeps it, across the session file
    turn = load_session(session)[1]
    assert turn == result.messages[1]
    assert turn.reasoning[0].origin == responses_origin(f"{server.url}/v1")
    assert (
        turn.reasoning[0].data is not None and turn.reasoning[0].data["item"]["encrypted_content"] == issued
    )


def test_interleaved_items_go_back_in_their_order(tmp_path: Path) -> None:
    handler = ResponsesAPI(Reply([fixture("responses-preamble-call.sse")]), text_reply("Done."))
    result, server = run_on("openai-responses", handler, [recording_tool("read_file", [])])
    assert result.stop_reason == "complete", handler.refused
    body = server.requests[1].body
    assert kinds(body) == [
        "user",
        "reasoning",
        "assistant",
        "reasoning",
        "function_call",
        "function_call_output",
    ]
    assert [r["id"] for r in sent_reasoning(body)] == list(issued_in(fixture("responses-preamble-call.sse")))


def test_of_two_reasoning_items_in_a_row_only_the_last_goes_back() -> None:
    handler = ResponsesAPI(Reply([fixture("responses-reasoning-two-items.sse")]), text_reply("Warm."))
    result, server = run_on("openai-responses", handler, [recording_tool("get_weather", [])], model="o4-mini")
    assert result.stop_reason == "complete", handler.refused
    issued = list(issued_in(fixture("responses-reasoning-two-items.sse")))
    assert len(result.messages[1].reasoning) == 2  # the record keeps both
    assert [r["id"] for r in sent_reasoning(server.requests[1].body)] == issued[1:]
    both = {
        "model": "o4-mini",
        "input": [{"type": "reasoning", "id": i, "encrypted_content": "x"} for i in issued],
    }
    from api_rules_responses import reasoning_items

    assert reasoning_items(both, dict.fromkeys(issued, "x")) == (
        400,
        f"Item '{issued[0]}' of type 'reasoning' was provided without its required following item.",
    )


def test_a_call_cut_by_the_limit_is_answered_and_the_next_request_is_valid() -> None:
    handler = ResponsesAPI(Reply([fixture("responses-incomplete-mid-call.sse")]), text_reply("Shorter then."))
    seen: list[dict[str, Any]] = []
    result, server = run_on("openai-responses", handler, [recording_tool("write_file", seen)])
    assert result.stop_reason == "complete", handler.refused
    assert seen == []  # the cut call never ran
    output = next(i for i in server.requests[1].body["input"] if i.get("type") == "function_call_output")
    assert "cut off by the output token limit" in output["output"]


@pytest.mark.parametrize(
    ("name", "reason", "detail", "text"),
    [
        ("responses-refusal.sse", "refusal", "refusal", "I'm sorry, but I can't help with that request."),
        (
            "responses-incomplete-text.sse",
            "max_output_tokens",
            "max_output_tokens",
            "The three laws of motion are: first, an object at rest stays",
        ),
        ("responses-content-filter.sse", "content_filter", "content_filter", "Here is how you"),
    ],
)
def test_an_answer_that_did_not_end_naturally_is_never_committed(
    tmp_path: Path, name: str, reason: str, detail: str, text: str
) -> None:
    session = tmp_path / "s.jsonl"
    with pytest.raises(IncompleteResponseError) as caught:
        run_on("openai-responses", ResponsesAPI(Reply([fixture(name)])), [], session=session)
    assert (caught.value.reason, caught.value.detail, caught.value.text) == (reason, detail, text)
    assert [m.role for m in load_session(session)] == ["user"]


def test_usage_of_the_run_counts_cached_and_reasoning_tokens() -> None:
    handler = ResponsesAPI(
        Reply([fixture("responses-function-call.sse")]), Reply([fixture("responses-usage-cached.sse")])
    )
    prices = {"input": 0.25, "output": 2.0, "cache_read": 0.025}
    result, _ = run_on("openai-responses", handler, [recording_tool("get_weather", [])], prices=prices)
    assert result.usage.requests == 2
    assert (result.usage.input_tokens, result.usage.cache_read_tokens) == (61 + 2006, 1920)
    assert result.usage.reasoning_tokens == 64 + 256
    assert result.usage.cost_usd == pytest.approx(((61 + 86) * 0.25 + 1920 * 0.025 + 388 * 2.0) / 1e6)


def test_a_call_whose_output_was_trimmed_away_is_still_answered() -> None:
    handler = ResponsesAPI(text_reply("ok"))
    record = [
        Message("user", "q"),
        Message("assistant", "", (ToolCall("call_a", "t", {}),)),
        Message("assistant", "answer"),  # the tool message is gone (trimmed, or a crash)
        Message("tool", "dangling", tool_call_id="call_zz"),
    ]
    with ProviderServer(handler=handler) as server:
        client = create_client("openai-responses", "gpt-5-mini", f"{server.url}/v1", "key", retry=NO_RETRY)
        list(client.stream(ModelRequest("", record, ())))
        client.close()  # type: ignore[attr-defined]
    assert not handler.refused, handler.refused
    assert kinds(server.requests[0].body) == ["user", "function_call", "function_call_output", "assistant"]


# --- sessions across processes and providers -----------------------------------------------------

_RESUME = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from miniagent import Tool, ToolResult, run_agent
    from miniagent.providers import RetryPolicy, create_client

    url, session, user = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
    tool = Tool("get_weather", "weather", {"type": "object", "additionalProperties": True},
                lambda arguments, cancel: ToolResult("18 C"))
    client = create_client("openai-responses", "gpt-5-mini", url, "key", retry=RetryPolicy(max_retries=0))
    result = run_agent(client=client, system="be brief", tools=[tool], user=user, max_turns=4,
                       session_path=session)
    print(result.stop_reason, result.messages[-1].content)
    """
)


def _resume(url: str, session: Path, user: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-c", _RESUME, url, str(session), user],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )


def test_a_session_resumed_in_a_new_process_sends_the_same_encrypted_content(tmp_path: Path) -> None:
    session = tmp_path / "s.jsonl"
    handler = ResponsesAPI(
        Reply([fixture("responses-function-call.sse")]), text_reply("Sunny."), text_reply("Rain.")
    )
    with ProviderServer(handler=handler) as server:
        first = _resume(f"{server.url}/v1", session, "weather in Paris?")
        second = _resume(f"{server.url}/v1", session, "and tomorrow?")
    assert first.returncode == 0 and first.stdout.strip() == "complete Sunny.", first.stderr
    assert second.returncode == 0 and second.stdout.strip() == "complete Rain.", (
        second.stderr,
        handler.refused,
    )
    issued = issued_in(fixture("responses-function-call.sse"))
    for captured in server.requests[1:]:  # the first process's second request, and the new process's
        assert {r["id"]: r["encrypted_content"] for r in sent_reasoning(captured.body)} == issued
    assert kinds(server.requests[2].body) == [
        "user", "reasoning", "function_call", "function_call_output", "assistant", "user"
    ]  # fmt: skip


def test_a_session_begun_on_chat_completions_goes_on_with_responses(tmp_path: Path) -> None:
    session = tmp_path / "s.jsonl"
    from api_rules import OPENAI_RULES, openai_error

    vllm = enforcing(
        OPENAI_RULES,
        [
            Reply([fixture("vllm-reasoning-tool-call.sse")]),
            Reply(
                [b'data: {"choices":[{"index":0,"delta":{"content":"Sunny."},"finish_reason":"stop"}]}\n\n']
            ),
        ],
        openai_error,
    )
    run_on("openai", vllm, [recording_tool("get_weather", [])], session=session, model="m")
    handler = ResponsesAPI(call_reply("call_rome", "get_weather", {"location": "Rome"}), text_reply("Rainy."))
    result, server = run_on(
        "openai-responses", handler, [recording_tool("get_weather", [])], session=session, user="and Rome?"
    )
    assert result.stop_reason == "complete", handler.refused
    for captured in server.requests:
        body = captured.body
        assert sent_reasoning(body) == []  # vLLM's reasoning text is not this server's
        first_call = next(i for i in body["input"] if i.get("type") == "function_call")
        first_output = next(i for i in body["input"] if i.get("type") == "function_call_output")
        assert first_call["call_id"] == first_output["call_id"] == short_id(VLLM_ID)
    assert load_session(session)[1].tool_calls[0].id == VLLM_ID  # the record keeps its ids


def test_a_session_begun_on_anthropic_goes_on_with_responses_and_back(tmp_path: Path) -> None:
    session = tmp_path / "s.jsonl"
    thinking = enforcing(
        ANTHROPIC_RULES,
        [Reply([fixture("anthropic-thinking-tool-use.sse")]), _anthropic_text("Mild.")],
        anthropic_error,
    )
    run_on(
        "anthropic", thinking, [recording_tool("get_weather", [])], session=session, model="claude-sonnet-4-5"
    )
    handler = ResponsesAPI(Reply([fixture("responses-function-call.sse")]), text_reply("Sunny."))
    result, server = run_on(
        "openai-responses",
        handler,
        [recording_tool("get_weather", [])],
        session=session,
        user="and now Paris?",
    )
    assert result.stop_reason == "complete", handler.refused
    sent = server.requests[1].body
    assert [r["id"] for r in sent_reasoning(sent)] == list(issued_in(fixture("responses-function-call.sse")))
    assert "signature" not in json.dumps(sent)  # Anthropic's thinking stays with Anthropic
    # and back to Anthropic: the Responses reasoning items are not sent there
    back = enforcing(ANTHROPIC_RULES, [_anthropic_text("Bye.")], anthropic_error)
    result, server = run_on("anthropic", back, [], session=session, model="claude-sonnet-4-5", user="thanks")
    assert result.stop_reason == "complete"
    assert "encrypted_content" not in json.dumps(server.requests[0].body)
    assert "gAAAAAB" not in json.dumps(server.requests[0].body)


def _anthropic_text(text: str) -> Reply:
    return Reply(
        [
            anthropic_sse(
                {"type": "message_start", "message": {"id": "m2", "content": []}},
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
                {"type": "content_block_stop", "index": 0},
                {"type": "message_delta", "delta": {"stop_reason": "end_turn"}},
                {"type": "message_stop"},
            )
        ]
    )


# --- the command line ----------------------------------------------------------------------------


def test_the_cli_runs_on_the_responses_api_with_a_reasoning_effort(tmp_path: Path) -> None:
    from tests.cli_helpers import run_cli

    handler = ResponsesAPI(text_reply("Hello."))
    with ProviderServer(handler=handler) as server:
        args = ["run", "hi", "--provider", "openai-responses", "--base-url", f"{server.url}/v1"]
        done = run_cli([*args, "--reasoning-effort", "high", "--workspace", str(tmp_path)], tmp_path)
    assert done.returncode == 0, (done.stderr, handler.refused)
    assert "Hello." in done.stdout
    body = server.requests[0].body
    assert body["reasoning"] == {"effort": "high"} and body["max_output_tokens"] == 1024


def test_the_cli_runs_on_azure_responses(tmp_path: Path) -> None:
    from tests.cli_helpers import run_cli

    handler = ResponsesAPI(text_reply("Hello."), deployments={"prod-gpt5": "gpt-5"})
    with ProviderServer(handler=handler) as server:
        args = ["run", "hi", "--provider", "azure", "--api", "responses", "--model", "prod-gpt5"]
        args += ["--base-url", f"{server.url}/openai/v1", "--workspace", str(tmp_path)]
        done = run_cli(args, tmp_path, env={"MINIAGENT_API_KEY": "azure-key"})
    assert done.returncode == 0, (done.stderr, handler.refused)
    assert server.requests[0].path == "/openai/v1/responses"
    assert server.requests[0].headers["api-key"] == "azure-key"


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--provider", "openai", "--reasoning-effort", "low"], "--reasoning-effort is for --provider"),
        (["--provider", "openai-responses", "--api", "chat"], "--api is for --provider azure"),
        (["--provider", "openai-responses", "--reasoning-effort", "max"], "reasoning_effort must be one of"),
        (["--provider", "azure", "--model", "d"], "azure needs the resource's URL"),
    ],
)
def test_the_cli_refuses_options_a_provider_does_not_take(tmp_path: Path, args: list[str], said: str) -> None:
    from tests.cli_helpers import run_cli

    done = run_cli(["run", "hi", *args, "--workspace", str(tmp_path)], tmp_path, env={"OPENAI_API_KEY": "k"})
    assert done.returncode == 64, done.stderr
    assert said in done.stderr


def test_the_loopback_server_refuses_what_the_api_refuses() -> None:
    """The rules the tests above pass against, each shown failing with the API's own text."""
    from api_rules_responses import reasoning_items, tool_outputs_answer_calls

    call = {"type": "function_call", "call_id": "call_x", "name": "t", "arguments": "{}"}
    assert tool_outputs_answer_calls({"input": [call]}, {}) == (
        400,
        "No tool output found for function call call_x.",
    )
    output = {"type": "function_call_output", "call_id": "call_y", "output": "r"}
    assert tool_outputs_answer_calls({"input": [output]}, {}) == (
        400,
        "No tool call found for function call output with call_id call_y.",
    )
    issued = {"rs_1": "gAAAAABabc-_="}
    changed = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAAABabc-_"}
    assert reasoning_items({"input": [changed, call]}, issued) == (
        400,
        "The encrypted content for item rs_1 could not be verified.",
    )
    unencrypted = {"type": "reasoning", "id": "rs_1", "summary": []}
    status, message = reasoning_items({"input": [unencrypted, call]}, issued) or (0, "")
    assert status == 404 and message.startswith("Item with id 'rs_1' not found. Items are not persisted")
    last = {**changed, "encrypted_content": issued["rs_1"]}
    assert reasoning_items({"input": [last]}, issued) == (
        400,
        "Item 'rs_1' of type 'reasoning' was provided without its required following item.",
    )
