"""File tools on real-world files: encodings, byte order marks, line endings, Unicode names."""

from __future__ import annotations

import codecs
import unicodedata
from pathlib import Path
from typing import Any

import pytest

from miniagent import ToolResult
from miniagent.toolbox import default_tools
from miniagent.tools import check_input


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return tmp_path


def run(ws: Path, name: str, **arguments: Any) -> ToolResult:
    tool = {t.name: t for t in default_tools(ws)}[name]
    assert check_input(tool.input_schema, arguments) is None
    return tool.execute(arguments, None)


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be", "utf-32-le"])
def test_utf16_and_utf32_with_a_mark_are_text_for_every_tool(ws: Path, codec: str) -> None:
    mark = {
        "utf-16-le": codecs.BOM_UTF16_LE,
        "utf-16-be": codecs.BOM_UTF16_BE,
        "utf-32-le": codecs.BOM_UTF32_LE,
    }
    path = ws / "notes.txt"
    path.write_bytes(mark[codec] + "héllo\r\nwörld\r\n".encode(codec))
    assert run(ws, "read_file", path="notes.txt").content == "héllo\r\nwörld\r\n"
    assert run(ws, "grep", pattern="wör").content == "notes.txt:2: wörld"
    edited = run(ws, "edit_file", path="notes.txt", old_text="wörld\n", new_text="ünïcode ✓\n")
    assert not edited.is_error, edited.content
    assert path.read_bytes() == mark[codec] + "héllo\r\nünïcode ✓\r\n".encode(codec)


def test_utf8_mark_is_kept_by_an_edit_and_not_shown(ws: Path) -> None:
    path = ws / "a.txt"
    path.write_bytes(codecs.BOM_UTF8 + b"first\nsecond\n")
    assert run(ws, "read_file", path="a.txt").content == "first\nsecond\n"
    assert not run(ws, "edit_file", path="a.txt", old_text="first", new_text="erste").is_error
    assert path.read_bytes() == codecs.BOM_UTF8 + b"erste\nsecond\n"
    assert run(ws, "grep", pattern="^erste$").content == "a.txt:1: erste"


def test_a_shift_jis_file_is_never_written_with_two_encodings(ws: Path) -> None:
    path = ws / "sjis.txt"
    original = "設定 = 1\nname = x\n".encode("shift_jis")
    path.write_bytes(original)
    refused = run(ws, "edit_file", path="sjis.txt", old_text="x", new_text="日本")
    assert refused.is_error
    assert "not UTF-8" in refused.content and "mixing two encodings" in refused.content
    assert path.read_bytes() == original
    # An ASCII edit away from non-UTF-8 bytes keeps the file in its own encoding.
    assert not run(ws, "edit_file", path="sjis.txt", old_text="name = x", new_text="name = y").is_error
    assert path.read_bytes() == "設定 = 1\nname = y\n".encode("shift_jis")
    assert path.read_bytes().decode("shift_jis")


def test_an_ascii_edit_right_after_a_lead_byte_is_refused(ws: Path) -> None:
    """0x83 0x5C is one Shift_JIS character (ソ) whose second byte is ASCII '\\'."""
    path = ws / "so.txt"
    original = "ソ".encode("shift_jis") + b"x\n"
    path.write_bytes(original)
    refused = run(ws, "edit_file", path="so.txt", old_text="\\x", new_text="/x")
    assert refused.is_error and path.read_bytes() == original


def test_invalid_utf16_is_refused_untouched(ws: Path) -> None:
    path = ws / "bad.txt"
    original = codecs.BOM_UTF16_LE + "ok".encode("utf-16-le") + b"\x00\xd8" + "ok".encode("utf-16-le")
    path.write_bytes(original)
    result = run(ws, "edit_file", path="bad.txt", old_text="ok", new_text="no")
    assert result.is_error and path.read_bytes() == original


def test_a_lone_surrogate_is_not_written_into_a_utf8_file(ws: Path) -> None:
    path = ws / "u.txt"
    path.write_text("abc\n")
    assert run(ws, "edit_file", path="u.txt", old_text="b", new_text="\udc80").is_error
    assert path.read_text() == "abc\n"


@pytest.mark.parametrize(
    ("old_text", "new_text"),
    [("two\nthree", "2\r\n3"), ("two\r\nthree", "2\n3"), ("two\nthree", "2\n3"), ("two\r\nthree", "2\r\n3")],
)
def test_crlf_file_keeps_crlf_whatever_the_edit_uses(ws: Path, old_text: str, new_text: str) -> None:
    path = ws / "dos.txt"
    path.write_bytes(b"one\r\ntwo\r\nthree\r\n")
    result = run(ws, "edit_file", path="dos.txt", old_text=old_text, new_text=new_text)
    assert result.content == "edited dos.txt: replaced 1 occurrence at line 2"
    assert path.read_bytes() == b"one\r\n2\r\n3\r\n"


def test_lf_file_keeps_lf(ws: Path) -> None:
    path = ws / "unix.txt"
    path.write_bytes(b"one\ntwo\n")
    assert not run(ws, "edit_file", path="unix.txt", old_text="one\r\ntwo", new_text="1\r\n2").is_error
    assert path.read_bytes() == b"1\n2\n"


@pytest.mark.parametrize(("stored", "asked"), [("NFD", "NFC"), ("NFC", "NFD")])
def test_unicode_names_are_found_in_the_other_normalisation(ws: Path, stored: str, asked: str) -> None:
    folder = unicodedata.normalize(stored, "café")
    name = unicodedata.normalize(stored, "résumé.txt")
    (ws / folder).mkdir()
    (ws / folder / name).write_text("hello\n")
    spelled = unicodedata.normalize(asked, "café/résumé.txt")
    assert spelled != f"{folder}/{name}"
    assert run(ws, "read_file", path=spelled).content == "hello\n"
    assert not run(ws, "edit_file", path=spelled, old_text="hello", new_text="bye").is_error
    assert (ws / folder / name).read_text() == "bye\n"
    assert run(ws, "grep", pattern="bye", path=spelled).content.endswith(": bye")
    assert sorted(p.name for p in (ws / folder).iterdir()) == [name]  # no second file appeared
