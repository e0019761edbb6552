"""Usage errors of the CLI (issue "The first hour", items 2 and 3): each is exit 64, one line on
stderr, nothing on stdout, and names only what the user gave."""

from __future__ import annotations

import pytest

from miniagent.cli import EXIT_USAGE, run_cli


def _usage(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert run_cli(argv) == EXIT_USAGE
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and captured.err.startswith("miniagent: error: "), captured.err
    return captured.err


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["run", "--context-max-chars", "10", "hi"], "--context-max-chars 10 is too small"),
        (["run", "--max-turns", "abc", "hi"], "--max-turns"),
        (["run", "--bogus", "hi"], "--bogus"),
        (["run"], "PROMPT"),
        (["run", "--provider", "ollama", "hi"], "'ollama' is not one of local, openai, anthropic"),
    ],
)
def test_usage_errors_are_one_line(
    argv: list[str], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _usage(argv, capsys)
    assert expected in err and "Traceback" not in err and "ValueError" not in err


def test_an_env_var_is_named_only_when_it_was_used(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MINIAGENT_PROVIDER", raising=False)
    assert "MINIAGENT_PROVIDER" not in _usage(["run", "--provider", "ollama", "hi"], capsys)
    monkeypatch.setenv("MINIAGENT_PROVIDER", "ollama")
    assert "(from $MINIAGENT_PROVIDER)" in _usage(["run", "hi"], capsys)


def test_a_prompt_larger_than_the_context_budget_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    err = _usage(["run", "--provider", "openai", "--context-max-chars", "400", "x" * 401], capsys)
    assert "401 characters" in err


@pytest.mark.parametrize(
    ("url", "suggestion"),
    [
        ("127.0.0.1:8080/v1", "did you mean http://127.0.0.1:8080/v1 ?"),
        ("not a url", None),
        ("ftp://127.0.0.1/v1", None),
        ("http://127.0.0.1:80800/v1", None),
        ("http://user:SECRET@127.0.0.1:80800/v1", None),
    ],
)
def test_a_base_url_that_is_not_http_is_a_usage_error(
    url: str, suggestion: str | None, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _usage(["run", "--provider", "openai", "--base-url", url, "hi"], capsys)
    assert "--base-url must be an http:// or https:// URL" in err
    assert "SECRET" not in err
    if suggestion:
        assert suggestion in err


def test_help_shows_prompt_without_braces(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(["run", "--help"]) == 0
    out = capsys.readouterr().out
    assert "Usage: miniagent run [OPTIONS] PROMPT" in out and "{PROMPT}" not in out
