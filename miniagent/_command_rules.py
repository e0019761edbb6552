"""Command rules: which ``run_command`` lines run, read as the shell will read them.

``CommandRules(allow, deny, workspace=...)`` judges a command line (``judge(line) -> Verdict``):
it is ``allowed`` only when every simple command in it (``shellwords.parse``: the commands joined
by ``;`` ``&&`` ``||`` ``|`` ``&`` and newlines, those inside ``$(...)`` and backticks, and those
a wrapper runs: ``env``, ``timeout``, ``xargs``, ``sh -c``... -- ``_command_wrappers``) is
admitted by an allow rule and none matches a deny rule. A line it cannot read is ``unreadable``.

Allow rules (strings) are words read like a command (``"git status"``, ``"git diff *"``,
``"pytest *"``):

- each word matches one word of the command exactly (after quote removal); the program word
  also matches a path to the same file (``/usr/bin/git``), never another file (``./git``);
- a ``*`` as the last word matches any further words (none included); a ``*`` inside a word is a
  glob on that word (``"--stat=*"``);
- a ``*`` never matches a word only known when the command runs (``$HOME``, ``$(...)``, ``~``),
  nor an option of ``GUARDED_OPTIONS`` (options that run another program or write a file the
  word names: ``git -c``, ``--output``, ``--ext-diff``, ``find -exec``, ``sort -o``...): a rule
  admits those only by spelling them out;
- variable assignments (``X=1 cmd``) and redirections (``> file``) match no rule unless the rule
  has the same ones; ``2>&1``, ``>&2``, ``N>&-`` and ``/dev/null`` redirections open no file and
  always pass;
- pathname patterns (``*.py``) are expanded in the workspace first, as the shell will (when a
  workspace is given and the line does not ``cd``), and each file name is then one word;
- rule objects with an ``admits(command, context)`` method (the read-only set,
  ``_readonly_commands``) decide for themselves, with confined paths.

Deny rules are the same words, read more broadly (a deny errs on refusing): the rule's words
must appear in the command in order, other words may come between them, and the program may be
any word of the command (``sudo rm -rf x`` and ``git -C . push`` meet ``rm *`` and
``git push *``); the commands inside wrappers and ``find -exec`` are checked too; when deny
rules exist, a command whose program is only known when it runs, or a wrapper that cannot be
read, is refused.

Limits: the rules decide which programs run with which words, not what a program then does;
its own configuration can make an allowed command run another program (a repository's
``.git/config`` ``core.fsmonitor`` or ``core.pager`` makes ``git status`` run one). Deny rules
are a guard rail, not a boundary: an interpreter the line runs (``python -c``, ``perl -e``,
``awk 'BEGIN{system(...)}'``, ``busybox sh -c``) can run a denied program without naming it in a
way the rules can see; a boundary is an allow list. The kernel sandbox (``process.sandbox``)
bounds what any of them can do.
"""

from __future__ import annotations

import fnmatch
import glob
import os
import re
import shutil
from dataclasses import dataclass, replace
from typing import Protocol

from ._command_wrappers import Unreadable, exec_commands, inner_commands, is_program
from ._readonly_commands import Context, PathRules, harmless
from .shellwords import MAX_DEPTH, Redirect, ShellSyntaxError, SimpleCommand, Word, parse

__all__ = ["GUARDED_OPTIONS", "CommandRule", "CommandRules", "Verdict", "WordRule", "DenyRule"]

GUARDED_OPTIONS: dict[str, tuple[str, ...]] = {
    "git": (
        "-c",
        "-c?*",
        "--config-env*",
        "--exec-path*",
        "--output*",
        "--ext-diff",
        "--textconv",
        "-O*",
        "--open-files-in-pager*",
        "--upload-pack*",
        "--receive-pack*",
        "--git-dir*",
        "--work-tree*",
        "-C",
        "--no-index",
        "--namespace*",
    ),
    "find": ("-exec*", "-ok*", "-delete", "-fprint*", "-fls"),
    "pytest": (
        "-p",
        "-p?*",
        "-o",
        "-o?*",
        "--override-ini*",
        "--basetemp*",
        "--pastebin*",
        "--junit-xml*",
        "--junitxml*",
        "--rootdir*",
        "-c",
        "-c?*",
        "--confcutdir*",
        "--log-file*",
        "--debug*",
        "--report-log*",
        "--result-log*",
        "--html*",
        "--cov-report*",
    ),
    "sort": ("-o*", "--output*", "--compress-program*", "-T*", "--temporary-directory*", "--files0-from*"),
    "tar": (
        "--to-command*",
        "--checkpoint-action*",
        "-I*",
        "--use-compress-program*",
        "--rsh-command*",
        "--info-script*",
        "--new-volume-script*",
        "-F*",
    ),
    "rsync": ("-e*", "--rsh*", "--rsync-path*"),
    "sed": ("-i*", "--in-place*"),
    "rg": ("--pre*",),
    "zip": ("-T", "-TT*", "--unzip-command*"),
    "ssh": ("-o*", "-F*"),
    "wc": ("--files0-from*",),
    "du": ("--files0-from*",),
}
"""Options, by program, that a ``*`` of an allow rule never matches (``fnmatch`` patterns)."""

_CHANGES_FOLDER = frozenset(("cd", "pushd", "popd", "chdir"))
MAX_LINE_CHARS = 100_000
"""The longest command line the rules read (a longer one is unreadable)."""
_LISTED_CHARS = 300


class CommandRule(Protocol):
    """An allow rule: ``text`` (how refusals name it) and ``admits``."""

    @property
    def text(self) -> str:
        """The rule as shown to the model."""
        ...

    def admits(self, command: SimpleCommand, context: Context) -> bool | str:
        """``True`` (admitted), ``False`` (not this rule's command) or why it is refused."""
        ...


@dataclass(frozen=True)
class Verdict:
    """What the rules decided about a line: ``kind`` is ``"allowed"``, ``"denied"`` (a deny
    rule matched), ``"unreadable"`` (the line cannot be read with certainty) or ``"unmatched"``
    (a simple command no allow rule admits); ``reason`` is for the model."""

    kind: str
    reason: str = ""

    @property
    def allowed(self) -> bool:
        """Whether the line may run."""
        return self.kind == "allowed"


_ALLOWED = Verdict("allowed")


# --- one word of a rule ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Pattern:
    """A rule word: a ``literal`` value, a glob ``regex`` (its ``*``), or the ``raw`` text of a word
    only known when the command runs (matched as written)."""

    literal: str | None = None
    regex: re.Pattern[str] | None = None
    raw: str | None = None

    @staticmethod
    def of(word: Word) -> _Pattern:
        if word.value is not None:
            return _Pattern(literal=word.value)
        if word.pattern is not None:
            return _Pattern(regex=re.compile(_glob_regex(word.pattern), re.S))
        return _Pattern(raw=word.text)

    def matches(self, word: Word) -> bool:
        if self.raw is not None:
            return word.value is None and word.text == self.raw
        if word.value is None:
            return False
        if self.literal is not None:
            return word.value == self.literal
        return self.regex is not None and self.regex.fullmatch(word.value) is not None

    @property
    def is_glob(self) -> bool:
        return self.regex is not None


def _glob_regex(pattern: str) -> str:
    """The regular expression of a rule word's pattern: ``*`` is any text; ``[c]`` (a quoted
    character, ``shellwords``) and everything else are literal."""
    out, i = [], 0
    while i < len(pattern):
        if pattern[i] == "[" and i + 2 < len(pattern) and pattern[i + 2] == "]" and pattern[i + 1] in "*?[":
            out.append(re.escape(pattern[i + 1]))
            i += 3
        elif pattern[i] == "*":
            out.append(".*")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return "".join(out)


def _guarded(program: str, value: str) -> bool:
    name = os.path.basename(program)
    return any(fnmatch.fnmatchcase(value, option) for option in GUARDED_OPTIONS.get(name, ()))


def _default_fd(op: str) -> int:
    return 0 if op in ("<", "<&", "<>") else 1


def _parse_rule(rule: str, kind: str) -> SimpleCommand:
    if not isinstance(rule, str):
        raise TypeError(f"{kind} rules are strings, not {type(rule).__name__}")
    try:
        commands = parse(rule)
    except ShellSyntaxError as error:
        raise ValueError(f"{kind} rule {rule!r}: {error}") from None
    if len(commands) != 1 or not commands[0].words or commands[0].words[0].value is None:
        raise ValueError(f"{kind} rule {rule!r}: a rule is one simple command starting with a program name")
    return commands[0]


# --- allow rules ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class WordRule:
    """An allow rule of words (module doc), compiled from its text."""

    text: str
    program: str
    words: tuple[_Pattern, ...]
    rest: bool
    assignments: frozenset[str]
    redirects: tuple[tuple[int, str, _Pattern], ...]

    @staticmethod
    def compile(rule: str) -> WordRule:
        """Compile ``rule``.

        Raises:
            ValueError: not one simple command starting with a program name.
        """
        command = _parse_rule(rule, "allow")
        words = list(command.words)
        rest = len(words) > 1 and words[-1].text == "*"
        if rest:
            words.pop()
        redirects = tuple(
            (r.fd if r.fd is not None else _default_fd(r.op), r.op, _Pattern.of(r.target))
            for r in command.redirects
        )
        return WordRule(
            rule,
            str(words[0].value),
            tuple(_Pattern.of(w) for w in words[1:]),
            rest,
            frozenset(a.text for a in command.assignments),
            redirects,
        )

    def admits(self, command: SimpleCommand, context: Context) -> bool | str:
        """Whether ``command`` matches this rule (module doc); never a reason."""
        words = command.words
        if not words or words[0].value is None or not is_program(words[0].value, self.program):
            return False
        given = words[1:]
        if len(given) < len(self.words) or (len(given) > len(self.words) and not self.rest):
            return False
        for pattern, word in zip(self.words, given, strict=False):
            if not pattern.matches(word) or (pattern.is_glob and _guarded(self.program, str(word.value))):
                return False
        for word in given[len(self.words) :]:
            if word.value is None or _guarded(self.program, word.value):
                return False
        if any(a.text not in self.assignments for a in command.assignments):
            return False
        return all(harmless(r) or self._redirect_allowed(r) for r in command.redirects)

    def _redirect_allowed(self, redirect: Redirect) -> bool:
        fd = redirect.fd if redirect.fd is not None else _default_fd(redirect.op)
        return any(
            fd == f and redirect.op == op and target.matches(redirect.target)
            for f, op, target in self.redirects
        )


@dataclass(frozen=True)
class DenyRule:
    """A deny rule of words, read broadly (module doc)."""

    text: str
    program: str
    words: tuple[_Pattern, ...]
    rest: bool

    @staticmethod
    def compile(rule: str) -> DenyRule:
        """Compile ``rule``.

        Raises:
            ValueError: not one simple command of words, or it has assignments or redirections.
        """
        command = _parse_rule(rule, "deny")
        if command.assignments or command.redirects:
            raise ValueError(
                f"deny rule {rule!r}: a deny rule is a command's words, without = or redirections"
            )
        words = list(command.words)
        rest = len(words) > 1 and words[-1].text == "*"
        if rest:
            words.pop()
        return DenyRule(rule, str(words[0].value), tuple(_Pattern.of(w) for w in words[1:]), rest)

    def matches(self, command: SimpleCommand) -> bool:
        """Whether ``command`` (or a tail of it: ``sudo rm ...``) meets this rule."""
        words = command.words
        for start, word in enumerate(words):
            known = word.value
            if known is None and start > 0:
                continue
            if known is not None and not _same_program(known, self.program):
                continue
            if self._follows(words[start + 1 :]):
                return True
        return False

    def _follows(self, words: tuple[Word, ...]) -> bool:
        """The rule's words in order among ``words`` (the last one last, unless ``rest``)."""
        patterns = self.words
        if not patterns:
            return self.rest or not words
        if not self.rest:
            if not words or not _deny_word(patterns[-1], words[-1]):
                return False
            patterns, words = patterns[:-1], words[:-1]
        position = 0
        for pattern in patterns:
            while position < len(words) and not _deny_word(pattern, words[position]):
                position += 1
            if position >= len(words):
                return False
            position += 1
        return True


def _deny_word(pattern: _Pattern, word: Word) -> bool:
    return word.value is None or pattern.matches(word)


def _same_program(value: str, program: str) -> bool:
    return os.path.basename(value) == os.path.basename(program) or is_program(value, program)


# --- judging a line -------------------------------------------------------------------------------


class CommandRules:
    """Allow and deny rules for command lines (module doc).

    Args:
        allow: allow rules: strings (``WordRule``) or rule objects (``admits``), e.g. the
            read-only set.
        deny: deny rules (strings, ``DenyRule``).
        workspace: the commands' folder as a ``PathRules`` (``toolbox.paths.Workspace``):
            pathname patterns are expanded in it, programs found through ``PATH`` inside it are
            refused, and path-checking rules need it.

    Raises:
        ValueError: a rule is not one simple command starting with a program name, a deny rule
            has assignments or redirections, or a path-checking rule has no workspace.
        TypeError: a rule is neither a string nor a rule object.
    """

    def __init__(
        self,
        allow: tuple[str | CommandRule, ...] | list[str | CommandRule],
        deny: tuple[str, ...] | list[str] = (),
        *,
        workspace: PathRules | None = None,
    ) -> None:
        self.allow: tuple[CommandRule, ...] = tuple(
            WordRule.compile(rule) if isinstance(rule, str) else _checked_rule(rule, workspace)
            for rule in allow
        )
        self.deny = tuple(DenyRule.compile(rule) for rule in deny)
        self.workspace = workspace

    def judge(self, line: str) -> Verdict:
        """The verdict on the command line ``line`` (module doc)."""
        if len(line) > MAX_LINE_CHARS:
            return Verdict(
                "unreadable", f"refused: the command has {len(line)} characters, more than the rules read"
            )
        try:
            commands = parse(line)
        except ShellSyntaxError as error:
            return Verdict("unreadable", f"refused: {error}")
        if not commands:
            return Verdict("unreadable", "refused: the command is empty")
        context = Context(self.workspace, not any(_changes_folder(c) for c in _layers(commands, 0)))
        verdicts = [self._judge(command, context, 0) for command in commands]
        for kind in ("denied", "unreadable", "unmatched"):  # a deny anywhere in the line comes first
            found = next((v for v in verdicts if v.kind == kind), None)
            if found is not None:
                return found
        return _ALLOWED

    def _judge(self, command: SimpleCommand, context: Context, depth: int) -> Verdict:
        if depth > MAX_DEPTH:
            return Verdict("unreadable", f"refused: more than {MAX_DEPTH} commands wrapped in one another")
        command = self._expanded(command, context)
        if any(rule.matches(command) for rule in self.deny):
            return Verdict("denied", f"refused: {command.text!r} is denied by the command rules")
        inner = inner_commands(command)
        verdicts: list[Verdict] = []
        for nested in [*(inner if isinstance(inner, list) else []), *exec_commands(command)]:
            verdict = self._judge(nested, context, depth + 1)
            if verdict.kind == "denied":
                return verdict
            verdicts.append(verdict)
        if isinstance(inner, Unreadable) and self.deny:
            return Verdict("unreadable", f"refused: {inner.reason}")
        admitted = self._admits(command, context)
        if admitted is True:
            return _ALLOWED
        if isinstance(inner, list):
            wrapped = verdicts[: len(inner)]
            return next((v for v in wrapped if not v.allowed), _ALLOWED)
        if isinstance(inner, Unreadable):
            return Verdict("unmatched", f"refused: {inner.reason}")
        return Verdict("unmatched", str(admitted))

    def _admits(self, command: SimpleCommand, context: Context) -> bool | str:
        if not command.words:
            return (
                f"refused: {command.text!r} runs no program (only assignments or redirections), "
                "which no command rule allows"
            )
        reasons: list[str] = []
        for rule in self.allow:
            verdict = rule.admits(command, context)
            if verdict is True:
                return self._program_problem(command) or True
            if isinstance(verdict, str):
                reasons.append(verdict)
        return reasons[0] if reasons else self._unmatched(command)

    def _program_problem(self, command: SimpleCommand) -> str | None:
        """A program named without a path that ``PATH`` finds inside the workspace (the model
        may have written it) is refused."""
        name = command.words[0].value
        if self.workspace is None or name is None or "/" in name:
            return None
        found = shutil.which(name)
        if found is not None and os.path.realpath(found).startswith(
            str(self.workspace.root).rstrip("/") + "/"
        ):
            return f"refused: {name} is found through PATH inside the workspace ({found})"
        return None

    def _unmatched(self, command: SimpleCommand) -> str:
        listed = ", ".join(rule.text for rule in self.allow) or "none"
        if len(listed) > _LISTED_CHARS:
            listed = listed[: _LISTED_CHARS - 1] + "…"
        return f"refused: {command.text!r} is not among the allowed commands ({listed}){_obstacle(command)}"

    def _expanded(self, command: SimpleCommand, context: Context) -> SimpleCommand:
        """``command`` with its pathname patterns expanded in the workspace (as the shell will:
        sorted names, the pattern itself when nothing matches); unchanged without a workspace
        or after a ``cd``."""
        if self.workspace is None or not context.cwd_known or not any(w.pattern for w in command.words):
            return command
        root = str(self.workspace.root)
        words: list[Word] = []
        for word in command.words:
            if word.pattern is None:
                words.append(word)
                continue
            found = sorted(glob.glob(word.pattern, root_dir=root))
            if not found:
                found = [re.sub(r"\[([*?\[])\]", r"\1", word.pattern)]
            words.extend(Word(name, name) for name in found)
        return replace(command, words=tuple(words))


def _checked_rule(rule: CommandRule, workspace: PathRules | None) -> CommandRule:
    if not callable(getattr(rule, "admits", None)):
        raise TypeError(f"an allow rule is a string or has admits(), not {type(rule).__name__}")
    if workspace is None:
        raise ValueError(f"the rule {rule.text} checks paths: give the workspace")
    return rule


def _layers(commands: list[SimpleCommand], depth: int) -> list[SimpleCommand]:
    """``commands`` and every command their wrappers run, however deep (up to ``MAX_DEPTH``)."""
    found = list(commands)
    if depth < MAX_DEPTH:
        for command in commands:
            inner = inner_commands(command)
            if isinstance(inner, list):
                found.extend(_layers(inner, depth + 1))
    return found


def _changes_folder(command: SimpleCommand) -> bool:
    return bool(command.words) and command.words[0].value in _CHANGES_FOLDER


def _obstacle(command: SimpleCommand) -> str:
    """What in ``command`` no rule can admit unless it says so, for the refusal's end."""
    unknown = next((w for w in command.words if w.value is None), None)
    if unknown is not None:
        return f"; {unknown.text} is only known when the command runs"
    if command.assignments:
        return f"; it sets {command.assignments[0].text}"
    redirect = next((r for r in command.redirects if not harmless(r)), None)
    if redirect is not None:
        return f"; it redirects {redirect.op}{redirect.target.text}"
    return ""
