"""The one cap of a tool result (``miniagent.tools``): the built-in tools, the MCP servers and
the CLI's ``--context-max-chars`` all take it from there, so it cannot drift between them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from miniagent.mcp import HTTPMCPServer, StdioMCPServer
from miniagent.toolbox import default_tools
from miniagent.tools import MIN_TOOL_OUTPUT_CHARS, TOOL_OUTPUT_CHARS, tool_output_chars


def test_without_a_budget_a_result_gets_the_default_cap() -> None:
    assert tool_output_chars(None) == TOOL_OUTPUT_CHARS


@pytest.mark.parametrize(
    ("budget", "expected"),
    [
        (1_000, 500),
        (2 * TOOL_OUTPUT_CHARS, TOOL_OUTPUT_CHARS),
        (2 * TOOL_OUTPUT_CHARS + 2, TOOL_OUTPUT_CHARS),
        (10**9, TOOL_OUTPUT_CHARS),
        (2 * MIN_TOOL_OUTPUT_CHARS, MIN_TOOL_OUTPUT_CHARS),
        (2 * MIN_TOOL_OUTPUT_CHARS - 2, MIN_TOOL_OUTPUT_CHARS),
        (1, MIN_TOOL_OUTPUT_CHARS),
    ],
)
def test_a_budget_caps_a_result_at_half_of_it_within_the_bounds(budget: int, expected: int) -> None:
    assert tool_output_chars(budget) == expected


def test_the_built_in_tools_cut_a_long_result_at_the_default_cap(tmp_path: Path) -> None:
    tools = {t.name: t for t in default_tools(tmp_path)}
    result = tools["run_command"].execute({"command": "seq 1 30000"}, None)  # about 169,000 characters
    body, status = result.content.rsplit("\n", 1)
    assert status == "exit code: 0"
    assert "characters left out" in body
    assert TOOL_OUTPUT_CHARS - 100 < len(body) <= TOOL_OUTPUT_CHARS


def test_mcp_servers_default_to_the_same_cap() -> None:
    assert StdioMCPServer(sys.executable).max_result_chars == TOOL_OUTPUT_CHARS
    assert HTTPMCPServer("http://127.0.0.1:9/mcp").max_result_chars == TOOL_OUTPUT_CHARS


def test_every_owner_of_a_cap_refuses_one_below_the_smallest(tmp_path: Path) -> None:
    small = MIN_TOOL_OUTPUT_CHARS - 1
    default_tools(tmp_path, max_output_chars=MIN_TOOL_OUTPUT_CHARS)  # the smallest is fine
    with pytest.raises(ValueError, match=f"at least {MIN_TOOL_OUTPUT_CHARS}"):
        default_tools(tmp_path, max_output_chars=small)
    with pytest.raises(ValueError, match=f"at least {MIN_TOOL_OUTPUT_CHARS}"):
        StdioMCPServer(sys.executable, max_result_chars=small)
    with pytest.raises(ValueError, match=f"at least {MIN_TOOL_OUTPUT_CHARS}"):
        HTTPMCPServer("http://127.0.0.1:9/mcp", max_result_chars=small)


def test_the_docs_state_the_cap_of_the_code() -> None:
    page = Path(__file__).resolve().parents[2] / "docs" / "src" / "how-to" / "mcp.md"
    number = f"{TOOL_OUTPUT_CHARS:,}".replace(",", " ")  # the page writes 30 000
    text = " ".join(page.read_text(encoding="utf-8").split())
    assert f"(`miniagent.tools.TOOL_OUTPUT_CHARS`, {number} characters)" in text
