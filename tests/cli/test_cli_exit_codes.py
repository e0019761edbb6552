"""The CLI's exit codes have one home, ``cli.defaults.EXIT_CODES``: ``miniagent --help`` is built
from it, every stop reason of the library has a row, and the docs' command-line reference draws its
table (``docs/hooks.py``) and explains every code."""

from __future__ import annotations

import re
import typing
from pathlib import Path

import pytest

from miniagent.agent import StopReason, exit_code_for_stop_reason
from miniagent.cli import run_cli
from miniagent.cli.defaults import (
    EXIT_BUDGET,
    EXIT_CODES,
    EXIT_ERROR,
    EXIT_MAX_TURNS,
    EXIT_SIGHUP,
    EXIT_SIGINT,
    EXIT_SIGPIPE,
    EXIT_SIGTERM,
    EXIT_TIMEOUT,
    EXIT_USAGE,
    exit_codes_text,
)

REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "src" / "reference" / "cli.md"


def _help(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert run_cli(argv) == 0
    return " ".join(capsys.readouterr().out.split())  # click wraps the lines


def _unwrapped(text: str) -> str:
    return "".join(text.split())  # click may also break a line after a hyphen


def test_the_help_lists_every_code_of_the_table_in_its_order(capsys: pytest.CaptureFixture[str]) -> None:
    text = _help(["--help"], capsys)
    assert _unwrapped(f"Exit codes: {exit_codes_text()}.") in _unwrapped(text)
    listed = [int(code) for code in re.findall(r"(?:Exit codes:|,) (\d+) ", text)]
    assert listed == list(EXIT_CODES)


def test_the_options_name_the_codes_of_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    text = _help(["run", "--help"], capsys)
    text = _unwrapped(text)
    assert _unwrapped(f"(exit {EXIT_MAX_TURNS} when reached)") in text
    assert _unwrapped(f"SECONDS (exit {EXIT_TIMEOUT})") in text
    assert text.count(_unwrapped(f"exit {EXIT_BUDGET})")) == 2  # --max-total-tokens, --max-cost
    assert _unwrapped(f"error (exit {EXIT_ERROR})") in text  # --max-output-tokens


@pytest.mark.parametrize("stop_reason", typing.get_args(StopReason))
def test_every_stop_reason_has_a_row(stop_reason: StopReason) -> None:
    assert exit_code_for_stop_reason(stop_reason) in EXIT_CODES


def test_the_reference_draws_the_table_and_explains_every_code() -> None:
    """The table is generated from ``EXIT_CODES``; the codes the table alone does not explain
    (what counts as a usage error, what ends with 129 or 141) are named in the page's prose."""
    text = REFERENCE.read_text(encoding="utf-8")
    assert "<!-- generated: exit-codes -->" in text
    prose = text.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    named = {int(code) for code in re.findall(r"`(\d+)`", prose)}
    explained = {EXIT_ERROR, EXIT_USAGE, EXIT_TIMEOUT, EXIT_SIGHUP, EXIT_SIGINT, EXIT_SIGPIPE, EXIT_SIGTERM}
    assert explained <= named
    assert named <= set(EXIT_CODES)
