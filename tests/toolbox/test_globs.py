"""grep's globs: git/ripgrep semantics, checked against ``wcmatch`` as the oracle."""

from __future__ import annotations

import re
import threading
import unicodedata
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


# --- names in two normal forms ------------------------------------------------------------------------

NFC, NFD = "NFC", "NFD"


@pytest.mark.parametrize(("stored", "typed"), [(NFD, NFC), (NFC, NFD), (NFD, NFD)])
@pytest.mark.parametrize("glob", ["café.txt", "caf?.txt", "caf[é]*", "*é*", "résumé/*.txt", "**/caf*"])
def test_a_glob_matches_a_name_in_either_normal_form(stored: str, typed: str, glob: str) -> None:
    """Path resolution finds ``café.txt`` stored decomposed (NFD, as macOS writes it) from its
    composed spelling; globs compare names in that same form."""
    path = unicodedata.normalize(stored, "résumé/café.txt")
    assert compile_glob(unicodedata.normalize(typed, glob)).matches(path)


@settings(max_examples=200, deadline=None)
@given(
    st.text(alphabet="aeéèüÅ*?[]!/.", min_size=1, max_size=8),
    st.text(alphabet="aeéèüÅ.", min_size=1, max_size=8),
)
def test_a_globs_verdict_does_not_depend_on_normal_forms(pattern: str, path: str) -> None:
    try:
        expected = compile_glob(unicodedata.normalize(NFC, pattern)).matches(unicodedata.normalize(NFC, path))
    except GlobError:
        return
    for form_of_pattern in (NFC, NFD):
        for form_of_path in (NFC, NFD):
            compiled = compile_glob(unicodedata.normalize(form_of_pattern, pattern))
            assert compiled.matches(unicodedata.normalize(form_of_path, path)) is expected


def test_grep_finds_an_nfd_file_by_its_nfc_glob_as_read_file_finds_it(tmp_path: Path) -> None:
    """The red team's input: read_file reached ``café.txt`` stored in NFD, grep's glob did not."""
    folder = tmp_path / unicodedata.normalize(NFD, "résumé")
    folder.mkdir()
    (folder / unicodedata.normalize(NFD, "café.txt")).write_text("hit\n")
    (tmp_path / "other.txt").write_text("hit\n")
    tools = {t.name: t for t in default_tools(tmp_path)}
    composed = unicodedata.normalize(NFC, "résumé/café.txt")
    assert tools["read_file"].execute({"path": composed}, None).content == "hit\n"
    for glob in ("café.txt", "résumé/*", "caf[é].*", "*é*"):
        result = tools["grep"].execute({"pattern": "hit", "glob": unicodedata.normalize(NFC, glob)}, None)
        assert not result.is_error and len(result.content.splitlines()) == 1, (glob, result.content)
        assert unicodedata.normalize(NFC, result.content) == f"{composed}:1: hit"
    for path in (unicodedata.normalize(NFC, "résumé"), composed):  # grep's and list_dir's path
        assert tools["grep"].execute({"pattern": "hit", "path": path}, None).content.endswith(":1: hit")
    listed = tools["list_dir"].execute({"path": unicodedata.normalize(NFC, "résumé")}, None)
    assert unicodedata.normalize(NFC, listed.content) == composed
    tools["write_file"].execute({"path": composed, "content": "new\n"}, None)  # the same file
    assert [p.name for p in folder.iterdir()] == [unicodedata.normalize(NFD, "café.txt")]
