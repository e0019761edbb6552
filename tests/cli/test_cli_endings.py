"""The CLI's word on a turn that did not end naturally, a key held back and usage that never
came (issue "Wire fidelity 3", kinds 1, 9, 10): the real CLI in a subprocess against a real
loopback server. A run that ends so exits 1 with ONE line on stderr naming the reason and the
option that changes it; nothing of the turn is in the session.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.api_rules_endings import chat_tool_call_without_usage, keyless_gateway
from tests.cli_helpers import json_lines, run_cli
from tests.providers_server import ProviderServer, Reply, fixture

pytestmark = pytest.mark.timeout(60)


def _args(server: ProviderServer, tmp_path: Path, provider: str = "openai") -> list[str]:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    base_url = f"{server.url}/v1" if provider == "openai" else server.url
    return ["--provider", provider, "--base-url", base_url, "--model", "m", "--workspace", str(workspace)]


CASES = [
    # (fixture, provider, what the one line must say)
    (
        "openai-length-after-text.sse",
        "openai",
        ["output-token limit (1,024 tokens, stop reason 'length')", "--max-output-tokens"],
    ),
    ("anthropic-max-tokens-text.sse", "anthropic", ["stop reason 'max_tokens'", "--max-output-tokens"]),
    (
        "anthropic-context-window-exceeded.sse",
        "anthropic",
        ["context window is full", "'model_context_window_exceeded'", "--context-max-chars"],
    ),
    ("openai-content-filter.sse", "openai", ["content filter", "'content_filter'"]),
    (
        "anthropic-refusal.sse",
        "anthropic",
        ["refused to answer", "I can't help with synthesizing that compound"],
    ),
    ("openrouter-finish-error.sse", "openai", ["ended the model's answer with an error", "'error'"]),
    ("llamacpp-empty-length.sse", "openai", ["output-token limit", "--max-output-tokens"]),
]


@pytest.mark.parametrize(("name", "provider", "words"), CASES, ids=[c[0] for c in CASES])
def test_an_answer_that_did_not_end_naturally_exits_1_with_one_line(
    tmp_path: Path, name: str, provider: str, words: list[str]
) -> None:
    session = tmp_path / "s.jsonl"
    with ProviderServer(Reply([fixture(name)])) as server:
        done = run_cli(["run", *_args(server, tmp_path, provider), "--session", str(session), "hi"], tmp_path)
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("miniagent: error: "), done.stderr
    for word in words:
        assert word in lines[0], lines[0]
    assert done.stdout == ""  # the cut answer is not printed as if it were one
    assert [line.count('"role"') for line in session.read_text().splitlines()] == [1]  # the user message only


def test_the_json_result_line_carries_the_same_words(tmp_path: Path) -> None:
    with ProviderServer(Reply([fixture("anthropic-context-window-exceeded.sse")])) as server:
        done = run_cli(["run", *_args(server, tmp_path, "anthropic"), "--json", "hi"], tmp_path)
    assert done.returncode == 1
    lines = json_lines(done.stdout)
    assert [line.get("role") for line in lines[:-1]] == ["user"]
    assert lines[-1]["exit_code"] == 1 and "--context-max-chars" in lines[-1]["error"]


def test_a_key_held_back_from_a_local_gateway_names_miniagent_api_key(tmp_path: Path) -> None:
    # cli_env sets OPENAI_API_KEY; a loopback server never gets it.
    with ProviderServer(handler=keyless_gateway(401, Reply([fixture("openai-text.sse")]))) as server:
        refused = run_cli(["run", *_args(server, tmp_path), "hi"], tmp_path)
        keyed = run_cli(
            ["run", *_args(server, tmp_path), "hi"], tmp_path, env={"MINIAGENT_API_KEY": "sk-local"}
        )
    assert refused.returncode == 1
    [line] = refused.stderr.strip().splitlines()
    assert "OPENAI_API_KEY is set but was not sent" in line and "MINIAGENT_API_KEY" in line
    assert "test-key" not in line
    assert keyed.returncode == 0 and keyed.stdout.startswith("I'm unable"), keyed.stderr


def test_a_budget_with_a_server_that_sends_no_usage_stops_with_one_line(tmp_path: Path) -> None:
    replies = [
        chat_tool_call_without_usage("call_1", "list_dir", {"path": "."}),
        Reply([fixture("openai-text.sse")]),
    ]
    with ProviderServer(*replies) as server:
        done = run_cli(
            ["run", *_args(server, tmp_path), "--approve", "all", "--max-total-tokens", "5000", "hi"],
            tmp_path,
        )
        assert len(server.requests) == 1
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("miniagent: error: ") and "reported none for 1 of this run's requests" in last


def test_library_errors_name_no_cli_option_and_the_cli_adds_it_by_kind(tmp_path: Path) -> None:
    """A library error text names library settings; the CLI adds the option that changes it."""
    from miniagent.cli.report import CLI_ADVICE, error_text
    from miniagent.providers.local import LocalModelError, resolve_model_path

    with pytest.raises(LocalModelError) as missing:
        resolve_model_path(tmp_path / "nope.gguf")
    assert missing.value.kind == "model_not_found" and "--" not in str(missing.value)
    assert error_text(missing.value) == f"{missing.value}; {CLI_ADVICE['model_not_found']}"
    done = run_cli(["run", "--provider", "local", "--model", str(tmp_path / "nope.gguf"), "hi"], tmp_path)
    assert done.returncode == 1
    assert "local model file not found" in done.stderr
    assert "give --model a path to a .gguf file" in done.stderr
