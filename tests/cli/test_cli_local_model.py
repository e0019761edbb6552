"""The CLI on the embedded default model, unattended (stdin not a terminal): the README's runs.

Real model, real subprocesses (``-m local_model``): the README's ``--output-schema`` example as
written, and a line count with ``--approve read-only`` (the read-only command set runs
``wc -l`` on a workspace file).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.cli_helpers import cli_command, cli_env


def run_cli(
    args: list[str], tmp_path: Path, timeout: float, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """The CLI as a user without API keys runs it (the default provider is the embedded model),
    stdin not a terminal (``stdin``: a pipe carrying it, else /dev/null)."""
    env = cli_env(tmp_path)
    env.pop("OPENAI_API_KEY")  # cli_env's test key would choose the openai provider
    return subprocess.run(
        cli_command(args),
        input=stdin,
        stdin=subprocess.DEVNULL if stdin is None else None,
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=timeout,
    )


EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

pytestmark = [pytest.mark.local_model, pytest.mark.timeout(900)]  # a loaded 2-core machine


@pytest.fixture
def examples(tmp_path: Path) -> Path:
    pytest.importorskip("xllamacpp")
    shutil.copytree(EXAMPLES, tmp_path / "examples")
    return tmp_path / "examples"


def test_the_readmes_output_schema_example_works_as_written(tmp_path: Path, examples: Path) -> None:
    """It exited 1: the answer's free "file" string ran away ("repeated itself"); then, copied
    from the words of the request and the result, it was "1"."""
    (tmp_path / "count.json").write_text(
        '{"type": "object", "properties": {"file": {"type": "string"}, "lines": {"type": "integer"}},\n'
        '      "required": ["file", "lines"], "additionalProperties": false}\n'
    )
    question = "How many lines has notes.txt?"
    args = ["run", "--workspace", "examples", "--output-schema", "count.json", question]
    result = run_cli(args, tmp_path, timeout=850)
    assert result.returncode == 0, result.stderr
    [line] = result.stdout.splitlines()
    answer = json.loads(line)
    assert answer["file"] == "notes.txt" and isinstance(answer["lines"], int)


def test_a_line_count_succeeds_with_read_only_approval(tmp_path: Path, examples: Path) -> None:
    args = ["run", "--workspace", "examples", "--approve", "read-only", "How many lines does notes.txt have?"]
    result = run_cli(args, tmp_path, timeout=850)
    assert result.returncode == 0, result.stderr
    assert '"1 notes.txt"' in result.stdout and "refused" not in result.stderr


def test_a_piped_text_is_quoted_and_its_words_are_not_the_request(tmp_path: Path, examples: Path) -> None:
    """Found by a new user: the piped notes' "copy config.txt to backup.txt" refused "summarise
    this" as a two-step request, and a short text made the model read a file named "this"."""
    notes = "Meeting notes: we will copy config.txt to backup.txt on Friday.\n"
    result = run_cli(["run", "--workspace", "examples", "summarise this"], tmp_path, timeout=850, stdin=notes)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith('It says: "Meeting notes: we will copy config.txt'), result.stdout
