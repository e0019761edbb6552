"""Commands that run another command: what they run, read as a simple command of its own.

``inner_commands(command)`` reads the command a wrapper runs -- ``env``, ``command``, ``exec``,
``nice``, ``nohup``, ``timeout``, ``stdbuf``, ``time``, ``xargs``, ``sh``/``dash``/``bash -c
SCRIPT``, ``eval`` -- as ``SimpleCommand`` values (the wrapper's assignments and redirections
carried over, ``env``'s ``NAME=value`` words made assignments), so a policy judges them like any
other simple command; and ``exec_commands(command)`` reads the commands of ``find -exec``,
``-execdir``, ``-ok`` and ``-okdir``. Only the options each wrapper documents as harmless are
read; anything else (``env -S``, ``env -C``, ``bash -l``, ``xargs -a``, ``time -o``...) makes
the wrapper unreadable: ``Unreadable`` says why.

Words a wrapper adds at run time are unknown words (``value`` ``None``): those ``xargs`` reads
from its input, and ``{}`` of ``find -exec``.

``is_program(value, name)`` tells whether a command word names the program ``name``: the same
word, or a path to the very file ``PATH`` finds for ``name`` (``/usr/bin/git`` is ``git``;
``./git`` and ``/tmp/git`` are not).
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass, replace

from .shellwords import ShellSyntaxError, SimpleCommand, Word, parse

__all__ = ["SHELLS", "WRAPPERS", "Unreadable", "exec_commands", "inner_commands", "is_program"]

SHELLS = ("sh", "dash", "bash")
"""Shells whose ``-c SCRIPT`` is read (their scripts read as POSIX ``sh``; ``zsh``, ``ksh`` and
``fish`` differ too much)."""
WRAPPERS = ("env", "command", "exec", "nice", "nohup", "timeout", "stdbuf", "time", "xargs", "eval", *SHELLS)
"""The programs ``inner_commands`` reads through."""

_FROM_INPUT = Word("<words xargs reads from its input>", None, "words xargs reads from its input")
_FOUND_FILE = Word("{}", None, "the file names find puts in place of {}")
_SHELL_FLAGS = re.compile(r"-[euxvfn]*c[euxvfn]*|-[euxvfn]+")
_SET_OPTIONS = frozenset(("pipefail", "errexit", "nounset", "xtrace", "noglob", "verbose"))


@dataclass(frozen=True)
class Unreadable:
    """A wrapper whose command cannot be read; ``reason`` says why (for the model)."""

    reason: str


def is_program(value: str, name: str) -> bool:
    """Whether the command word ``value`` runs the program ``name`` (module doc)."""
    if value == name:
        return True
    if "/" not in value or "/" in name:
        return False
    found = shutil.which(name)
    return found is not None and os.path.realpath(found) == os.path.realpath(value)


def _values(words: tuple[Word, ...]) -> list[str] | None:
    values = [w.value for w in words]
    return None if any(v is None for v in values) else [v for v in values if v is not None]


def _wrapper_name(command: SimpleCommand) -> str | None:
    if not command.words or command.words[0].value is None:
        return None
    first = command.words[0].value
    for name in WRAPPERS:
        if name in ("command", "exec", "eval") and first != name:
            continue  # shell builtins: only by name
        if is_program(first, name):
            return name
    return None


def _inner(command: SimpleCommand, start: int, assignments: tuple[Word, ...] = ()) -> SimpleCommand:
    words = command.words[start:]
    text = " ".join(w.text for w in words)
    return SimpleCommand(command.assignments + assignments, words, command.redirects, text)


def _options(words: tuple[Word, ...], flags: str, valued: str, long: tuple[str, ...] = ()) -> int | str:
    """Skip the options of a wrapper (from ``words[1]``): single letters of ``flags``, letters of
    ``valued`` that take a value (attached or next), long options of ``long`` (``--x=`` takes a
    value); returns the index of the first word after them, or the reason they cannot be read."""
    index = 1
    while index < len(words):
        value = words[index].value
        if value is None:
            return f"{words[index].text} is only known when the command runs"
        if value == "--":
            return index + 1
        if not value.startswith("-") or value == "-":
            return index
        if value.startswith("--"):
            name = value.split("=", 1)[0]
            if value in long or (name + "=" in long and "=" in value):
                index += 1
                continue
            if name + "=" in long:
                index += 2
                continue
            return f"{words[0].text} {value} is not read by the command rules"
        consumed = _short_options(value, flags, valued)
        if consumed is None:
            return f"{words[0].text} {value} is not read by the command rules"
        index += consumed
    return index


def _short_options(value: str, flags: str, valued: str) -> int | None:
    """How many words ``-abc`` takes (1, or 2 when its last letter wants the next word); ``None``
    for a letter that is not allowed."""
    for position, letter in enumerate(value[1:], start=1):
        if letter in valued:
            return 1 if position < len(value) - 1 else 2
        if letter not in flags:
            return None
    return 1


def _env(command: SimpleCommand) -> list[SimpleCommand] | Unreadable | None:
    words = command.words
    index = _options(words, "i0", "u", ("--ignore-environment", "--null", "--unset="))
    if isinstance(index, str):
        return Unreadable(index)
    assignments: list[Word] = []
    while (
        index < len(words)
        and words[index].value is not None
        and re.match(r"[A-Za-z_]\w*=", words[index].text)
    ):
        assignments.append(words[index])
        index += 1
    if index >= len(words):
        return None  # env alone prints the environment: judged as itself
    return [_inner(command, index, tuple(assignments))]


def _simple_wrapper(command: SimpleCommand, name: str) -> list[SimpleCommand] | Unreadable | None:
    """``command``, ``exec``, ``nice``, ``nohup``, ``stdbuf``, ``time`` and ``timeout``."""
    words = command.words
    if name == "command" and len(words) > 1 and words[1].value in ("-v", "-V"):
        return None  # a lookup, not a run
    options = {
        "command": ("p", "", ()),
        "exec": ("", "", ()),
        "nice": ("", "n", ("--adjustment=",)),
        "nohup": ("", "", ()),
        "stdbuf": ("", "ioe", ("--input=", "--output=", "--error=")),
        "time": ("p", "", ()),
        "timeout": (
            "v",
            "sk",
            ("--foreground", "--preserve-status", "--verbose", "--signal=", "--kill-after="),
        ),
    }[name]
    if name == "nice" and len(words) > 1 and re.fullmatch(r"-\d+", words[1].value or ""):
        index: int | str = 2
    else:
        index = _options(words, *options)
    if isinstance(index, str):
        return Unreadable(index)
    if name == "timeout":
        index += 1  # the duration
    if index >= len(words):
        return None
    return [_inner(command, index)]


def _xargs(command: SimpleCommand) -> list[SimpleCommand] | Unreadable:
    words = command.words
    long: tuple[str, ...] = (
        "--null",
        "--no-run-if-empty",
        "--verbose",
        "--exit",
        "--max-args=",
        "--max-lines=",
    )
    long += ("--max-procs=", "--delimiter=", "--replace=", "--max-chars=")
    index = _options(words, "0rtx", "nLPdIs", long)
    if isinstance(index, str):
        return Unreadable(index)
    if index >= len(words):
        return [
            SimpleCommand(command.assignments, (Word("echo", "echo"), _FROM_INPUT), command.redirects, "echo")
        ]
    inner = _inner(command, index)
    return [replace(inner, words=(*inner.words, _FROM_INPUT))]


def _shell_script(words: tuple[Word, ...]) -> str | Unreadable | None:
    """The script of ``sh [OPTIONS] -c SCRIPT [NAME [ARGS]]`` (options before the script, as the
    shells read them); ``None`` without ``-c`` (a script file or stdin: not read through)."""
    index, has_script = 1, False
    while index < len(words):
        value = words[index].value
        if value is None or not value.startswith("-") or value == "-":
            break
        if value == "--":
            index += 1
            break
        if value in ("--norc", "--noprofile") or _SHELL_FLAGS.fullmatch(value):
            has_script = has_script or "c" in value
            index += 1
        elif value == "-o" and index + 1 < len(words) and words[index + 1].value in _SET_OPTIONS:
            index += 2
        else:
            return Unreadable(f"{words[0].text} {value} is not read by the command rules")
    if not has_script:
        return None
    if index >= len(words) or words[index].value is None:
        return Unreadable(f"the script of {words[0].text} -c is only known when the command runs")
    return words[index].value


def _script(command: SimpleCommand, name: str) -> list[SimpleCommand] | Unreadable | None:
    """``sh -c SCRIPT`` and ``eval WORDS``: the script's own simple commands."""
    words = command.words
    if name == "eval":
        values = _values(words[1:])
        if values is None:
            return Unreadable("the words of eval are only known when the command runs")
        script: str | Unreadable | None = " ".join(values)
    else:
        script = _shell_script(words)
    if not isinstance(script, str):
        return script
    try:
        return parse(script)
    except ShellSyntaxError as error:
        return Unreadable(f"inside {words[0].text}: {error}")


def inner_commands(command: SimpleCommand) -> list[SimpleCommand] | Unreadable | None:
    """The commands a wrapper runs (module doc); ``None`` when ``command`` is not a wrapper (or
    runs nothing, like ``env`` alone or ``command -v``)."""
    name = _wrapper_name(command)
    if name is None:
        return None
    if name == "env":
        return _env(command)
    if name == "xargs":
        return _xargs(command)
    if name in SHELLS or name == "eval":
        return _script(command, name)
    return _simple_wrapper(command, name)


def exec_commands(command: SimpleCommand) -> list[SimpleCommand]:
    """The commands of ``find``'s ``-exec``/``-execdir``/``-ok``/``-okdir ... ;`` (or ``+``),
    with ``{}`` as an unknown word; ``[]`` for any other command."""
    words = command.words
    if not words or words[0].value is None or not is_program(words[0].value, "find"):
        return []
    found: list[SimpleCommand] = []
    index = 1
    while index < len(words):
        if words[index].value in ("-exec", "-execdir", "-ok", "-okdir"):
            end = index + 1
            while end < len(words) and words[end].value not in (";", "+"):
                end += 1
            inner = tuple(
                _FOUND_FILE if w.value is not None and "{}" in w.value else w for w in words[index + 1 : end]
            )
            if inner:
                found.append(SimpleCommand((), inner, (), " ".join(w.text for w in inner)))
            index = end
        index += 1
    return found
