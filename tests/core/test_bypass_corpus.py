"""The public bypass corpus (``bench/bypass_corpus.py``) against rules allowing only ``git status``,
``git diff *`` and ``pytest *``: not one command is admitted, and ordinary uses of the same rules
still are."""

from __future__ import annotations

import pytest

from bench.bypass_corpus import ALLOWED, CORPUS, RULES, Bypass, prepare_workspace
from miniagent.approval import command_rules
from miniagent.messages import ToolCall
from miniagent.toolbox import Workspace


@pytest.fixture(scope="module")
def policy(tmp_path_factory: pytest.TempPathFactory) -> object:
    folder = tmp_path_factory.mktemp("corpus")
    prepare_workspace(folder)
    return command_rules(RULES, workspace=Workspace(folder))


def _call(command: str) -> ToolCall:
    return ToolCall("call_1", "run_command", {"command": command})


def test_the_corpus_is_at_least_forty_commands_from_public_reports() -> None:
    assert len(CORPUS) >= 40
    assert len({bypass.command for bypass in CORPUS}) == len(CORPUS)
    assert all(bypass.source for bypass in CORPUS)


@pytest.mark.parametrize("bypass", CORPUS, ids=[b.kind for b in CORPUS])
def test_no_bypass_of_the_corpus_is_admitted(policy: object, bypass: Bypass) -> None:
    approval = policy(_call(bypass.command))  # type: ignore[operator]
    assert not approval.approved, f"admitted: {bypass.command!r} ({bypass.kind}; {bypass.source})"
    assert approval.reason.startswith("refused: ")


@pytest.mark.parametrize("command", ALLOWED)
def test_ordinary_uses_of_the_same_rules_still_run(policy: object, command: str) -> None:
    approval = policy(_call(command))  # type: ignore[operator]
    assert approval.approved, approval.reason
