"""The default read-only command set: programs that only read, with only their safe options.

``READ_ONLY_COMMANDS`` is what ``--approve read-only`` lets ``run_command`` run (``ls``, ``cat``,
``wc``, ``head``, ``tail``, ``grep``, ``find``, ``sort``, ``uniq``, ``cut``, ``tr``, ``diff``,
``file``, ``stat``, ``du``, ``pwd``, ``echo``, ...). Each entry names the options it allows;
any other option is refused, so a command of the set can neither write (``sort -o``, ``uniq IN
OUT``, ``find -delete``, ``-fprint``), nor run a program (``find -exec``, ``sort
--compress-program``), nor follow symbolic links out (``grep -R``, ``find -L``), nor read a list
of names from a file (``wc --files0-from``).

Paths: every path operand and path-valued option (``grep -f FILE``, ``find -newer FILE``, an input
redirection ``< FILE``) must resolve inside the workspace, checked by the workspace's own
``resolve`` -- the confinement of ``read_file`` (``toolbox.paths.Workspace``): ``..`` that climbs
out, absolute paths elsewhere and symbolic links that lead out are refused with its reason.
A line that changes folder (``cd``, ``pushd``, ``popd``) is refused by this set: its relative
paths would no longer be the workspace's. Words only known when the command runs (``$HOME``,
``$(...)``, ``~``) are refused; pathname patterns (``*.py``) are expanded by the caller
(``command_rules``) and each file they name is checked.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ._command_wrappers import is_program
from .shellwords import Redirect, SimpleCommand, Word

__all__ = ["PathRules", "Context", "ReadOnlyCommand", "FindCommand", "READ_ONLY_COMMANDS", "harmless"]


class PathRules(Protocol):
    """What the read-only set needs of a workspace (``toolbox.paths.Workspace`` is one)."""

    root: Path

    def resolve(self, path: str) -> Path:
        """The resolved path inside the workspace; ``ValueError`` (with a reason for the model)
        when it resolves outside."""
        ...


@dataclass(frozen=True)
class Context:
    """What a rule may know about the line it judges: the ``workspace`` (or ``None``) and
    whether the line keeps the workspace as its folder (no ``cd``)."""

    workspace: PathRules | None
    cwd_known: bool

    def path_problem(self, path: str) -> str | None:
        """Why ``path`` may not be read (outside the workspace), or ``None``."""
        if self.workspace is None:
            return "there is no workspace to check paths against"
        try:
            self.workspace.resolve(path)
        except ValueError as error:
            return str(error)
        return None


def harmless(redirect: Redirect) -> bool:
    """Whether a redirection opens no file but ``/dev/null``: ``2>&1``, ``>&2``, ``3>&-``,
    ``>/dev/null``, ``</dev/null``."""
    target = redirect.target.value
    if target is None:
        return False
    if redirect.op in (">&", "<&"):
        return target == "-" or target.isdigit()
    return target == "/dev/null"


def _unknown(word: Word) -> str:
    return f"refused: {word.text} is only known when the command runs ({word.expands or 'a pattern'})"


@dataclass(frozen=True)
class ReadOnlyCommand:
    """One program of the read-only set and the options it may be given.

    Args:
        program: its name (a path to the same file counts: ``is_program``).
        flags: single-letter options without a value (they may be grouped: ``-la``).
        valued: single-letter options that take a value (attached or the next word).
        path_valued: single-letter options whose value is a path (confined).
        long: long options; one ending in ``=`` takes a value (``--lines=5``, ``--lines 5``).
        path_long: long options (with ``=``) whose value is a path.
        operands: ``"paths"`` (confined), ``"text"``, ``"none"``, or ``"pattern_then_paths"``
            (the first operand is a pattern unless ``pattern_options`` gave one: ``grep``).
        pattern_options: options that give the pattern (``grep -e``, ``-f``).
        max_operands: most operands (``uniq``: its second would be an output file).
        numeric: ``-NUM`` is allowed (``head -5``).
    """

    program: str
    flags: str = ""
    valued: str = ""
    path_valued: str = ""
    long: tuple[str, ...] = ()
    path_long: tuple[str, ...] = ()
    operands: str = "paths"
    pattern_options: str = ""
    max_operands: int | None = None
    numeric: bool = False

    @property
    def text(self) -> str:
        """How refusals name this rule: the program's name."""
        return self.program

    def admits(self, command: SimpleCommand, context: Context) -> bool | str:
        """``True`` when ``command`` is this program with allowed options and confined paths;
        ``False`` when it is another program; else the reason it is refused."""
        words = command.words
        if not words or words[0].value is None or not is_program(words[0].value, self.program):
            return False
        problem = _frame_problem(command, context, self.program)
        if problem:
            return problem
        operands: list[str] = []
        pattern_given = False
        index, only_operands = 1, False
        while index < len(words):
            word = words[index]
            if word.value is None:
                return _unknown(word)
            value = word.value
            if only_operands or not value.startswith("-") or value == "-":
                operands.append(value)
            elif value == "--":
                only_operands = True
            else:
                step = self._option(words, index, context)
                if isinstance(step, str):
                    return step
                pattern_given = pattern_given or _gives_pattern(value, self.pattern_options)
                index += step - 1
            index += 1
        return self._operands_problem(operands, pattern_given, context) or True

    def _option(self, words: tuple[Word, ...], index: int, context: Context) -> int | str:
        """Check the option at ``index``; how many words it takes, or the reason it is refused."""
        value = str(words[index].value)
        if value.startswith("--"):
            name, equals, attached = value.partition("=")
            if value in self.long and not equals:
                return 1
            if name + "=" not in self.long:
                return f"refused: {self.program} {value} is not among the options allowed for {self.program}"
            taken = 1 if equals else 2
            given = attached if equals else _next_value(words, index)
            if given is None:
                return f"refused: {self.program} {name} needs a value known before the command runs"
            if name + "=" in self.path_long:
                return context.path_problem(given) or taken
            return taken
        if self.numeric and value[1:].isdigit():
            return 1
        for position, letter in enumerate(value[1:], start=2):
            if letter in self.flags:
                continue
            if letter in self.valued or letter in self.path_valued:
                given = value[position:] or _next_value(words, index)
                if given is None:
                    return f"refused: {self.program} -{letter} needs a value known before the command runs"
                if letter in self.path_valued and (problem := context.path_problem(given)):
                    return problem
                return 1 if value[position:] else 2
            return f"refused: {self.program} -{letter} is not among the options allowed for {self.program}"
        return 1

    def _operands_problem(self, operands: list[str], pattern_given: bool, context: Context) -> str | None:
        if self.operands == "pattern_then_paths" and not pattern_given:
            operands = operands[1:]
        if self.max_operands is not None and len(operands) > self.max_operands:
            limit = self.max_operands
            return f"refused: {self.program} takes at most {limit} file here (another would be written)"
        if self.operands == "none" and operands:
            return f"refused: {self.program} takes no operands here"
        if self.operands in ("paths", "pattern_then_paths"):
            for operand in operands:
                if operand != "-" and (problem := context.path_problem(operand)):
                    return problem
        return None


def _gives_pattern(option: str, letters: str) -> bool:
    """Whether ``option`` gives ``grep`` its pattern (``-e``, ``-f``, ``--regexp=``, ``--file=``)."""
    if not letters:
        return False
    if option.startswith("--"):
        return option.startswith(("--regexp", "--file"))
    return any(letter in letters for letter in option[1:])


def _next_value(words: tuple[Word, ...], index: int) -> str | None:
    return words[index + 1].value if index + 1 < len(words) else None


def _frame_problem(command: SimpleCommand, context: Context, program: str) -> str | None:
    """What around the words keeps ``command`` out of the read-only set: assignments, a folder
    change in the line, redirections other than harmless ones and confined input files."""
    if command.assignments:
        return f"refused: {program} with variable assignments is not a read-only command"
    if not context.cwd_known:
        return f"refused: the command changes folder (cd), so {program}'s paths would not be the workspace's"
    for redirect in command.redirects:
        if harmless(redirect):
            continue
        target = redirect.target.value
        if redirect.op == "<" and target is not None:
            problem = context.path_problem(target)
            if problem:
                return problem
            continue
        return f"refused: the redirection {redirect.op}{redirect.target.text} may write a file"
    return None


_FIND_VALUED = frozenset(
    [
        "-name",
        "-iname",
        "-path",
        "-ipath",
        "-wholename",
        "-iwholename",
        "-regex",
        "-iregex",
        "-regextype",
        "-type",
        "-xtype",
        "-size",
        "-mtime",
        "-mmin",
        "-atime",
        "-amin",
        "-ctime",
        "-cmin",
        "-perm",
        "-user",
        "-group",
        "-uid",
        "-gid",
        "-links",
        "-maxdepth",
        "-mindepth",
        "-inum",
        "-used",
        "-printf",
        "-fstype",
    ]
)
_FIND_PATH_VALUED = frozenset(("-newer", "-anewer", "-cnewer", "-samefile"))
_FIND_PLAIN = frozenset(
    [
        "-empty",
        "-true",
        "-false",
        "-readable",
        "-writable",
        "-executable",
        "-print",
        "-print0",
        "-prune",
        "-quit",
        "-depth",
        "-mount",
        "-xdev",
        "-nouser",
        "-nogroup",
        "-noleaf",
        "-ls",
        "-daystart",
        "-not",
        "-a",
        "-and",
        "-o",
        "-or",
        "!",
        "(",
        ")",
        ",",
    ]
)


@dataclass(frozen=True)
class FindCommand:
    """``find`` with its tests and ``-print``-like actions only: no ``-exec``, ``-execdir``,
    ``-ok``, ``-okdir``, ``-delete``, ``-fprint``, ``-fls``, no ``-L``/``-H``/``-follow``; its
    starting points and ``-newer FILE`` confined."""

    program: str = "find"

    @property
    def text(self) -> str:
        """How refusals name this rule: the program's name."""
        return "find"

    def admits(self, command: SimpleCommand, context: Context) -> bool | str:
        """As ``ReadOnlyCommand.admits``."""
        words = command.words
        if not words or words[0].value is None or not is_program(words[0].value, "find"):
            return False
        problem = _frame_problem(command, context, "find")
        if problem:
            return problem
        index = 1
        while index < len(words) and words[index].value == "-P":
            index += 1
        while index < len(words) and not _find_expression_starts(words[index]):
            word = words[index]
            if word.value is None:
                return _unknown(word)
            if problem := context.path_problem(word.value):
                return problem
            index += 1
        return self._expression(words, index, context) or True

    def _expression(self, words: tuple[Word, ...], index: int, context: Context) -> str | None:
        while index < len(words):
            word = words[index]
            if word.value is None:
                return _unknown(word)
            value = word.value
            if value in _FIND_PLAIN:
                index += 1
                continue
            if value in _FIND_VALUED or value in _FIND_PATH_VALUED:
                given = _next_value(words, index)
                if given is None:
                    return f"refused: find {value} needs a value known before the command runs"
                if value in _FIND_PATH_VALUED and (problem := context.path_problem(given)):
                    return problem
                index += 2
                continue
            return f"refused: find {value} is not allowed here (find may only test and print)"
        return None


def _find_expression_starts(word: Word) -> bool:
    value = word.value
    return value is not None and (value.startswith("-") or value in ("(", ")", "!", ","))


_GREP_LONG = [
    "--ignore-case",
    "--invert-match",
    "--line-number",
    "--count",
    "--files-with-matches",
    "--files-without-match",
    "--recursive",
    "--word-regexp",
    "--line-regexp",
    "--extended-regexp",
    "--fixed-strings",
    "--basic-regexp",
    "--with-filename",
    "--no-filename",
    "--only-matching",
    "--no-messages",
    "--quiet",
    "--silent",
    "--text",
    "--null",
    "--null-data",
    "--color",
    "--colour",
    "--color=",
    "--colour=",
    "--include=",
    "--exclude=",
    "--exclude-dir=",
    "--max-count=",
    "--context=",
    "--after-context=",
    "--before-context=",
    "--regexp=",
    "--file=",
    "--binary-files=",
    "--ignore-binary",
]

READ_ONLY_COMMANDS: tuple[ReadOnlyCommand | FindCommand, ...] = (
    ReadOnlyCommand(
        "ls",
        flags="aAlhR1dFtrSsinGgopCxXUuc",
        long=(
            "--all",
            "--almost-all",
            "--human-readable",
            "--recursive",
            "--directory",
            "--classify",
            "--reverse",
            "--size",
            "--inode",
            "--color",
            "--color=",
            "--group-directories-first",
            "--numeric-uid-gid",
        ),
    ),
    ReadOnlyCommand(
        "cat",
        flags="nbsAETuve",
        long=(
            "--number",
            "--number-nonblank",
            "--squeeze-blank",
            "--show-all",
            "--show-ends",
            "--show-tabs",
            "--show-nonprinting",
        ),
    ),
    ReadOnlyCommand(
        "wc", flags="lwcmL", long=("--lines", "--words", "--bytes", "--chars", "--max-line-length")
    ),
    ReadOnlyCommand(
        "head",
        flags="qvz",
        valued="nc",
        long=("--lines=", "--bytes=", "--quiet", "--silent", "--verbose"),
        numeric=True,
    ),
    ReadOnlyCommand(
        "tail",
        flags="qvz",
        valued="nc",
        long=("--lines=", "--bytes=", "--quiet", "--silent", "--verbose"),
        numeric=True,
    ),
    ReadOnlyCommand(
        "grep",
        flags="ivnclLrwxEFGHhosqIabzUZ",
        valued="eABCm",
        path_valued="f",
        long=tuple(_GREP_LONG),
        path_long=("--file=",),
        operands="pattern_then_paths",
        pattern_options="ef",
    ),
    FindCommand(),
    ReadOnlyCommand(
        "sort",
        flags="rnufbdhgMVscz",
        valued="kt",
        long=(
            "--reverse",
            "--numeric-sort",
            "--unique",
            "--ignore-case",
            "--human-numeric-sort",
            "--version-sort",
            "--key=",
            "--field-separator=",
            "--stable",
            "--check",
        ),
    ),
    ReadOnlyCommand(
        "uniq",
        flags="cdiuzD",
        valued="fsw",
        long=("--count", "--repeated", "--unique", "--ignore-case"),
        max_operands=1,
    ),
    ReadOnlyCommand(
        "cut",
        flags="sz",
        valued="bcdf",
        long=("--complement", "--only-delimited", "--delimiter=", "--fields=", "--characters=", "--bytes="),
    ),
    ReadOnlyCommand("tr", flags="cdst", operands="text"),
    ReadOnlyCommand(
        "diff",
        flags="uqNwbiBatyps",  # not -r: it would follow a symbolic link in a folder out
        valued="U",
        long=(
            "--unified",
            "--unified=",
            "--brief",
            "--new-file",
            "--ignore-all-space",
            "--ignore-space-change",
            "--ignore-case",
            "--side-by-side",
            "--color",
            "--color=",
            "--text",
            "--stat",
        ),
    ),
    ReadOnlyCommand("file", flags="bih", long=("--mime-type", "--mime", "--brief", "--no-dereference")),
    ReadOnlyCommand("stat", flags="t", valued="c", long=("--format=", "--terse")),
    ReadOnlyCommand(
        "du",
        flags="shacbkmx",
        valued="d",
        long=("--max-depth=", "--summarize", "--human-readable", "--all", "--total", "--apparent-size"),
    ),
    ReadOnlyCommand("md5sum", flags="bt", long=("--tag",)),
    ReadOnlyCommand("sha256sum", flags="bt", long=("--tag",)),
    ReadOnlyCommand("pwd", flags="LP", operands="none"),
    ReadOnlyCommand("echo", flags="neE", operands="text"),
    ReadOnlyCommand("basename", flags="az", valued="s", operands="text"),
    ReadOnlyCommand("dirname", flags="z", operands="text"),
    ReadOnlyCommand("which", flags="a", operands="text"),
    ReadOnlyCommand("true", operands="text"),
    ReadOnlyCommand("false", operands="text"),
)
"""The default read-only command set (module doc)."""
