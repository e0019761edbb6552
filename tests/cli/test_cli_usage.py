"""Usage errors of the CLI (issue "The first hour", items 2 and 3): each is exit 64, one line on
stderr, nothing on stdout, and names only what the user gave."""

from __future__ import annotations

import runpy
import subprocess
import sys
from pathlib import Path

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
    ("url", "expected"),
    [
        ("127.0.0.1:8080/v1", "write it as http://127.0.0.1:8080/v1"),
        ("not a url", "does not start with http://"),
        ("ftp://127.0.0.1/v1", "scheme ftp://"),
        ("http://127.0.0.1:80800/v1", "invalid port"),
        # Found by a new user: these were exit 1 "error: ValueError: ..." from the provider.
        ("http://user:SECRET@127.0.0.1:8080/v1", "user info"),
        ("http://127.0.0.1:8080/v1?key=SECRET", "query or fragment"),
        ("http://127.0.0.1:8080/v1#part", "query or fragment"),
        ("http://%31%32%37.0.0.1:8080/v1", "percent-encoded host"),
    ],
)
def test_every_base_url_the_library_refuses_is_a_usage_error(
    url: str, expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _usage(["run", "--provider", "openai", "--base-url", url, "hi"], capsys)
    assert err.startswith("miniagent: error: --base-url ") and expected in err, err
    assert "SECRET" not in err and "ValueError" not in err and err.count("\n") == 1


def test_a_bad_base_url_from_the_environment_names_the_variable(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MINIAGENT_BASE_URL", "http://127.0.0.1:8080/v1?key=SECRET")
    err = _usage(["run", "--provider", "openai", "hi"], capsys)
    assert "MINIAGENT_BASE_URL" in err and "--base-url" not in err and "SECRET" not in err


def test_a_bad_proxy_variable_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://[bad")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    err = _usage(["run", "--provider", "openai", "--base-url", "https://example.test/v1", "hi"], capsys)
    assert "proxy URL" in err and "ValueError" not in err
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    err = _usage(["run", "--provider", "openai", "hi"], capsys)  # the default URL's proxy
    assert "proxy URL" in err and "ValueError" not in err


def test_help_shows_prompt_without_braces(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(["run", "--help"]) == 0
    out = capsys.readouterr().out
    assert "Usage: miniagent run [OPTIONS] [PROMPT]" in out and "{PROMPT}" not in out


def test_an_invocation_does_not_import_pydantic() -> None:
    # Start-up a cron job pays: typer 0.29 imported pydantic on every invocation (setup.cfg pins < 0.29).
    probe = (
        "import sys; from miniagent.cli import run_cli; "
        "run_cli(['run', '--max-turns', '3', '--context-max-chars', '10', 'x']); "
        "heavy = [m for m in ('pydantic', 'rich') if m in sys.modules]; assert not heavy, heavy"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_the_example_script_finds_its_notes_from_any_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # not the repository
    example = runpy.run_path(str(Path(__file__).resolve().parents[2] / "examples" / "read_notes.py"))
    read_file = example["read_file"]
    assert "Juniper" in read_file.execute({"path": "notes.txt"}, None).content
    missing = read_file.execute({"path": "no-such-file.txt"}, None)
    assert missing.is_error and "cannot read no-such-file.txt" in missing.content
