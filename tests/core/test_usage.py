"""Usage, cost, budgets and prompt caching (issue 15, library part), against loopback servers."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path
from typing import Any

import pytest
from providers_server import ProviderServer, Reply, anthropic_sse, fixture, request, run, sse

from miniagent import (
    Message,
    ModelRequest,
    RunResult,
    Tool,
    ToolCall,
    ToolResult,
    Usage,
    UsageEvent,
    exit_code_for_stop_reason,
    run_agent,
    tool,
)
from miniagent.providers import RetryPolicy, create_client
from miniagent.providers._pricing import Pricer
from miniagent.testing import ScriptedClient

pytestmark = pytest.mark.timeout(30)

NO_RETRY = RetryPolicy(max_retries=0)


def stream_usage(provider: str, body: bytes, **options: Any) -> list[Usage]:
    with ProviderServer(Reply([body])) as server:
        base = f"{server.url}/v1" if provider == "openai" else server.url
        client = create_client(provider, "m", base, "key", retry=NO_RETRY, **options)
        outcome = run(client.stream(request()))
        client.close()  # type: ignore[attr-defined]
    return [e.usage for e in outcome.events if isinstance(e, UsageEvent)]


# --- item 1: usage from both APIs -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("openai-text.sse", Usage(14, 47, requests=1)),
        ("openai-refusal.sse", Usage(21, 10, requests=1)),
        (
            "deepseek-reasoning-tool-call.sse",
            Usage(301, 42, cache_read_tokens=256, requests=1, reasoning_tokens=19),
        ),
        ("openrouter-reasoning.sse", Usage(14, 12, requests=1, reasoning_tokens=6)),
        ("llamacpp-tool-call-markup.sse", Usage(1436, 38, cache_read_tokens=1408, requests=1)),
        ("openai-duplicate-call-ids.sse", None),
    ],
)
def test_openai_compatible_usage(name: str, expected: Usage | None) -> None:
    assert stream_usage("openai", fixture(name)) == ([expected] if expected else [])


def test_openai_asks_for_usage_and_takes_the_last_of_repeated_usage() -> None:
    chunks = [
        {
            "choices": [{"index": 0, "delta": {"content": "a"}}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 1},
        },
        {
            "choices": [{"index": 0, "delta": {"content": "b"}}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 2},
        },
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": None},
    ]
    with ProviderServer(Reply([sse(*chunks, done=True)])) as server:
        client = create_client("openai", "m", f"{server.url}/v1", "key", retry=NO_RETRY)
        outcome = run(client.stream(request()))
        client.close()  # type: ignore[attr-defined]
    assert server.requests[0].body["stream_options"] == {"include_usage": True}
    assert [e.usage for e in outcome.events if isinstance(e, UsageEvent)] == [Usage(5, 2, requests=1)]
    assert outcome.events[-2].type == "usage" and outcome.events[-1].type == "done"


def test_anthropic_usage_counts_cached_tokens_as_input() -> None:
    body = anthropic_sse(
        {
            "type": "message_start",
            "message": {
                "id": "m",
                "content": [],
                "usage": {
                    "input_tokens": 10,
                    "cache_creation_input_tokens": 100,
                    "cache_read_input_tokens": 1000,
                    "output_tokens": 1,
                },
            },
        },
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 25}},
        {"type": "message_stop"},
    )
    assert stream_usage("anthropic", body) == [Usage(1110, 25, 1000, 100, 1)]
    assert stream_usage("anthropic", fixture("anthropic-thinking-tool-use.sse")) == [
        Usage(512, 89, requests=1)
    ]


def test_run_result_sums_this_runs_usage(tmp_path: Path) -> None:
    @tool
    def t() -> str:
        """A tool."""
        return "ok"

    session = tmp_path / "s.jsonl"
    first = ScriptedClient(
        [[ToolCall("c1", "t", {}), Usage(100, 10, requests=1)], ["done", Usage(150, 5, 80, 0, 1)]]
    )
    result = run_agent(client=first, system="", tools=[t], user="q", max_turns=3, session_path=session)
    assert result.usage == Usage(250, 15, 80, 0, 2)
    second = ScriptedClient([["again", Usage(300, 3, requests=1)]])
    resumed = run_agent(client=second, system="", tools=[t], user="q2", max_turns=1, session_path=session)
    assert resumed.usage == Usage(300, 3, requests=1)  # this run only
    assert RunResult([], "complete").usage == Usage()


def test_usage_adds_and_unknown_cost_stays_unknown() -> None:
    assert Usage(1, 2, cost_usd=0.5, requests=1) + Usage(3, 4, cost_usd=0.25, requests=1) == Usage(
        4, 6, requests=2, cost_usd=0.75
    )
    assert (Usage(requests=1, cost_usd=0.5) + Usage(requests=1)).cost_usd is None
    assert (Usage() + Usage(requests=1, cost_usd=0.5)).cost_usd == 0.5
    assert Usage(5, 6).total_tokens == 11
    assert Usage.from_json(Usage(1, 2, 3, 4, 5, 0.5).to_json()) == Usage(1, 2, 3, 4, 5, 0.5)
    with pytest.raises(ValueError):
        Usage.from_json({"input_tokens": -1})


# --- item 2: cost ---------------------------------------------------------------------------------


def test_user_prices_per_million_tokens() -> None:
    body = fixture("deepseek-reasoning-tool-call.sse")  # 301 in (256 cached), 42 out
    prices = {"input": 0.28, "output": 0.42, "cache_read": 0.028}
    [usage] = stream_usage("openai", body, prices=prices)
    expected = (45 * 0.28 + 256 * 0.028 + 42 * 0.42) / 1e6
    assert usage.cost_usd is not None and math.isclose(usage.cost_usd, expected)


def test_unknown_model_costs_none_and_bad_prices_are_refused() -> None:
    [usage] = stream_usage("openai", fixture("openai-text.sse"))  # model "m" on a loopback server
    assert usage.cost_usd is None
    for bad in ({"input": 1.0}, {"input": -1, "output": 1}, {"input": float("nan"), "output": 1}, {"in": 1}):
        with pytest.raises(ValueError):
            create_client("openai", "m", "http://127.0.0.1:9/v1", prices=bad)


def test_price_table_prices_a_known_model() -> None:
    pytest.importorskip("genai_prices")
    pricer = Pricer("claude-sonnet-4-5", "anthropic", "https://api.anthropic.com", None)
    assert pricer.can_price()
    cost = pricer.cost(Usage(1_000_000, 0, requests=1))
    assert cost is not None and cost > 0
    assert not Pricer("no-such-model-x", "openai", "https://api.openai.com/v1", None).can_price()
    assert not Pricer("m", None, "http://127.0.0.1:8080/v1", None).can_price()


def test_local_prices_are_zero() -> None:
    from miniagent.providers.local import LOCAL_PRICES

    pricer = Pricer("smollm2", None, "http://127.0.0.1:1/v1", LOCAL_PRICES)
    assert pricer.can_price() and pricer.cost(Usage(1000, 10, 900, 0, 1)) == 0.0


# --- item 3: budgets ------------------------------------------------------------------------------


def counting_tool() -> tuple[Tool, list[int]]:
    ran: list[int] = []

    def execute(arguments: dict[str, Any], cancel: Any) -> ToolResult:
        ran.append(1)
        return ToolResult("ok")

    return Tool("t", "a tool", {"type": "object"}, execute), ran


def calls_turn(n: int, usage: Usage) -> list[Any]:
    return [ToolCall(f"c{n}a", "t", {}), ToolCall(f"c{n}b", "t", {}), usage]


def test_token_budget_stops_before_the_request_that_would_pass_it() -> None:
    t, ran = counting_tool()
    client = ScriptedClient([calls_turn(i, Usage(400, 100, requests=1)) for i in range(5)])
    result = run_agent(client=client, system="", tools=[t], user="q", max_turns=10, max_total_tokens=1000)
    assert result.stop_reason == "max_budget" and exit_code_for_stop_reason("max_budget") == 3
    assert len(client.requests) == 2 and result.usage.total_tokens == 1000
    assert len(ran) == 4  # the last turn's calls ran
    answered = {m.tool_call_id for m in result.messages if m.role == "tool"}
    assert answered == {c.id for m in result.messages for c in m.tool_calls}


def test_cost_budget_with_scripted_costs() -> None:
    t, _ = counting_tool()
    script = [calls_turn(i, Usage(10, 10, requests=1, cost_usd=0.004)) for i in range(5)]
    result = run_agent(
        client=ScriptedClient(script), system="", tools=[t], user="q", max_turns=10, max_cost_usd=0.01
    )
    assert result.stop_reason == "max_budget"
    assert result.usage.cost_usd is not None and math.isclose(result.usage.cost_usd, 0.012)


def test_max_turns_still_wins_when_the_turns_run_out_first() -> None:
    t, _ = counting_tool()
    client = ScriptedClient([calls_turn(0, Usage(1, 1, requests=1))])
    result = run_agent(client=client, system="", tools=[t], user="q", max_turns=1, max_total_tokens=10**6)
    assert result.stop_reason == "max_turns"


class Unpriceable(ScriptedClient):
    def can_price(self) -> bool:
        return False


def test_unpriceable_cost_budget_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    session = tmp_path / "s.jsonl"
    client = Unpriceable([["never"]])
    with pytest.raises(ValueError, match="cannot price"):
        run_agent(
            client=client, system="", tools=[], user="q", max_turns=1, max_cost_usd=1.0, session_path=session
        )
    assert not session.exists() and client.requests == []
    # without a cost budget the same client runs
    assert (
        run_agent(client=Unpriceable([["ok"]]), system="", tools=[], user="q", max_turns=1).stop_reason
        == "complete"
    )


def test_a_request_without_a_cost_under_a_cost_budget_raises_at_the_next_check() -> None:
    t, ran = counting_tool()
    client = ScriptedClient([calls_turn(0, Usage(1, 1, requests=1)), ["never"]])
    with pytest.raises(ValueError, match="cannot price"):
        run_agent(client=client, system="", tools=[t], user="q", max_turns=3, max_cost_usd=1.0)
    assert len(client.requests) == 1 and len(ran) == 2


def test_loopback_server_of_unknown_model_cannot_take_a_cost_budget() -> None:
    client = create_client("openai", "m", "http://127.0.0.1:9/v1")
    with pytest.raises(ValueError, match="cannot price"):
        run_agent(client=client, system="", tools=[], user="q", max_turns=1, max_cost_usd=0.5)
    priced = create_client("openai", "m", "http://127.0.0.1:9/v1", prices={"input": 1, "output": 2})
    assert priced.can_price()  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "arguments",
    [
        {"max_total_tokens": -1},
        {"max_total_tokens": 1.5},
        {"max_total_tokens": True},
        {"max_cost_usd": float("nan")},
        {"max_cost_usd": float("inf")},
        {"max_cost_usd": -0.1},
        {"max_cost_usd": "1"},
    ],
)
def test_bad_budgets_are_refused(arguments: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        run_agent(client=ScriptedClient([["x"]]), system="", tools=[], user="q", max_turns=1, **arguments)


# --- item 7: Anthropic prompt caching and a byte-stable prefix -----------------------------------


def anthropic_turn(n: int) -> Reply:
    return Reply(
        [
            anthropic_sse(
                {"type": "message_start", "message": {"id": f"m{n}", "content": []}},
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": f"step {n}"},
                },
                {"type": "content_block_stop", "index": 0},
                {
                    "type": "content_block_start",
                    "index": 1,
                    "content_block": {"type": "tool_use", "id": f"toolu_{n}", "name": "t", "input": {"n": n}},
                },
                {"type": "content_block_stop", "index": 1},
                {"type": "message_delta", "delta": {"stop_reason": "tool_use"}},
                {"type": "message_stop"},
            )
        ]
    )


def strip_cache_control(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: strip_cache_control(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [strip_cache_control(v) for v in value]
    return value


def run_turns(provider: str, replies: list[Reply], **options: Any) -> list[Any]:
    t, _ = counting_tool()
    u, _ = counting_tool()
    u = Tool(
        "u", "another tool", {"type": "object", "properties": {"b": {"type": "string"}, "a": {}}}, u.execute
    )
    with ProviderServer(*replies) as server:
        base = f"{server.url}/v1" if provider == "openai" else server.url
        client = create_client(provider, "m", base, "key", retry=NO_RETRY, **options)
        run_agent(client=client, system="You help.", tools=[t, u], user="go", max_turns=len(replies))
        client.close()  # type: ignore[attr-defined]
    return [captured.body for captured in server.requests]


def test_cache_control_marks_tools_system_and_the_newest_user_message() -> None:
    bodies = run_turns("anthropic", [anthropic_turn(n) for n in range(3)])
    ephemeral = {"type": "ephemeral"}
    for body in bodies:
        assert body["system"] == [{"type": "text", "text": "You help.", "cache_control": ephemeral}]
        assert [t.get("cache_control") for t in body["tools"]] == [None, ephemeral]
        marked = [
            (i, j)
            for i, m in enumerate(body["messages"])
            for j, b in enumerate(m["content"])
            if "cache_control" in b
        ]
        last = len(body["messages"]) - 1
        assert marked == [(last, len(body["messages"][last]["content"]) - 1)]
        assert body["messages"][last]["role"] == "user"


def test_cache_control_can_be_turned_off() -> None:
    [body] = run_turns("anthropic", [anthropic_turn(0)], prompt_cache=False)
    assert "cache_control" not in json.dumps(body) and body["system"] == "You help."


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_each_request_starts_with_the_previous_one_byte_for_byte(provider: str) -> None:
    if provider == "anthropic":
        replies = [anthropic_turn(n) for n in range(4)]
    else:
        replies = [
            Reply(
                [
                    sse(
                        {
                            "choices": [
                                {
                                    "index": 0,
                                    "delta": {
                                        "content": f"step {n}",
                                        "tool_calls": [
                                            {
                                                "index": 0,
                                                "id": f"call_{n}",
                                                "function": {"name": "t", "arguments": '{"n": 1}'},
                                            }
                                        ],
                                    },
                                    "finish_reason": "tool_calls",
                                }
                            ]
                        },
                        done=True,
                    )
                ]
            )
            for n in range(4)
        ]
    bodies = [strip_cache_control(b) for b in run_turns(provider, replies)]
    for before, after in itertools.pairwise(bodies):
        head = {k: v for k, v in before.items() if k != "messages"}
        assert json.dumps(head) == json.dumps({k: v for k, v in after.items() if k != "messages"})
        sent = [json.dumps(m) for m in before["messages"]]
        assert [json.dumps(m) for m in after["messages"][: len(sent)]] == sent


def test_model_request_is_unchanged_by_usage_events() -> None:
    seen: list[ModelRequest] = []

    def turn(request: ModelRequest) -> list[Any]:
        seen.append(request)
        return ["hi", Usage(1, 1, requests=1)]

    result = run_agent(client=ScriptedClient([turn]), system="", tools=[], user="q", max_turns=1)
    assert result.messages[-1] == Message("assistant", "hi")
