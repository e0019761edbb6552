"""File-name globs as git and ripgrep read them, compiled to regular expressions (stdlib only).

Syntax (the subset ``wcmatch`` with ``GLOBSTAR | BRACE | DOTGLOB | MATCHBASE`` agrees with; the
tests use it as the oracle):

- ``*`` any run of characters except ``/``; ``?`` one character except ``/``;
- ``**`` as a whole path component (``**/x``, ``a/**/b``, ``a/**``) any number of folders,
  none included (``**/*.py`` matches ``main.py``); elsewhere (``a**b``) it is ``*``;
- ``[abc]``, ``[a-z]``, ``[!x]`` or ``[^x]`` one character of (or not of) a set, never ``/``;
- ``{md,sh}`` alternatives, nested allowed (``*.{md,sh}`` matches ``a.md`` and ``b.sh``);
- ``\\x`` the character ``x`` itself. Dot files are not special (``*`` matches ``.env``).

Where it applies: an alternative without ``/`` is matched against the file's name at any depth;
one with ``/`` against its path relative to the workspace root (a leading ``/`` anchors it there
explicitly). Case matters; Unicode normal forms do not: the glob and every name are compared in
the one form path resolution uses (``paths.comparable_name``, NFC), so ``café.txt`` typed composed
matches a file whose name is stored decomposed (NFD, as macOS writes it), and ``?`` or ``[é]``
match ``é`` either way.

Unsupported (``GlobError``, which the tool turns into an error result, never a silent "no
matches"): an empty pattern, a leading ``!`` (negation), an unclosed ``[`` or ``{``, a stray
``}``, a ``/`` inside ``[...]``, a brace group without a comma (``{a}``) or a range
(``{1..3}``), a trailing ``/`` or a trailing lone ``\\``, more than ``MAX_ALTERNATIVES``
alternatives.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .paths import comparable_name

__all__ = ["GlobError", "GlobFilter", "compile_glob", "MAX_ALTERNATIVES"]

MAX_ALTERNATIVES = 256


class GlobError(ValueError):
    """A glob this module does not support; the text says why (for the model)."""


@dataclass(frozen=True, slots=True)
class GlobFilter:
    """A compiled glob: regular expressions (``re`` syntax, for ``fullmatch``) for file names
    and for workspace-relative paths; ``None`` when no alternative applies to that form."""

    name_regex: str | None
    path_regex: str | None

    def matches(self, relative_path: str) -> bool:
        """Return whether the file at ``relative_path`` (``/``-separated, any normal form) is
        selected."""
        relative_path = comparable_name(relative_path)
        name = relative_path.rsplit("/", 1)[-1]
        if self.name_regex is not None and re.fullmatch(self.name_regex, name, re.S):
            return True
        return self.path_regex is not None and re.fullmatch(self.path_regex, relative_path, re.S) is not None


def _class_end(pattern: str, start: int) -> int:
    """Index just past the ``]`` closing the class that opens at ``start``, or -1."""
    i = start + 1
    if i < len(pattern) and pattern[i] in "!^":
        i += 1
    if i < len(pattern) and pattern[i] == "]":  # a first "]" is a member
        i += 1
    while i < len(pattern):
        if pattern[i] == "\\":
            i += 2
            continue
        if pattern[i] == "]":
            return i + 1
        i += 1
    return -1


def _past_literal(pattern: str, i: int, whole: str) -> int:
    """The index past an escape (``\\x``) or a ``[...]`` class starting at ``i``; else ``i`` itself.

    Raises ``GlobError`` (naming ``whole``, the pattern as the model wrote it) for an unclosed ``[``.
    """
    char = pattern[i]
    if char == "\\":
        return i + 2
    if char == "[":
        end = _class_end(pattern, i)
        if end < 0:
            raise GlobError(f"unsupported glob {whole!r}: '[' is never closed")
        return end
    return i


def _brace_end(pattern: str, start: int) -> tuple[int, list[str]]:
    """For the ``{`` at ``start``: the index past its ``}`` and its top-level alternatives."""
    depth, i, piece_start, pieces = 0, start, start + 1, []
    while i < len(pattern):
        past = _past_literal(pattern, i, pattern)
        if past != i:
            i = past
            continue
        char = pattern[i]
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                pieces.append(pattern[piece_start:i])
                return i + 1, pieces
        elif char == "," and depth == 1:
            pieces.append(pattern[piece_start:i])
            piece_start = i + 1
        i += 1
    raise GlobError(f"unsupported glob {pattern!r}: '{{' is never closed")


def _expand(pattern: str, whole: str) -> list[str]:
    """Every alternative of ``pattern`` with its brace groups expanded (left to right)."""
    i = 0
    while i < len(pattern):
        past = _past_literal(pattern, i, whole)
        if past != i:
            i = past
            continue
        char = pattern[i]
        if char == "}":
            raise GlobError(f"unsupported glob {whole!r}: '}}' without '{{'")
        if char == "{":
            end, pieces = _brace_end(pattern, i)
            if len(pieces) < 2:
                body = pattern[i:end]
                why = "ranges such as {1..3}" if ".." in body else "a brace group without a comma"
                raise GlobError(f"unsupported glob {whole!r}: {why} ({body}); use {{a,b}}")
            head, tails = pattern[:i], _expand(pattern[end:], whole)
            found: list[str] = []
            for piece in pieces:
                for expanded in _expand(piece, whole):
                    found.extend(head + expanded + tail for tail in tails)
                    if len(found) > MAX_ALTERNATIVES:
                        raise GlobError(
                            f"unsupported glob {whole!r}: more than {MAX_ALTERNATIVES} alternatives"
                        )
            return found
        i += 1
    return [pattern]


def _class_regex(body: str) -> str:
    """The regex of a class ``[...]`` given without its brackets; never matches ``/``."""
    negated = body[:1] in ("!", "^")
    if negated:
        body = body[1:]
    members, i = [], 0
    while i < len(body):
        char = body[i]
        if char == "\\" and i + 1 < len(body):
            members.append(re.escape(body[i + 1]))
            i += 2
            continue
        if char == "-" and members and i + 1 < len(body):
            members.append("-")
        else:
            members.append(re.escape(char) if char in "\\]^[" else char)
        i += 1
    inner = "".join(members)
    return f"[^/{inner}]" if negated else f"(?!/)[{inner}]"


def _translate(pattern: str, whole: str) -> str:
    """The regex of one alternative (no braces left)."""
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        char = pattern[i]
        if char == "\\":
            if i + 1 >= n:
                raise GlobError(f"unsupported glob {whole!r}: it ends with a lone backslash")
            out.append(re.escape(pattern[i + 1]))
            i += 2
        elif char == "*":
            j = i
            while j < n and pattern[j] == "*":
                j += 1
            whole_component = (i == 0 or pattern[i - 1] == "/") and (j == n or pattern[j] == "/")
            if j - i == 2 and whole_component:
                if j == n:
                    out.append(".*")
                else:
                    out.append("(?:[^/]*/)*")
                    j += 1  # the "/" after "**" belongs to it
            else:
                out.append("[^/]*")
            i = j
        elif char == "?":
            out.append("[^/]")
            i += 1
        elif char == "[":
            end = _class_end(pattern, i)
            if "/" in pattern[i:end]:
                raise GlobError(f"unsupported glob {whole!r}: a [...] set cannot hold '/'")
            out.append(_class_regex(pattern[i + 1 : end - 1]))
            i = end
        else:
            out.append(re.escape(char))
            i += 1
    return "".join(out)


def compile_glob(pattern: str) -> GlobFilter:
    """Compile ``pattern`` (module docstring) into a ``GlobFilter``.

    Raises:
        GlobError: the pattern is empty or uses something unsupported (the text says what).
    """
    if not pattern:
        raise GlobError("the glob is empty; leave it out to search every file")
    pattern = comparable_name(pattern)  # names are matched in the same form (module docstring)
    if pattern.startswith("!"):
        raise GlobError(f"unsupported glob {pattern!r}: negation with '!' is not supported")
    names: list[str] = []
    paths: list[str] = []
    for alternative in _expand(pattern, pattern):
        if alternative.endswith("/") and not alternative.endswith("\\/"):
            raise GlobError(
                f"unsupported glob {pattern!r}: it ends with '/'; a glob selects files "
                "(to search a folder, give it as path, or use 'folder/**')"
            )
        if "/" in alternative:
            anchored = re.sub("/{2,}", "/", alternative).removeprefix("/")  # paths have no empty parts
            paths.append(_translate(anchored, pattern))
        else:
            names.append(_translate(alternative, pattern))
    return GlobFilter(
        name_regex="|".join(f"(?:{r})" for r in names) if names else None,
        path_regex="|".join(f"(?:{r})" for r in paths) if paths else None,
    )
