"""``default_tools(..., sandbox="workspace")``: ``run_command`` and ``grep``'s worker run confined,
the model is told so, and a worker that cannot confine itself searches nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from miniagent.process.sandbox import Sandbox, landlock_abi
from miniagent.toolbox import Workspace, default_tools, run_command_tool, search

pytestmark = pytest.mark.skipif(landlock_abi() < 4, reason="needs Landlock ABI 4 or later")


def _tool(tools: list, name: str):  # type: ignore[no-untyped-def]
    return next(t for t in tools if t.name == name)


def test_the_description_tells_the_model_about_the_sandbox(tmp_path: Path) -> None:
    confined = _tool(default_tools(tmp_path, sandbox="workspace"), "run_command").description
    plain = _tool(default_tools(tmp_path), "run_command").description
    assert "sandbox" in confined and "no network" in confined and "$TMPDIR" in confined
    assert "sandbox" not in plain


def test_grep_searches_the_workspace_from_a_confined_worker(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("needle here\n")
    grep = _tool(default_tools(tmp_path, sandbox="workspace"), "grep")
    result = grep.execute({"pattern": "needle"}, None)
    assert result.content == "a.txt:1: needle here" and not result.is_error


def test_a_grep_worker_that_cannot_confine_itself_searches_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / "_confine.py").write_text("def confine(spec):\n    raise OSError('no Landlock here')\n")
    monkeypatch.setattr(search, "CONFINE_MODULE", fake / "_confine.py")
    (tmp_path / "a.txt").write_text("needle\n")
    grep = _tool(default_tools(tmp_path, sandbox="workspace"), "grep")
    result = grep.execute({"pattern": "needle"}, None)
    assert result.is_error and "the search failed" in result.content and "no Landlock here" in result.content
    assert "a.txt:1" not in result.content


def test_the_commands_share_one_private_temporary_folder_until_the_sandbox_is_closed(tmp_path: Path) -> None:
    box = Sandbox(tmp_path)
    run = run_command_tool(Workspace(tmp_path), 10_000, sandbox=box)
    first = run.execute({"command": "touch $TMPDIR/left && echo $TMPDIR"}, None).content.split("\n")[0]
    second = run.execute({"command": "ls $TMPDIR; echo $TMPDIR $TMP $TEMP"}, None).content.split("\n")
    assert second[0] == "left" and second[1].split() == [first] * 3
    box.close()
    assert not Path(first).exists()
    third = run.execute({"command": "echo $TMPDIR"}, None).content.split("\n")[0]
    assert third != first and Path(third).is_dir()
    box.close()
