"""A secret never survives a cut in part (issue 14 kind 4): every built-in tool redacts before it
cuts, and hides runs of >= 8 characters of a secret at each cut edge."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from miniagent import ToolResult
from miniagent._redaction import Redactor
from miniagent.toolbox import default_tools

KEY = "sk-" + "".join(chr(97 + (i * 7) % 26) + str(i % 10) for i in range(52))  # 107 characters


def leaked(text: str, secret: str = KEY) -> str | None:
    """A run of 8 or more characters of ``secret`` in ``text``, if any."""
    for start in range(len(secret) - 7):
        if secret[start : start + 8] in text:
            return secret[start : start + 8]
    return None


@pytest.fixture
def tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    return {t.name: t for t in default_tools(tmp_path, max_output_chars=500)}


def run(tools: dict[str, Any], name: str, **arguments: Any) -> ToolResult:
    result: ToolResult = tools[name].execute(arguments, threading.Event())
    return result


def test_redactor_edges() -> None:
    redact = Redactor([KEY])
    assert redact.edges("tail " + KEY[:72], end=True) == "tail ***"
    assert redact.edges(KEY[40:] + " head", start=True) == "*** head"
    assert redact.edges("tail " + KEY[:7], end=True) == "tail " + KEY[:7]  # too short to hide
    assert redact.edges(KEY[10:50], start=True, end=True) == "***"
    assert redact.edges("no secret here", start=True, end=True) == "no secret here"


@pytest.mark.parametrize("pad", range(180, 330, 7))
def test_read_file_cut_never_splits_a_key(tmp_path: Path, tools: dict[str, Any], pad: int) -> None:
    (tmp_path / "k.env").write_text("x" * pad + KEY + "y" * 2000)
    result = run(tools, "read_file", path="k.env")
    assert "characters left out" in result.content
    assert leaked(result.content) is None, result.content


def test_a_multi_line_secret_paged_with_offset_and_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pem = "\n".join(KEY[i : i + 20] for i in range(0, len(KEY), 20))  # a key over six lines
    monkeypatch.setenv("DEPLOY_PRIVATE_KEY", pem)
    (tmp_path / "id.pem").write_text("-----BEGIN-----\n" + pem + "\n-----END-----\n")
    read = {t.name: t for t in default_tools(tmp_path)}["read_file"]
    for offset in range(1, 9):
        for limit in (1, 2, 3):
            content = read.execute({"path": "id.pem", "offset": offset, "limit": limit}, None).content
            assert leaked(content, KEY[:20]) is None, (offset, limit, content)
            for line in pem.split("\n"):
                if len(line) >= 8:
                    assert line not in content, (offset, limit, content)


@pytest.mark.parametrize("at", [100, 470, 497, 560, 900])
def test_grep_window_edges_hide_parts_of_a_key(tmp_path: Path, tools: dict[str, Any], at: int) -> None:
    (tmp_path / "min.js").write_text("a" * at + KEY + "b" * 30 + "NEEDLE" + "c" * 2000 + "\n")
    result = run(tools, "grep", pattern="NEEDLE")
    assert "NEEDLE" in result.content and "[match at column" in result.content
    assert leaked(result.content) is None, result.content


def test_large_file_ends_hide_parts_of_a_key(tmp_path: Path, tools: dict[str, Any]) -> None:
    keep = 4 * 500 + 16  # the bytes read at each end of a large file
    with open(tmp_path / "big.log", "wb") as handle:
        handle.write(b"h" * (keep - 50) + KEY.encode() + b"m" * 9_000_000 + KEY.encode() + b"t" * (keep - 60))
    result = run(tools, "read_file", path="big.log")
    assert "bytes left out" in result.content
    assert leaked(result.content) is None


def test_command_output_cut_hides_parts_of_a_key(tools: dict[str, Any]) -> None:
    script = (
        f"printf '%s' \"$(head -c 1990 /dev/zero | tr '\\\\0' x)\"; printf '{KEY}'; "
        "head -c 3000000 /dev/zero | tr '\\\\0' y"
    )
    result = run(tools, "run_command", command=script)
    assert "left out" in result.content
    assert leaked(result.content) is None
