"""A reader of POSIX ``sh`` command lines: the simple commands a line runs, word by word.

``parse(line)`` returns every simple command of ``line`` -- those joined by ``;``, ``&``,
``&&``, ``||``, ``|`` and newlines, and those inside command substitutions (``$(...)``,
backticks), in the order they appear -- each as its variable assignments (``VAR=x``), its words
after quote removal and its redirections. It reads the line as ``/bin/sh`` (POSIX, dash) would,
and refuses what it cannot read with certainty, so that a policy built on it never approves a
command that runs something else than what it saw.

Invariants:

- A ``Word`` has a ``value`` only when the shell will pass exactly that text: quotes removed
  (``'...'``, ``"..."``, backslashes), nothing left to expand. A word with a parameter
  (``$HOME``, ``${X}``), a command substitution, a leading ``~``, bash's brace expansion
  (``{a,b}``) or an unquoted ``[`` (bracket patterns differ between shells) has ``value``
  ``None`` and says why in ``expands``; a word whose only expansion is a pathname pattern
  (unquoted ``*``, ``?``) has ``value`` ``None`` and its ``pattern`` (``glob`` syntax, quoted
  characters escaped as ``[*]``), which a caller may expand itself.
- The simple commands inside a substitution are returned too (``Word.commands`` and the flat
  list of ``parse``), however deeply nested (up to ``MAX_DEPTH``).
- ``ShellSyntaxError`` (a ``ValueError`` whose text a model can act on) is raised for what is
  not a plain list of simple commands or reads differently in dash and bash: an unterminated
  quote or substitution, a missing command around an operator, compound commands (``if``,
  ``for``, ``while``, ``case``, ``{ ...; }``, ``( ... )``, functions), here-documents (``<<``),
  arithmetic ``$((...))``, ``${...}`` with operators, ``$'...'`` and ``$"..."``, process
  substitution ``<(...)``, ``|&``, file descriptors above 9, a trailing backslash.

Operators are the POSIX ones: ``&>`` is ``&`` then ``>``, as dash reads it (bash would read a
redirection; either way a redirection is there to be judged).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["MAX_DEPTH", "Redirect", "ShellSyntaxError", "SimpleCommand", "Word", "parse"]

MAX_DEPTH = 16
"""Most substitutions nested in one another that ``parse`` reads."""

_BLANKS = " \t"
_METACHARACTERS = " \t\n;&|<>()"
_RESERVED = frozenset(
    [
        "if",
        "then",
        "else",
        "elif",
        "fi",
        "do",
        "done",
        "case",
        "esac",
        "while",
        "until",
        "for",
        "in",
        "{",
        "}",
        "!",
        "[[",
        "]]",
        "function",
        "select",
        "coproc",
    ]
)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_SPECIAL_PARAMETERS = "@*#?-$!0123456789"


class ShellSyntaxError(ValueError):
    """The line cannot be read with certainty; the text says what and what to write instead."""


@dataclass(frozen=True)
class Word:
    """One word of a command.

    Args:
        text: the word as written (quotes and all).
        value: what the shell passes for it, when nothing in it expands; else ``None``.
        expands: what makes ``value`` unknown (``"$HOME"``, ``"$(...)"``, ``"~"``...); ``""``
            when ``value`` is known or only a pathname pattern is left.
        pattern: the pathname pattern (``glob`` syntax, quoted ``*?[`` escaped as ``[*]``) of a
            word whose only expansion is unquoted ``*`` or ``?``; else ``None``.
        commands: the simple commands of the word's command substitutions.
    """

    text: str
    value: str | None
    expands: str = ""
    pattern: str | None = None
    commands: tuple[SimpleCommand, ...] = ()


@dataclass(frozen=True)
class Redirect:
    """One redirection: ``fd`` (``None``: the operator's default), ``op`` (``<``, ``>``, ``>>``,
    ``>|``, ``<>``, ``<&``, ``>&``) and its ``target`` word."""

    fd: int | None
    op: str
    target: Word


@dataclass(frozen=True)
class SimpleCommand:
    """One simple command: its ``assignments`` (``NAME=value`` words before the command name),
    its ``words`` (the command name first; empty for a command of assignments or redirections
    only), its ``redirects`` and its source ``text``."""

    assignments: tuple[Word, ...]
    words: tuple[Word, ...]
    redirects: tuple[Redirect, ...]
    text: str


def parse(line: str) -> list[SimpleCommand]:
    """Every simple command of ``line``, substitutions' included (module doc).

    Args:
        line: a command line as given to ``/bin/sh -c``.

    Returns:
        The simple commands in source order; a command's substitutions come before it.

    Raises:
        ShellSyntaxError: the line cannot be read with certainty (module doc).
    """
    parser = _Parser(line, 0, 0)
    found: list[SimpleCommand] = []
    parser.parse_list(found, closing=False)
    return found


class _Parser:
    """Reads ``text`` from ``position``; ``depth`` counts the substitutions around it."""

    def __init__(self, text: str, position: int, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise ShellSyntaxError(f"cannot read the command: more than {MAX_DEPTH} nested substitutions")
        self.text = text
        self.i = position
        self.depth = depth

    # --- lists of commands ----------------------------------------------------------------------

    def parse_list(self, found: list[SimpleCommand], *, closing: bool) -> None:
        """Read commands and operators up to the end (or the ``)`` that closes a ``$(``)."""
        text = self.text
        pending = ""  # an operator (&& || |) that still needs a command after it
        have_command = False  # a command since the last separator
        while True:
            self._skip_blanks()
            if self.i >= len(text):
                if closing:
                    raise ShellSyntaxError("cannot read the command: a $( is never closed with )")
                break
            char = text[self.i]
            if closing and char == ")":
                self.i += 1
                break
            if char == "#":
                end = text.find("\n", self.i)
                self.i = len(text) if end < 0 else end
            elif char in "\n;&|":
                operator = self._operator()
                if operator == "\n":
                    have_command = have_command and bool(pending)
                    continue
                if pending or not have_command:
                    raise ShellSyntaxError(
                        f"cannot read the command: {operator!r} without a command before it"
                    )
                pending = operator if operator in ("&&", "||", "|") else ""
                have_command = False
            elif char in "()":
                raise ShellSyntaxError(
                    "cannot read the command: subshells ( ... ) and functions are not read; "
                    "write simple commands joined by ; && || |"
                )
            else:
                self._simple_command(found)
                pending, have_command = "", True
        if pending:
            raise ShellSyntaxError(f"cannot read the command: it ends with {pending!r}")

    def _operator(self) -> str:
        text, i = self.text, self.i
        two = text[i : i + 2]
        if two in (";;", "|&"):
            raise ShellSyntaxError(f"cannot read the command: {two!r} is not a plain command separator")
        if two in ("&&", "||"):
            self.i += 2
            return two
        self.i += 1
        return text[i]

    def _skip_blanks(self) -> None:
        text = self.text
        while self.i < len(text):
            if text[self.i] in _BLANKS:
                self.i += 1
            elif text.startswith("\\\n", self.i):
                self.i += 2
            else:
                return

    # --- one simple command ---------------------------------------------------------------------

    def _simple_command(self, found: list[SimpleCommand]) -> None:
        text = self.text
        start = self.i
        assignments: list[Word] = []
        words: list[Word] = []
        redirects: list[Redirect] = []
        nested: list[SimpleCommand] = []
        while True:
            self._skip_blanks()
            if self.i >= len(text) or text[self.i] in "\n;&|()#":
                break  # a "#" that starts a word starts a comment: parse_list skips it
            redirect = self._redirect()
            if redirect is not None:
                redirects.append(redirect)
                nested.extend(redirect.target.commands)
                continue
            word = self._word()
            nested.extend(word.commands)
            if not words and _ASSIGNMENT.match(word.text):
                assignments.append(word)
                continue
            if not words and not assignments and word.text in _RESERVED:
                raise ShellSyntaxError(
                    f"cannot read the command: {word.text!r} starts a compound command, which is not "
                    "read; write simple commands joined by ; && || |"
                )
            words.append(word)
        found.extend(nested)
        found.append(
            SimpleCommand(tuple(assignments), tuple(words), tuple(redirects), text[start : self.i].strip())
        )

    def _redirect(self) -> Redirect | None:
        """A redirection at the position (with its io number), or ``None`` (nothing consumed)."""
        text, i = self.text, self.i
        digits = i
        while digits < len(text) and text[digits].isdigit():
            digits += 1
        if digits >= len(text) or text[digits] not in "<>":
            return None
        if digits - i > 1:
            raise ShellSyntaxError(
                "cannot read the command: file descriptor numbers above 9 read differently"
            )
        fd = int(text[i:digits]) if digits > i else None
        self.i = digits
        op = self._redirect_operator()
        self._skip_blanks()
        if self.i >= len(text) or text[self.i] in _METACHARACTERS:
            raise ShellSyntaxError(f"cannot read the command: {op!r} without a file name after it")
        return Redirect(fd, op, self._word())

    def _redirect_operator(self) -> str:
        text, i = self.text, self.i
        if text.startswith("<<", i):
            raise ShellSyntaxError(
                "cannot read the command: here-documents (<<) are not read; write the text to a file"
            )
        if text.startswith(("<(", ">("), i):
            raise ShellSyntaxError("cannot read the command: process substitution <( ) is not read")
        for op in ("<>", "<&", ">>", ">|", ">&", "<", ">"):
            if text.startswith(op, i):
                self.i = i + len(op)
                return op
        raise AssertionError("unreachable: called at < or >")  # pragma: no cover

    # --- words ----------------------------------------------------------------------------------

    def _word(self) -> Word:
        word = _WordBuilder(self.text, self.i)
        text = self.text
        while self.i < len(text) and text[self.i] not in _METACHARACTERS:
            char = text[self.i]
            if char == "\\":
                self._backslash(word)
            elif char == "'":
                end = text.find("'", self.i + 1)
                if end < 0:
                    raise ShellSyntaxError("cannot read the command: a single quote is never closed")
                word.literal(text[self.i + 1 : end], quoted=True)
                self.i = end + 1
            elif char == '"':
                self._double_quoted(word)
            elif char == "$":
                self._dollar(word)
            elif char == "`":
                self._backtick(word, quoted=False)
            else:
                word.unquoted(char, first=self.i == word.start)
                self.i += 1
        return word.build(text[word.start : self.i])

    def _backslash(self, word: _WordBuilder) -> None:
        if self.i + 1 >= len(self.text):
            raise ShellSyntaxError("cannot read the command: it ends with a backslash")
        following = self.text[self.i + 1]
        if following != "\n":  # a backslash-newline joins lines: nothing of it stays
            word.literal(following, quoted=True)
        self.i += 2

    def _double_quoted(self, word: _WordBuilder) -> None:
        text = self.text
        self.i += 1
        while self.i < len(text) and text[self.i] != '"':
            char = text[self.i]
            if char == "\\" and self.i + 1 < len(text) and text[self.i + 1] in '$`"\\\n':
                if text[self.i + 1] != "\n":
                    word.literal(text[self.i + 1], quoted=True)
                self.i += 2
            elif char == "$":
                self._dollar(word)
            elif char == "`":
                self._backtick(word, quoted=True)
            else:
                word.literal(char, quoted=True)
                self.i += 1
        if self.i >= len(text):
            raise ShellSyntaxError("cannot read the command: a double quote is never closed")
        self.i += 1

    def _dollar(self, word: _WordBuilder) -> None:
        text, i = self.text, self.i
        following = text[i + 1] if i + 1 < len(text) else ""
        if text.startswith("$((", i):
            raise ShellSyntaxError("cannot read the command: arithmetic expansion $((...)) is not read")
        if following == "(":
            inner = _Parser(text, i + 2, self.depth + 1)
            found: list[SimpleCommand] = []
            inner.parse_list(found, closing=True)
            word.substitution(text[i : inner.i], found)
            self.i = inner.i
        elif following == "{":
            end = text.find("}", i + 2)
            name = text[i + 2 : end] if end > 0 else ""
            if not (_NAME.fullmatch(name) or (len(name) == 1 and name in _SPECIAL_PARAMETERS)):
                raise ShellSyntaxError(
                    "cannot read the command: ${...} is read only as ${NAME}; operators such as "
                    "${X:-...} are not read"
                )
            word.parameter(text[i : end + 1])
            self.i = end + 1
        elif following in ("'", '"'):
            raise ShellSyntaxError(
                f"cannot read the command: ${following}...{following} quoting differs between shells"
            )
        elif following and (following in _SPECIAL_PARAMETERS or following.isalpha() or following == "_"):
            match = _NAME.match(text, i + 1)
            end = match.end() if match else i + 2
            word.parameter(text[i:end])
            self.i = end
        else:
            word.literal("$", quoted=True)
            self.i += 1

    def _backtick(self, word: _WordBuilder, *, quoted: bool) -> None:
        text = self.text
        j = self.i + 1
        inner: list[str] = []
        escapable = "$`\\" + ('"' if quoted else "")
        while j < len(text) and text[j] != "`":
            if text[j] == "\\" and j + 1 < len(text) and text[j + 1] in escapable:
                inner.append(text[j + 1])
                j += 2
            else:
                inner.append(text[j])
                j += 1
        if j >= len(text):
            raise ShellSyntaxError("cannot read the command: a backtick ` is never closed")
        found: list[SimpleCommand] = []
        _Parser("".join(inner), 0, self.depth + 1).parse_list(found, closing=False)
        word.substitution(text[self.i : j + 1], found)
        self.i = j + 1


class _WordBuilder:
    """The pieces of one word as they are read: its value, its pathname pattern and what expands."""

    def __init__(self, text: str, start: int) -> None:
        self.start = start
        self.value: list[str] = []
        self.pattern: list[str] = []
        self.glob = False
        self.expands = ""
        self.unquoted_text: list[str] = []
        self.commands: list[SimpleCommand] = []

    def literal(self, chars: str, *, quoted: bool) -> None:
        self.value.append(chars)
        self.pattern.append("".join(f"[{c}]" if c in "*?[" else c for c in chars) if quoted else chars)

    def unquoted(self, char: str, *, first: bool) -> None:
        if char == "[":  # bracket expressions differ between shells (``[^x]``): not expanded here
            self.expands = self.expands or "a [...] pattern"
        elif char in "*?":
            self.glob = True
        elif char == "~" and first:
            self.expands = self.expands or "~"
        self.unquoted_text.append(char)
        self.literal(char, quoted=False)

    def parameter(self, written: str) -> None:
        self.expands = self.expands or written

    def substitution(self, written: str, commands: list[SimpleCommand]) -> None:
        self.expands = self.expands or (written if len(written) <= 40 else written[:39] + "…")
        self.commands.extend(commands)

    def build(self, written: str) -> Word:
        unquoted = "".join(self.unquoted_text)
        if "{" in unquoted and ("," in unquoted or ".." in unquoted):
            self.expands = self.expands or "{...} (brace expansion in bash)"
        commands = tuple(self.commands)
        if self.expands:
            return Word(written, None, self.expands, None, commands)
        if self.glob:
            return Word(written, None, "", "".join(self.pattern), commands)
        return Word(written, "".join(self.value), "", None, commands)
