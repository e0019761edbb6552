"""The answers of the embedded model's native client: quotes of a tool result (llama.cpp GBNF).

Invariants:

- An answer to a tool result is the tool's opener (``demos.OPENERS``: ``"It says: "`` for
  ``read_file``...; ``"It returned: "`` for tools without demos) and a quote: the whole result
  when it fits in ``QUOTE_CHARS`` (its lines joined by spaces), else one line of it (of the
  lines sharing most words with the request, when some do), followed by ``(one line of N)``;
  in double quotes, but for ``write_file``/``edit_file`` (``"Done: "`` and the result).
- A command's status line is never inside the quote: a failed exit is said after it
  (``(exit code: 2)``), a successful one not at all.
- Every control character of a result is shown as ``cat -v`` shows it (``^H``): a quote the
  model can write and llama.cpp's grammar parser accepts (a backspace broke it, measured).

Why: the 135M model paraphrases badly and invents facts; a quote of the result it chooses
from is what it gets right.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .demos import OPENERS, OTHER_OPENER
from .words import content_words

__all__ = ["NOTHING_FOUND", "QUOTE_CHARS", "QUOTE_LINES", "answer_grammar", "literal", "quote_rule"]

QUOTE_CHARS = 240
"""Longest quote of a tool result: longer lines are cut to this many characters."""

QUOTE_LINES = 40
"""Most lines of one tool result offered for quoting (the first ones)."""


NOTHING_FOUND = "Nothing found: "
"""The opener of the answer to a search that found nothing (``grep``'s "no matches for ...")."""


def answer_grammar(result: str, tool: str = "", request: str = "") -> str:
    """The grammar of an answer to a tool ``result`` of the tool named ``tool``: its opener
    (``OPENERS``; ``OTHER_OPENER`` for other tools) and a quote: one line of the result or, when it
    fits in ``QUOTE_CHARS``, all of it with its lines joined by spaces. A line of a longer
    result is one of those sharing most words with ``request`` (``_relevant``), when some do."""
    opener, quoted = OPENERS.get(tool, (OTHER_OPENER, True))
    if tool == "grep" and result.startswith("no matches"):
        opener = NOTHING_FOUND  # 'Found: "no matches for ..."' read as a find
    openers = [opener]
    status = ""
    if tool == "run_command":
        result, status = _status(result)
    return f"root ::= {quote_rule(openers, result, quoted, status, request)}\n"


def _relevant(lines: list[str], request: str) -> list[str]:
    """The ``lines`` sharing most content words with ``request`` (two at least when the request
    has two, else one), in their order; all of them when none shares enough: the 135M model
    picks the line that answers a question badly ("What does station.py import?" quoted its
    first line, measured)."""
    wanted = content_words(request)
    shared = [len(wanted & content_words(line)) for line in lines]
    best = max(shared, default=0)
    if best < min(2, len(wanted)) or best == 0:
        return lines
    return [line for line, count in zip(lines, shared, strict=True) if count == best]


_STATUS = re.compile(r"\n?(exit code: (-?\d+)|killed by signal \S+)\s*$")
"""The status line ``run_command`` ends its result with."""


def _status(result: str) -> tuple[str, str]:
    """(the output, its status to show): a command's status line is not part of the quote; a
    failure's status is said after it (``exit code: 2``), success's not at all."""
    found = _STATUS.search(result)
    if found is None:
        return result, ""
    return result[: found.start()], "" if found.group(2) == "0" else found.group(1)


def quote_rule(openers: Sequence[str], result: str, quoted: bool, status: str = "", request: str = "") -> str:
    """Opener, then a quote: a short result whole (its lines joined by spaces), a longer one
    line by line (each cut to ``QUOTE_CHARS``, the first ``QUOTE_LINES``). A quote of one line
    of a longer result says so after it (`` (one line of 100)``; a cut line ``(the first 240
    characters)``), so nobody takes it for the whole result; a ``status`` (a command's failed
    exit) comes after that, outside the quote (`` (exit code: 2)``)."""
    lines = [" ".join(_visible(line).split()) for line in result.splitlines() if line.strip()]
    whole = " ".join(lines)
    notes = []
    if len(whole) <= QUOTE_CHARS:
        quotes = [whole or "(empty)"]
    else:
        quotes = [line[:QUOTE_CHARS].rstrip() for line in _relevant(lines, request)[:QUOTE_LINES]]
        notes.append(f"one line of {len(lines)}" if len(lines) > 1 else f"the first {QUOTE_CHARS} characters")
    if status:
        notes.append(status)
    tail = f" {literal(' (' + '; '.join(notes) + ')')}" if notes else ""
    start = " | ".join(literal(o) for o in openers)
    body = " | ".join(literal(f'"{q}"' if quoted else q) for q in quotes)
    return f"( {start} ) ( {body} ){tail}"


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def literal(text: str) -> str:
    """A GBNF string literal for ``text``: ``"`` and ``\\`` escaped, newline, return and tab as
    ``\\n \\r \\t``, every other control character (C0, DEL, C1) as ``\\xHH`` (llama.cpp's
    GBNF knows no ``\\b`` or ``\\f``), a lone surrogate as U+FFFD; other characters as they are."""
    out = []
    for char in text:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif _CONTROL.fullmatch(char):
            out.append(f"\\x{ord(char):02X}")
        elif "\ud800" <= char <= "\udfff":
            out.append("\ufffd")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
"""A control character (C0, DEL, C1)."""


def _visible(text: str) -> str:
    """``text`` with each control character but tab shown as caret notation (``^H`` for a
    backspace, ``^@`` for NUL, ``^?`` for DEL; C1 as ``\\x85``...), as ``cat -v`` shows
    them: a quote the model can write (llama.cpp matches no NUL) and a terminal shows as is."""

    def shown(match: re.Match[str]) -> str:
        code = ord(match.group())
        if code == 0x7F:
            return "^?"
        return f"^{chr(code + 64)}" if code < 0x20 else f"\\x{code:02x}"

    return _CONTROL.sub(lambda m: m.group() if m.group() == "\t" else shown(m), text)
