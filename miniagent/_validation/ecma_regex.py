"""ECMA-262 regular expressions (JSON Schema's ``pattern`` dialect) as Python ``re`` patterns.

JSON Schema 2020-12 reads ``pattern`` and ``patternProperties`` as ECMA-262 expressions with
Unicode semantics (the ``u`` flag). Python's ``re`` reads most of the same text differently, so
``translate`` rewrites every construct whose meaning differs:

- ``$`` is the end of the text only (``re``'s ``$`` also matches before a final newline), ``.``
  matches anything but the four line terminators (LF, CR, U+2028, U+2029);
- ``\\d``, ``\\w``, ``\\b`` are ASCII (``[0-9]``, ``[A-Za-z0-9_]``), ``\\s`` is ECMA's white space
  and line terminators (U+00A0, U+FEFF, U+2028, ... included), and their complements, also
  inside a class (``[^\\S\\d]``);
- ``\\p{...}`` / ``\\P{...}`` with a General_Category value (``L``, ``Letter``, ``Nd``, ``digit``,
  ...) or ``Any`` / ``ASCII`` / ``Assigned``, from ``unicodedata`` (built once, on first use);
- ``\\cX``, ``\\0``, ``\\xHH``, ``\\uHHHH`` (a surrogate pair as one code point), ``\\u{H...}``,
  ``(?<name>...)`` / ``\\k<name>``; ``[]`` matches nothing and ``[^]`` any character; a ``{`` that
  is not a quantifier is a literal (``{,5}`` too, which ``re`` would read as ``{0,5}``).

What ECMA-262 does not have is refused (``PatternError``): Python-only groups (``(?P<..>``,
``(?i)``, ``(?#..)``, ``(?>..)``), possessive quantifiers, escapes of letters that mean nothing
(``\\a``, ``\\z``, ``\\Z``), a back reference to a group that does not exist, and what ``re``
cannot compile (a lookbehind of variable width, ``\\p{Script=...}``: a schema problem to report).
Back references keep ``re``'s rule where the two differ (a group that did not take part fails).

``Translated.steps(length)`` bounds how long ``re`` may backtrack on a text of ``length``
characters: ``2 ** length`` when a repeated part holds another repeat, an alternation or when the
pattern has a back reference; else the product of the variable repeats' ranges (``length`` for
an unbounded one), times ``length`` for a search that is not anchored at the start.

Standard library only; ``translate`` caches its results per pattern text.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

__all__ = ["PatternError", "Translated", "translate"]

_LINE_END = "\\n\\r\\u2028\\u2029"
_SPACE = "\\t\\n\\x0b\\x0c\\r \\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff"
_DIGIT = "0-9"
_WORD = "A-Za-z0-9_"
_CLASSES = {"d": (_DIGIT, False), "D": (_DIGIT, True), "w": (_WORD, False), "W": (_WORD, True)}
_CLASSES.update({"s": (_SPACE, False), "S": (_SPACE, True)})
_CONTROL = {"t": "\t", "n": "\n", "v": "\x0b", "f": "\x0c", "r": "\r"}
_SYNTAX = frozenset("^$\\.*+?()[]{}|/-")
_HEX = frozenset("0123456789abcdefABCDEF")
_QUANTIFIERS = frozenset("*+?{")
_BOUND = re.compile(r"\{(\d+)(,(\d*))?\}")
_NAME = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_EXPONENTIAL_AT = 64  # 2 ** 64 steps: never worth trying in-process


class PatternError(ValueError):
    """A ``pattern`` that is not an ECMA-262 regular expression miniagent can run."""


class Translated:
    """One pattern, translated.

    Args:
        source: the ECMA-262 text as the schema has it.
        python: the ``re`` pattern text with the same meaning (compile with ``re.ASCII``).
        compiled: ``python`` compiled.
        exponential: a repeated part can match in many ways (see the module docstring).
        factors: the ranges of the variable repeats (``0`` for an unbounded one).
        anchored: every match starts at the start of the text.
    """

    __slots__ = ("anchored", "bound", "compiled", "degree", "exponential", "factors", "python", "source")

    def __init__(
        self,
        source: str,
        python: str,
        compiled: re.Pattern[str],
        exponential: bool,
        factors: tuple[int, ...],
        anchored: bool,
    ) -> None:
        self.source = source
        self.python = python
        self.compiled = compiled
        self.exponential = exponential
        self.factors = factors
        self.anchored = anchored
        self.bound = 1  # the product of the bounded repeats' ranges
        for factor in factors:
            self.bound *= factor or 1
        self.degree = factors.count(0) + (0 if anchored else 1)  # the power of the text's length

    def steps(self, length: int) -> int:
        """An upper bound of the backtracking steps of a search in ``length`` characters."""
        size = max(length, 1)
        if self.exponential:
            return int(2 ** min(size, _EXPONENTIAL_AT))
        return int(self.bound * size**self.degree)


@functools.lru_cache(maxsize=512)
def translate(pattern: str) -> Translated:
    """The ``re`` form of the ECMA-262 ``pattern`` (module docstring).

    Raises:
        PatternError: not ECMA-262, or not something ``re`` can run; the message says why.
    """
    reader = _Reader(pattern)
    python = reader.disjunction()
    if reader.pos < len(pattern):
        raise PatternError(f"unmatched ')' at character {reader.pos}")
    for number in reader.backrefs:
        if number > reader.groups:
            raise PatternError(f"\\{number} refers to a group that does not exist")
    try:
        compiled = re.compile(python, re.ASCII)
    except (re.error, OverflowError, RecursionError) as error:
        raise PatternError(f"not supported: {error}") from None
    top = reader.top
    exponential = reader.exponential or bool(reader.backrefs) or reader.named_refs
    return Translated(pattern, python, compiled, exponential, tuple(reader.factors), top.anchored)


@dataclass
class _Group:
    """What the translation knows about the group being read."""

    variable: bool = False  # holds a variable repeat, an alternation or a back reference
    anchored: bool = False  # its first term is ``^`` (meaningful for the whole pattern only)
    alternatives: int = 1


class _Reader:
    """A recursive-descent reader of the ECMA-262 grammar that writes the ``re`` text."""

    def __init__(self, pattern: str) -> None:
        self.text = pattern
        self.pos = 0
        self.groups = 0
        self.names: set[str] = set()
        self.backrefs: list[int] = []
        self.named_refs = False
        self.exponential = False
        self.factors: list[int] = []
        self.stack: list[_Group] = [_Group()]
        self.top = self.stack[0]
        if len(pattern) > 100_000:
            raise PatternError("longer than 100000 characters")

    def peek(self, offset: int = 0) -> str:
        index = self.pos + offset
        return self.text[index] if index < len(self.text) else ""

    def fail(self, problem: str) -> PatternError:
        return PatternError(f"{problem} at character {self.pos}")

    # --- structure ------------------------------------------------------------------------------

    def disjunction(self) -> str:
        parts = [self.alternative()]
        while self.peek() == "|":
            self.pos += 1
            self.stack[-1].variable = True
            self.stack[-1].alternatives += 1
            parts.append(self.alternative())
        if self.stack[-1].alternatives > 1:
            self.stack[-1].anchored = False
        return "|".join(parts)

    def alternative(self) -> str:
        out: list[str] = []
        first = True
        while self.pos < len(self.text) and self.peek() not in "|)":
            out.append(self.term(first))
            first = False
        return "".join(out)

    def term(self, first: bool) -> str:
        char = self.peek()
        if char == "^":
            self.pos += 1
            if first and len(self.stack) == 1 and self.stack[0].alternatives == 1:
                self.stack[0].anchored = True
            return self.quantified("^", assertion=True)
        if char == "$":
            self.pos += 1
            return self.quantified("\\Z", assertion=True)
        if char in "*+?":
            raise self.fail("nothing to repeat")
        if char == "{" and _BOUND.match(self.text, self.pos):
            raise self.fail("nothing to repeat")
        atom, variable = self.atom()
        return self.quantified(atom, variable=variable)

    def quantified(self, atom: str, *, assertion: bool = False, variable: bool = False) -> str:
        """``atom`` with the quantifier that follows it, if any (and its lazy ``?``)."""
        bounds = self.quantifier()
        if bounds is None:
            return atom
        low, high, text = bounds
        if assertion or atom in ("\\b", "\\B"):
            raise self.fail("nothing to repeat")
        if self.peek() == "?":
            self.pos += 1
            text += "?"
        if self.peek() in _QUANTIFIERS and (self.peek() != "{" or _BOUND.match(self.text, self.pos)):
            raise self.fail("nothing to repeat")
        if high is None or high > low:
            self.factors.append(0 if high is None else high - low + 1)
            self.stack[-1].variable = True
            if variable and (high is None or high > 1):
                self.exponential = True
        return atom + text

    def quantifier(self) -> tuple[int, int | None, str] | None:
        char = self.peek()
        if char in ("*", "+", "?"):
            self.pos += 1
            return {"*": (0, None, "*"), "+": (1, None, "+"), "?": (0, 1, "?")}[char]
        if char != "{":
            return None
        bound = _BOUND.match(self.text, self.pos)
        if bound is None:
            return None  # a literal "{" (read by atom)
        self.pos = bound.end()
        low = int(bound.group(1))
        high = low if bound.group(2) is None else (int(bound.group(3)) if bound.group(3) else None)
        if high is not None and high < low:
            raise self.fail("numbers out of order in {} quantifier")
        return low, high, bound.group(0)

    def atom(self) -> tuple[str, bool]:
        """The next atom as ``re`` text, and whether it can match in more than one way."""
        char = self.peek()
        if char == "(":
            return self.group()
        if char == ")":
            raise self.fail("unmatched ')'")
        if char == "[":
            return self.char_class(), False
        if char == ".":
            self.pos += 1
            return f"[^{_LINE_END}]", False
        if char == "\\":
            return self.escape(), False
        self.pos += 1
        return _literal(char), False

    def group(self) -> tuple[str, bool]:
        self.pos += 1
        head = "("
        if self.peek() == "?":
            head = self.group_kind()
        else:
            self.groups += 1
        frame = _Group()
        self.stack.append(frame)
        inner = self.disjunction()
        self.stack.pop()
        if self.peek() != ")":
            raise self.fail("missing ')'")
        self.pos += 1
        if frame.variable:
            self.stack[-1].variable = True
        return f"{head}{inner})", frame.variable

    def group_kind(self) -> str:
        for ecma in ("?:", "?=", "?!", "?<=", "?<!"):
            if self.text.startswith(ecma, self.pos):
                self.pos += len(ecma)
                return "(" + ecma
        if self.text.startswith("?<", self.pos):
            name = _NAME.match(self.text, self.pos + 2)
            end = name.end() if name else -1
            if name is None or self.text[end : end + 1] != ">":
                raise self.fail("invalid group name")
            if name.group(0) in self.names:
                raise self.fail(f"duplicate group name {name.group(0)!r}")
            self.names.add(name.group(0))
            self.groups += 1
            self.pos = end + 1
            return f"(?P<{_python_name(name.group(0))}>"
        raise self.fail("not an ECMA-262 group (only (?:, (?=, (?!, (?<=, (?<! and (?<name>)")

    # --- escapes --------------------------------------------------------------------------------

    def escape(self) -> str:
        """An escape outside a class: a class escape, a back reference or one character."""
        char = self.peek(1)
        if char in _CLASSES:
            self.pos += 2
            members, negated = _CLASSES[char]
            return f"[{'^' if negated else ''}{members}]"
        if char in ("p", "P"):
            members, negated = self.property_escape()
            return f"[{'^' if negated else ''}{members}]"
        if char in ("b", "B"):
            self.pos += 2
            return "\\" + char
        if char.isdigit() and char != "0":
            digits = re.match(r"\d+", self.text[self.pos + 1 :])
            assert digits is not None
            self.pos += 1 + digits.end()
            self.backrefs.append(int(digits.group(0)))
            self.stack[-1].variable = True
            return f"(?:\\{int(digits.group(0))})"
        if char == "k":
            name = re.match(r"<([A-Za-z_$][A-Za-z0-9_$]*)>", self.text[self.pos + 2 :])
            if name is None:
                raise self.fail("invalid \\k escape")
            self.pos += 2 + name.end()
            self.named_refs = True
            self.stack[-1].variable = True
            return f"(?P={_python_name(name.group(1))})"
        return _literal(self.character_escape(in_class=False))

    def character_escape(self, *, in_class: bool) -> str:
        """The one character an escape stands for (``self.pos`` at the backslash)."""
        char = self.peek(1)
        if not char:
            raise self.fail("\\ at the end of the pattern")
        self.pos += 2
        if char in _CONTROL:
            return _CONTROL[char]
        if char == "c" and self.peek().isascii() and self.peek().isalpha():
            self.pos += 1
            return chr(ord(self.text[self.pos - 1]) % 32)
        if char == "0" and not self.peek().isdigit():
            return "\x00"
        if char == "x":
            return chr(self.hex_digits(2))
        if char == "u":
            return self.unicode_escape()
        if in_class and char == "b":
            return "\x08"
        if char.isalnum() or char == "_":
            raise PatternError(f"\\{char} is not an ECMA-262 escape at character {self.pos - 2}")
        return char  # an identity escape: \. \/ \- \@ ...

    def hex_digits(self, count: int) -> int:
        digits = self.text[self.pos : self.pos + count]
        if len(digits) != count or not set(digits) <= _HEX:
            raise self.fail("invalid hexadecimal escape")
        self.pos += count
        return int(digits, 16)

    def unicode_escape(self) -> str:
        if self.peek() == "{":
            end = self.text.find("}", self.pos)
            digits = self.text[self.pos + 1 : end] if end > 0 else ""
            if not digits or not set(digits) <= _HEX or int(digits, 16) > 0x10FFFF:
                raise self.fail("invalid \\u{...} escape")
            self.pos = end + 1
            return chr(int(digits, 16))
        code = self.hex_digits(4)
        if 0xD800 <= code < 0xDC00 and self.text.startswith("\\u", self.pos):
            low = self.text[self.pos + 2 : self.pos + 6]
            if len(low) == 4 and set(low) <= _HEX and 0xDC00 <= int(low, 16) < 0xE000:
                self.pos += 6
                return chr(0x10000 + ((code - 0xD800) << 10) + (int(low, 16) - 0xDC00))
        return chr(code)

    def property_escape(self) -> tuple[str, bool]:
        negated = self.peek(1) == "P"
        end = self.text.find("}", self.pos)
        if self.peek(2) != "{" or end < 0:
            raise self.fail("invalid \\p escape")
        name = self.text[self.pos + 3 : end]
        self.pos = end + 1
        from .unicode_classes import property_class  # built on first use only

        members = property_class(name)
        if members is None:
            raise PatternError(f"\\p{{{name}}}: only General_Category values, Any, ASCII and Assigned")
        return members, negated

    # --- classes --------------------------------------------------------------------------------

    def char_class(self) -> str:
        """A ``[...]`` class as ``re`` text; members that are complements (``\\S``, ``\\P{..}``)
        inside it become lookaheads around a plain class."""
        self.pos += 1
        negated = self.peek() == "^"
        if negated:
            self.pos += 1
        plain: list[str] = []
        complements: list[str] = []
        while self.peek() != "]":
            if not self.peek():
                raise self.fail("missing ']'")
            self.class_member(plain, complements)
        self.pos += 1
        return _class_text("".join(plain), complements, negated)

    def class_member(self, plain: list[str], complements: list[str]) -> None:
        first = self.class_atom()
        if self.peek() != "-" or self.peek(1) in ("]", ""):
            self.add_member(first, plain, complements)
            return
        self.pos += 1
        last = self.class_atom()
        if isinstance(first, tuple) or isinstance(last, tuple):
            raise self.fail("a class escape cannot bound a range")
        if ord(first) > ord(last):
            raise self.fail("range out of order in character class")
        plain.append(f"{_class_literal(first)}-{_class_literal(last)}")

    def class_atom(self) -> str | tuple[str, bool]:
        """One character, or (members, negated) for a class escape."""
        char = self.peek()
        if char != "\\":
            self.pos += 1
            return char
        escaped = self.peek(1)
        if escaped in _CLASSES:
            self.pos += 2
            return _CLASSES[escaped]
        if escaped in ("p", "P"):
            return self.property_escape()
        if escaped == "-":
            self.pos += 2
            return "-"
        return self.character_escape(in_class=True)

    @staticmethod
    def add_member(atom: str | tuple[str, bool], plain: list[str], complements: list[str]) -> None:
        if isinstance(atom, str):
            plain.append(_class_literal(atom))
        elif atom[1]:
            complements.append(atom[0])
        else:
            plain.append(atom[0])


def _class_text(plain: str, complements: list[str], negated: bool) -> str:
    """``re`` text for a class of ``plain`` members and the complements of ``complements``."""
    if not complements:
        if not plain:
            return "[\\s\\S]" if negated else "(?!)"
        return f"[{'^' if negated else ''}{plain}]"
    if not negated:  # plain, or outside any of the complemented sets
        forms = [f"[{plain}]"] if plain else []
        forms += [f"[^{members}]" for members in complements]
        return "(?:" + "|".join(forms) + ")"
    # not plain and inside every complemented set: lookaheads, then one character
    guards = f"(?![{plain}])" if plain else ""
    guards += "".join(f"(?=[{members}])" for members in complements[:-1])
    return f"(?:{guards}[{complements[-1]}])"


def _literal(char: str) -> str:
    """``char`` as a literal in ``re`` text outside a class."""
    if char.isalnum() or char == "_" or ord(char) > 0x7F:
        return char if ord(char) > 0x1F else f"\\x{ord(char):02x}"
    if ord(char) < 0x20 or ord(char) == 0x7F:
        return f"\\x{ord(char):02x}"
    return "\\" + char


def _class_literal(char: str) -> str:
    """``char`` as a literal inside a ``re`` class (``[``, ``&``, ``~``, ``|`` escaped too, which
    ``re`` would otherwise warn about as set operations to come)."""
    if ord(char) < 0x20 or ord(char) == 0x7F:
        return f"\\x{ord(char):02x}"
    if char in _SYNTAX or char in "&~|# " or char == "]":
        return "\\" + char
    return char


def _python_name(name: str) -> str:
    """An ECMA group name as a Python one (``$`` is allowed in ECMA names, not in Python's)."""
    return name.replace("$", "_S_")
