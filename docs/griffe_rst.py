"""A Griffe extension for the reference pages: the two reStructuredText forms that miniagent's
docstrings use, read as Markdown.

The docstrings are Google style with Markdown-compatible inline markup (````code```` is a code
span in both). Two block forms differ, and this extension rewrites them before mkdocstrings
renders the docstring; the source stays as it is:

- a literal block (a paragraph ending in ``::``, then an indented block) becomes a fenced code
  block (``python`` when the block parses as Python, ``json`` when it parses as JSON, else
  ``text``), and the ``::`` becomes ``:`` (or goes, when it stands alone);
- a simple table (rows between lines of ``====`` runs) becomes a Markdown table.

Loaded by ``docs/mkdocs.yml`` (``extensions: [griffe_rst.py]``); standard library and Griffe only.
"""

from __future__ import annotations

import ast
import json
import re
import textwrap
from typing import Any

import griffe

_BORDER = re.compile(r"^(\s*)(=+)(\s+=+)+\s*$")


def _language(code: str) -> str:
    """The fence language of a literal block: ``python``, ``json`` or ``text``."""
    try:
        json.loads(code)
        return "json"
    except ValueError:
        pass
    try:
        ast.parse(code)
        return "python"
    except SyntaxError:
        return "text"


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def literal_blocks(text: str) -> str:
    """Rewrite every ``::`` literal block of ``text`` as a fenced code block."""
    lines = text.splitlines()
    out: list[str] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        if not line.rstrip().endswith("::") or index >= len(lines) or lines[index].strip():
            out.append(line)
            continue
        base = _indent(line)
        block: list[str] = []
        while index < len(lines) and (not lines[index].strip() or _indent(lines[index]) > base):
            block.append(lines[index])
            index += 1
        while block and not block[-1].strip():
            block.pop()
        if not block:
            out.append(line)
            continue
        head = line.rstrip()[:-2]
        out.append(head.rstrip() + ":" if head.strip() and not head.endswith(" ") else head.rstrip())
        code = textwrap.dedent("\n".join(block)).strip("\n")
        pad = " " * base
        out += ["", f"{pad}```{_language(code)}", *(pad + row for row in code.splitlines()), f"{pad}```", ""]
    return "\n".join(out)


def _columns(border: str) -> list[tuple[int, int]]:
    return [(match.start(), match.end()) for match in re.finditer(r"=+", border)]


def _cells(line: str, columns: list[tuple[int, int]]) -> list[str]:
    cells = []
    for number, (start, _) in enumerate(columns):
        end = columns[number + 1][0] if number + 1 < len(columns) else len(line)
        cells.append(line[start:end].strip().replace("|", "\\|"))
    return cells


def simple_tables(text: str) -> str:
    """Rewrite every reStructuredText simple table of ``text`` (one header row) as Markdown."""
    lines = text.splitlines()
    out: list[str] = []
    index = 0
    while index < len(lines):
        match = _BORDER.match(lines[index])
        borders = [i for i in range(index, len(lines)) if _BORDER.match(lines[i])][:3] if match else []
        if len(borders) < 3 or borders[0] != index:
            out.append(lines[index])
            index += 1
            continue
        columns = _columns(lines[index])
        pad = match.group(1) if match else ""
        header = [_cells(row, columns) for row in lines[borders[0] + 1 : borders[1]] if row.strip()]
        body = [_cells(row, columns) for row in lines[borders[1] + 1 : borders[2]] if row.strip()]
        rows = [*header[:1], ["---"] * len(columns), *body]
        out += ["", *(pad + "| " + " | ".join(row) + " |" for row in rows), ""]
        index = borders[2] + 1
    return "\n".join(out)


class RestructuredBlocks(griffe.Extension):
    """Rewrites literal blocks and simple tables in every docstring Griffe reads."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        """Rewrite ``obj``'s docstring in place (the parsed sections are built from it later)."""
        if obj.docstring is not None:
            obj.docstring.value = simple_tables(literal_blocks(obj.docstring.value))
