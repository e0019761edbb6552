"""The output-token limit and the stream timeout of the CLI (issue 19 item 2), against a real
loopback OpenAI-compatible server (``FakeOpenAI``) and the real CLI in a subprocess."""

from __future__ import annotations

from pathlib import Path

from tests.cli_helpers import FakeOpenAI, _chunk, json_lines, model_args, run_cli, text_turn


def _workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder


def test_every_request_carries_the_default_output_token_limit(tmp_path: Path) -> None:
    with FakeOpenAI([text_turn("ok")]) as server:
        done = run_cli(["run", *model_args(server, _workspace(tmp_path)), "hi"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert server.requests[0]["max_tokens"] == 1024


def test_the_limit_comes_from_the_option_or_the_environment(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path)
    with FakeOpenAI([text_turn("ok"), text_turn("ok")]) as server:
        by_option = run_cli(
            ["run", *model_args(server, workspace), "--max-output-tokens", "50", "hi"], tmp_path
        )
        by_env = run_cli(
            ["run", *model_args(server, workspace), "hi"], tmp_path, env={"MINIAGENT_MAX_OUTPUT_TOKENS": "77"}
        )
    assert by_option.returncode == 0 and by_env.returncode == 0, by_option.stderr + by_env.stderr
    assert [r["max_tokens"] for r in server.requests] == [50, 77]


def test_an_answer_cut_at_the_limit_is_an_error_not_an_answer(tmp_path: Path) -> None:
    cut = [
        _chunk({"role": "assistant", "content": ""}),
        _chunk({"content": "The file says"}),
        _chunk({}, "length"),
    ]
    with FakeOpenAI([cut]) as server:
        done = run_cli(["run", *model_args(server, _workspace(tmp_path)), "--json", "hi"], tmp_path)
    assert done.returncode == 1
    assert "output-token limit (1,024 tokens" in done.stderr and "--max-output-tokens" in done.stderr
    last = json_lines(done.stdout)[-1]
    assert last["exit_code"] == 1 and "--max-output-tokens" in last["error"]


def test_bad_limits_are_usage_errors(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path)
    with FakeOpenAI([]) as server:
        zero_tokens = run_cli(
            ["run", *model_args(server, workspace), "--max-output-tokens", "0", "hi"], tmp_path
        )
        zero_seconds = run_cli(
            ["run", *model_args(server, workspace), "--stream-timeout", "0", "hi"], tmp_path
        )
        assert server.posts == 0
    assert zero_tokens.returncode == 64 and "--max-output-tokens" in zero_tokens.stderr
    assert zero_seconds.returncode == 64 and "--stream-timeout" in zero_seconds.stderr
