"""Configuration files and profiles (``miniagent.cli.config``), through the real CLI in a child
process: real files in the user's folder (``XDG_CONFIG_HOME``) and in the current folder,
precedence flag > environment > profile > file defaults, ``config show``, and every refusal
(exit 64 naming the file and line)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import typer

from miniagent.cli.app import app
from miniagent.cli.config import option_keys
from miniagent.cli.defaults import EXIT_OK, EXIT_USAGE
from tests.cli_helpers import FakeOpenAI, json_lines, run_cli, text_turn

pytestmark = pytest.mark.timeout(120)


def _user_file(tmp_path: Path, text: str, mode: int = 0o644) -> Path:
    path = tmp_path / "config" / "miniagent" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    path.chmod(mode)
    return path


def _project_file(tmp_path: Path, text: str, mode: int = 0o644) -> Path:
    path = tmp_path / "miniagent.toml"
    path.write_text(text, encoding="utf-8")
    path.chmod(mode)
    return path


def _show(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> dict[str, dict[str, object]]:
    shown = run_cli(["config", "show", "--json", *args], tmp_path, env=env)
    assert shown.returncode == EXIT_OK, shown.stderr
    return {row["key"]: row for row in json_lines(shown.stdout)}


def test_every_option_of_run_and_chat_has_a_key_spelled_as_its_flag() -> None:
    group = typer.main.get_command(app)
    for name in ("run", "chat"):
        command = group.commands[name]  # type: ignore[attr-defined]
        keys = option_keys(command)
        flags = {opt[2:] for p in command.params for opt in p.opts[:1] if opt.startswith("--")}
        assert set(keys) == flags - {"help", "profile", "continue"}  # actions, not settings
        assert "max-turns" in keys and "max_turns" not in keys


def test_precedence_flag_over_environment_over_profile_over_defaults(tmp_path: Path) -> None:
    _user_file(tmp_path, 'model = "user-default"\nmax-turns = 2\nsystem = "from the user file"\n')
    project = _project_file(
        tmp_path,
        'max-turns = 3\n\n[profiles.nightly]\nmodel = "nightly-model"\nmax-turns = 6\n',
    )
    rows = _show(tmp_path, "--profile", "nightly")
    assert rows["max-turns"]["value"] == 6
    assert rows["max-turns"]["source"] == f"profile nightly ({project}:5)"
    assert rows["model"]["value"] == "nightly-model"
    assert rows["system"]["source"].startswith("defaults (") and "config.toml:3" in rows["system"]["source"]
    assert rows["max-repeats"]["source"] == "default"
    without = _show(tmp_path)
    assert without["max-turns"]["value"] == 3 and without["max-turns"]["source"] == f"defaults ({project}:1)"
    assert without["model"]["value"] == "user-default"
    by_env = _show(tmp_path, env={"MINIAGENT_PROFILE": "nightly", "MINIAGENT_MODEL": "env-model"})
    assert by_env["profile"]["value"] == "nightly"
    assert by_env["model"] == {"key": "model", "value": "env-model", "source": "environment $MINIAGENT_MODEL"}
    assert by_env["max-turns"]["value"] == 6
    flagged = _show(
        tmp_path, "--max-turns", "9", "--model", "flag-model", env={"MINIAGENT_MODEL": "env-model"}
    )
    assert flagged["max-turns"] == {"key": "max-turns", "value": 9, "source": "flag"}
    assert flagged["model"] == {"key": "model", "value": "flag-model", "source": "flag"}


def test_a_profile_reaches_the_run_and_a_flag_wins(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with FakeOpenAI([text_turn("one"), text_turn("two"), text_turn("three")]) as server:
        _project_file(
            tmp_path,
            f'[profiles.cron]\nprovider = "openai"\nbase-url = "{server.base_url}"\nmodel = "from-profile"\n'
            f'workspace = "{workspace}"\nmax-output-tokens = 77\njson = true\n',
        )
        first = run_cli(["run", "--profile", "cron", "hi"], tmp_path)
        assert first.returncode == EXIT_OK, first.stderr
        assert json_lines(first.stdout)[-1]["stop_reason"] == "complete"
        second = run_cli(["run", "--profile", "cron", "--model", "from-flag", "hi"], tmp_path)
        assert second.returncode == EXIT_OK, second.stderr
        third = run_cli(
            ["run", "hi"], tmp_path, env={"MINIAGENT_PROFILE": "cron", "MINIAGENT_MODEL": "from-env"}
        )
        assert third.returncode == EXIT_OK, third.stderr
    assert server.requests[0]["model"] == "from-profile"
    body = server.requests[0]
    assert body.get("max_completion_tokens", body.get("max_tokens")) == 77
    assert server.requests[1]["model"] == "from-flag"
    assert server.requests[2]["model"] == "from-env"


@pytest.mark.parametrize(
    ("text", "line", "said"),
    [
        ("model = 'm'\nmax_turns = 3\n", 2, "unknown key 'max_turns' (write it as in the flag: max-turns)"),
        ("\n[profiles.x]\nnot-an-option = 1\n", 3, "unknown key 'not-an-option'"),
        ("max-turns = 0\n", 1, "max-turns = 0"),
        ("max-turns = '5'\n", 1, "max-turns: expected an integer, got a string"),
        ("json = 1\n", 1, "json: expected true or false, got an integer"),
        ("\n\napprove = 'everything'\n", 3, "'everything' is not one of"),
        ("prices = '1,x'\n", 1, "expected INPUT,OUTPUT"),
        ("allow-command = 'git status'\n", 1, "expected an array of strings"),
        ("max-repeats = 1\n", 1, "1 would stop every run"),
    ],
)
def test_a_bad_key_or_value_is_a_usage_error_naming_file_and_line(
    tmp_path: Path, text: str, line: int, said: str
) -> None:
    path = _project_file(tmp_path, text)
    for args in (["run", "hi"], ["chat"], ["config", "show"]):
        result = run_cli(args, tmp_path)
        assert result.returncode == EXIT_USAGE, result.stderr
        assert f"{path}:{line}: " in result.stderr and said in result.stderr
        assert result.stdout == ""


def test_a_bad_value_is_refused_even_when_a_flag_overrides_it(tmp_path: Path) -> None:
    path = _user_file(tmp_path, "max-turns = -1\n")
    result = run_cli(["run", "--max-turns", "4", "hi"], tmp_path)
    assert result.returncode == EXIT_USAGE and f"{path}:1: max-turns = -1" in result.stderr


def test_not_toml_and_unknown_profile(tmp_path: Path) -> None:
    path = _project_file(tmp_path, "max-turns = [\n")
    broken = run_cli(["run", "hi"], tmp_path)
    assert broken.returncode == EXIT_USAGE and f"{path}: not valid TOML" in broken.stderr
    _project_file(tmp_path, "[profiles.cron]\nmax-turns = 3\n")
    unknown = run_cli(["run", "--profile", "nightly", "hi"], tmp_path)
    assert unknown.returncode == EXIT_USAGE
    assert "--profile nightly: no such profile in" in unknown.stderr and "(profiles: cron)" in unknown.stderr
    by_env = run_cli(["run", "hi"], tmp_path, env={"MINIAGENT_PROFILE": "nightly"})
    assert by_env.returncode == EXIT_USAGE and "$MINIAGENT_PROFILE=nightly" in by_env.stderr
    nofile = tmp_path / "other"
    nofile.mkdir()
    missing = run_cli(["run", "--profile", "x", "hi"], nofile)
    assert missing.returncode == EXIT_USAGE
    # Found by the docs' shell test: the line read "no such profile in no configuration file exists".
    assert "--profile x: no configuration file exists (looked for " in missing.stderr
    assert "miniagent.toml)" in missing.stderr


def test_a_secret_only_from_a_private_file_and_never_shown(tmp_path: Path) -> None:
    secret = "http://user:s3cret-token@127.0.0.1:9/v1"
    path = _project_file(tmp_path, f'provider = "openai"\nbase-url = "{secret}"\n', mode=0o644)
    refused = run_cli(["config", "show"], tmp_path)
    assert refused.returncode == EXIT_USAGE
    assert f"{path}:2: base-url holds a secret" in refused.stderr and "chmod 600" in refused.stderr
    assert "s3cret" not in refused.stderr
    path.chmod(0o600)
    shown = run_cli(["config", "show"], tmp_path)
    assert shown.returncode == EXIT_OK, shown.stderr
    assert "s3cret" not in shown.stdout and "base-url = ***  # defaults" in shown.stdout
    rows = _show(tmp_path)
    assert rows["base-url"]["value"] == "***"


def test_a_relative_path_and_tilde_in_the_file(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "jobs").mkdir(parents=True)
    _project_file(tmp_path, 'session = "~/jobs/a.jsonl"\nworkspace = "."\n')
    rows = _show(tmp_path, env={"HOME": str(home)})
    assert rows["session"]["value"] == str(home / "jobs" / "a.jsonl")
    assert rows["workspace"]["value"] == "."
    _project_file(tmp_path, 'workspace = "missing-folder"\n')
    missing = run_cli(["run", "hi"], tmp_path)
    assert missing.returncode == EXIT_USAGE and "miniagent.toml:1: workspace" in missing.stderr


def test_config_show_text_lists_the_files(tmp_path: Path) -> None:
    _project_file(tmp_path, "max-turns = 5\n")
    shown = run_cli(["config", "show"], tmp_path)
    assert shown.returncode == EXIT_OK
    first = shown.stdout.splitlines()[0]
    assert "config.toml (none)" in first and str(tmp_path / "miniagent.toml") in first
    assert f"max-turns = 5  # defaults ({tmp_path / 'miniagent.toml'}:1)" in shown.stdout
    assert "# model: not set (default)" in shown.stdout
    assert (
        json.loads(run_cli(["config", "show", "--json"], tmp_path).stdout.splitlines()[0])["key"] == "profile"
    )


def test_the_parse_cache_follows_every_change_and_never_keeps_a_secret(tmp_path: Path) -> None:
    cache = tmp_path / "state" / "miniagent" / "config-cache.json"
    path = _project_file(tmp_path, "max-turns = 5\n")
    assert _show(tmp_path)["max-turns"]["value"] == 5
    assert cache.stat().st_mode & 0o777 == 0o600 and str(path) in json.loads(cache.read_text())
    path.write_text("max-turns = 6\n", encoding="utf-8")  # same size: the times and inode tell
    assert _show(tmp_path)["max-turns"]["value"] == 6
    path.write_text("max-turns = 6\nbad-key = 1\n", encoding="utf-8")
    assert run_cli(["config", "show"], tmp_path).returncode == EXIT_USAGE
    secret = 'base-url = "http://me:hunter2-token@127.0.0.1:9/v1"\n'
    _project_file(tmp_path, secret, mode=0o600)
    assert _show(tmp_path)["base-url"]["value"] == "***"
    assert "hunter2" not in cache.read_text()
    path.chmod(0o644)  # a chmod alone makes the file readable by others: refused at once
    assert run_cli(["config", "show"], tmp_path).returncode == EXIT_USAGE
    cache.write_text("{not json", encoding="utf-8")  # a broken cache is ignored
    path.write_text("max-turns = 7\n", encoding="utf-8")
    assert _show(tmp_path)["max-turns"]["value"] == 7


def test_a_file_anyone_may_write_or_another_user_owns_is_refused(tmp_path: Path) -> None:
    path = _project_file(tmp_path, 'approve = "all"\n', mode=0o666)
    refused = run_cli(["run", "hi"], tmp_path)
    assert refused.returncode == EXIT_USAGE and f"{path}: writable by every user" in refused.stderr
    path.chmod(0o644)
    if os.geteuid() != 0:
        return  # only root can give a file to another user
    os.chown(path, 65534, -1)
    foreign = run_cli(["run", "hi"], tmp_path)
    assert foreign.returncode == EXIT_USAGE and f"{path}: owned by another user (uid 65534)" in foreign.stderr


def test_continue_is_no_setting(tmp_path: Path) -> None:
    # Found by a new user: `continue = true` at the top level was accepted, then every run with a
    # prompt failed (exit 64: "--continue goes on without a new prompt").
    path = _project_file(tmp_path, "continue = true\n")
    refused = run_cli(["config", "show"], tmp_path)
    assert refused.returncode == EXIT_USAGE
    assert f"{path}:1: " in refused.stderr and "continue" in refused.stderr


def test_a_file_problem_points_at_the_file_not_at_the_help(tmp_path: Path) -> None:
    # Found by a new user: every configuration-file error ended "(see 'miniagent --help')".
    path = _project_file(tmp_path, "max_turns = 3\n")
    refused = run_cli(["run", "hi"], tmp_path)
    assert refused.returncode == EXIT_USAGE and f"{path}:1: " in refused.stderr
    assert "--help" not in refused.stderr
