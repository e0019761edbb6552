"""Words of requests, as the embedded model's demo chooser and guards compare them.

Invariants:

- ``split_words`` splits at white space, but a quoted text with a file name in it is one word
  (``"meal plan.txt"`` once became ``plan.txt``, written over an existing file);
- ``content_words`` is lower case and drops paths, file names, code in backticks, stop words
  and a plural ``s``;
- ``is_file_name`` is true of a word with a dot or slash between other characters
  (``notes.txt``, ``data/x``; not ``etc.`` nor ``1.2.3``) and of ``README``, ``Makefile``...;
- ``file_names`` are the request's file names in order, each once, outer punctuation stripped.
"""

from __future__ import annotations

import re

__all__ = [
    "BARE_FILE_NAMES",
    "PATH",
    "STOP_WORDS",
    "STRIP",
    "content_words",
    "file_names",
    "is_file_name",
    "split_words",
]

STRIP = ".,;:!?\"'`()[]{}<>"
"""The outer punctuation stripped from a word of a request."""

STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "at",
        "be",
        "can",
        "do",
        "does",
        "file",
        "files",
        "for",
        "from",
        "i",
        "in",
        "is",
        "it",
        "me",
        "my",
        "of",
        "on",
        "or",
        "please",
        "s",
        "say",
        "says",
        "tell",
        "that",
        "the",
        "this",
        "to",
        "what",
        "which",
        "with",
        "you",
    ]
)


PATH = re.compile(r"`[^`]*`|\S*\w[./]\w\S*")
"""Code in backticks, and paths and file names: a dot or slash between word characters (not the
full stop of ``folder.``)."""


def content_words(text: str) -> set[str]:
    """Content words of ``text``: lower case, without paths, file names, code in backticks and
    stop words, a plural ``s`` dropped."""
    words = re.findall(r"[a-z]+", PATH.sub(" ", text.lower()))
    return {w[:-1] if len(w) > 3 and w.endswith("s") else w for w in words if w not in STOP_WORDS}


BARE_FILE_NAMES = frozenset(
    {"readme", "license", "licence", "changelog", "changes", "contributing", "authors", "notice"}
    | {"makefile", "dockerfile", "procfile", "gemfile", "rakefile", "jenkinsfile", "vagrantfile"}
)
"""Names of files without an extension that requests name as files ("the README")."""


def is_file_name(word: str) -> bool:
    """Whether ``word`` looks like a file name or path: a dot or slash between other characters
    (``notes.txt``, ``data/x``; not ``etc.``), or a name of ``BARE_FILE_NAMES`` in capitals or
    capitalised (``README``, ``Makefile``; not "changes")."""
    if re.fullmatch(r"v?\d+(\.\d+)+", word):
        return False  # a version or a number (1.2.3, 3.14), no file
    if re.search(r"\w[./]\w", word):
        return True
    return word.lower() in BARE_FILE_NAMES and (word.isupper() or word.istitle())


QUOTED = re.compile(
    "(?<!\\w)\"([^\"]+)\"(?!\\w)|(?<!\\w)'([^']+)'(?!\\w)"
    "|\u201c([^\u201d]+)\u201d|(?<!\\w)\u2018([^\u2019]+)\u2019(?!\\w)"
)
"""A quoted text: in straight or curly, double or single quotes; a single quote inside a word
(``What's``, ``Bob's``) opens and closes no quote ("Write what's up with Bob's plan" quoted
"s up with Bob")."""

_TOKEN = re.compile(f"{QUOTED.pattern}|(\\S+)")
"""A word: a quoted text with a space in it (``"meal plan.txt"``), else a run without white
space."""


def quoted_texts(text: str) -> list[str]:
    """The quoted texts of ``text`` (``QUOTED``), in order, without their quotes."""
    return [next(g for g in match.groups() if g) for match in QUOTED.finditer(text)]


def split_words(text: str) -> list[str]:
    """The words of ``text`` (split at white space, but a quoted text with a file name in it is
    one word: ``"meal plan.txt"``), outer punctuation stripped."""
    words: list[str] = []
    for match in _TOKEN.finditer(text):
        quoted = next((g for g in match.groups()[:-1] if g is not None), None)
        if quoted is not None and " " in quoted.strip() and is_file_name(quoted):
            words.append(quoted.strip())
        else:
            words.extend(word.strip(STRIP) for word in match.group(0).split())
    return words


def file_names(request: str) -> list[str]:
    """The file names ``request`` names (``is_file_name``), in order, each once."""
    found: list[str] = []
    for word in split_words(request):
        if is_file_name(word) and word not in found:
            found.append(word)
    return found
