"""grep's globs: git/ripgrep semantics, checked against ``wcmatch`` as the oracle."""

from __future__ import annotations

import re
import threading
from pathlib import Path

import bracex
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from wcmatch import glob as wcglob

from miniagent.toolbox import default_tools
from miniagent.toolbox.globs import GlobError, compile_glob

FLAGS = wcglob.GLOBSTAR | wcglob.BRACE | wcglob.DOTGLOB


def oracle(pattern: str, path: str) -> bool:
    """wcmatch's verdict, with the rule of ``globs``: an alternative without ``/`` matches names."""
    for alternative in bracex.expand(pattern, keep_escapes=True):
        target = path if "/" in alternative else path.rsplit("/", 1)[-1]
        anchored = re.sub("/{2,}", "/", alternative).removeprefix("/")
        if wcglob.globmatch(target, anchored, flags=FLAGS):
            return True
    return False


TOKENS = st.sampled_from(
    ["a", "b", ".", "/", "*", "**", "?", "[ab]", "[!a]", "[^b]", "[a-c]", "{a,b}", "{*.b,a/*}",
     "\\*", "-", "{a,{b,.c}}", "**/", "/**", "[]a]", "[!.]", "\\[", "{,a}", "é"]
)  # fmt: skip
PATHS = st.lists(
    st.sampled_from(["a", "b", ".a", "a.b", "ab", "*", "b.b", "c", "é", "[", "a]"]), min_size=1, max_size=4
).map("/".join)


@settings(max_examples=400, deadline=None)
@given(st.lists(TOKENS, min_size=1, max_size=6).map("".join), PATHS)
def test_globs_agree_with_wcmatch(pattern: str, path: str) -> None:
    try:
        glob = compile_glob(pattern)
    except GlobError:
        return
    assert glob.matches(path) == oracle(pattern, path)


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("**/*.py", "main.py", True),
        ("**/*.py", "src/pkg/main.py", True),
        ("*.{md,sh}", "README.md", True),
        ("*.{md,sh}", "bin/run.sh", True),
        ("*.{md,sh}", "main.py", False),
        ("[!x]*.txt", "a.txt", True),
        ("[!x]*.txt", "x.txt", False),
        ("src/*.py", "src/a.py", True),
        ("src/*.py", "src/sub/a.py", False),
        ("src/**", "src/sub/a.py", True),
        ("*", ".env", True),
    ],
)
def test_issue_examples(pattern: str, path: str, expected: bool) -> None:
    assert compile_glob(pattern).matches(path) is expected
    assert oracle(pattern, path) is expected


@pytest.mark.parametrize("pattern", ["!*.py", "*.{md", "*.md}", "{a}", "{1..3}", "[ab", "src/", "a\\", "[/]"])
def test_unsupported_globs_are_error_results_not_silent_no_matches(tmp_path: Path, pattern: str) -> None:
    (tmp_path / "a.md").write_text("hit\n")
    grep = {t.name: t for t in default_tools(tmp_path)}["grep"]
    result = grep.execute({"pattern": "hit", "glob": pattern}, threading.Event())
    assert result.is_error and result.content.startswith(("unsupported glob", "the glob"))
    assert "no matches" not in result.content


def test_grep_with_globs_on_real_files(tmp_path: Path) -> None:
    (tmp_path / "main.py").write_text("hit\n")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("hit\n")
    (tmp_path / "run.sh").write_text("hit\n")
    (tmp_path / "x.txt").write_text("hit\n")
    grep = {t.name: t for t in default_tools(tmp_path)}["grep"]

    def found(glob: str) -> list[str]:
        result = grep.execute({"pattern": "hit", "glob": glob}, None)
        assert not result.is_error, result.content
        return sorted(line.split(":")[0] for line in result.content.splitlines() if ":" in line)

    assert found("**/*.py") == ["main.py"]
    assert found("*.{md,sh}") == ["docs/a.md", "run.sh"]
    assert found("[!x]*.*") == ["docs/a.md", "main.py", "run.sh"]
    assert found("docs/*") == ["docs/a.md"]
