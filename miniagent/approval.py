"""Approval policies: callables ``ToolCall -> Approval`` usable as ``before_tool_call``.

- ``approve_all``: approves every call.
- ``read_only(tools)``: approves tools marked ``read_only``, refuses the others with a reason the
  model can act on. Names it does not know are approved (the loop then records
  ``unknown tool: NAME``).
- ``ask_on_terminal(tools=None, input=None, output=None)``: asks a person (``TerminalApproval``).
- ``allow_tools(names, otherwise)``: approves the named tools, asks ``otherwise`` for the rest.
- ``command_rules(allow, deny=(), otherwise=...)``: approves ``run_command`` only when every
  simple command of its line is admitted by an allow rule and none meets a deny rule, read as the
  shell will read the line (``shellwords``, ``_command_rules``); ``READ_ONLY_COMMANDS`` is the
  default read-only set (``ls``, ``cat``, ``wc``, ``grep``... with their safe options and paths
  confined to the workspace).
- ``defer_changes(tools)``: approves read-only tools and defers the others (``Approval.defer``):
  the run stops ``deferred`` before the first call that needs a person's decision.
- ``policy_for(mode, tools, why)``: the policy of an approval mode by name (``APPROVAL_MODES``:
  the CLI's ``--approve`` values), as an ``ApprovalPolicy`` that also tells whether a call will
  wait for a person (``will_ask``); with command rules (``allow_commands``, ``deny_commands``,
  the mode's default set of ``_COMMAND_DEFAULTS``) in front. Adding a mode is one row of
  ``_POLICIES``.
"""

from __future__ import annotations

import json
import shutil
import sys
import textwrap
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol, TextIO

from ._command_rules import CommandRule, CommandRules, Verdict
from ._readonly_commands import READ_ONLY_COMMANDS, PathRules
from .messages import ToolCall
from .tools import Approval, BeforeToolCall, Tool

__all__ = [
    "approve_all",
    "read_only",
    "ask_on_terminal",
    "TerminalApproval",
    "allow_tools",
    "defer_changes",
    "describe_call",
    "show_call",
    "visible",
    "ApprovalPolicy",
    "APPROVAL_MODES",
    "policy_for",
    "command_rules",
    "CommandPolicy",
    "CommandRules",
    "Verdict",
    "READ_ONLY_COMMANDS",
]


def approve_all(call: ToolCall) -> Approval:
    """Approve every call. Returns ``Approval(True)``."""
    return Approval(True)


def read_only(
    tools: Iterable[Tool],
    *,
    why: str = "this run is non-interactive",
    remedy: str = "ask the user to allow tools that change files",
) -> BeforeToolCall:
    """Return a policy that approves only tools with ``read_only`` set.

    Args:
        tools: the run's tools (their names and ``read_only`` flags are copied now).
        why: why only read-only tools run, as the refusal says it (e.g. the CLI says
            ``read-only tools were chosen`` when the user asked for it on a terminal).
        remedy: what the user can do about it, as the model should tell them (the CLI names
            its option here).

    Returns:
        A ``BeforeToolCall``. A tool that is not read-only is refused with a reason like
        ``refused: write_file may change files or run commands and this run is non-interactive
        (read-only approval). Answer with what you would change instead, or ask the user to
        allow tools that change files.``; names not among ``tools`` are approved (the loop
        records ``unknown tool: NAME``).
    """
    changing = frozenset(t.name for t in tools if not t.read_only)

    def policy(call: ToolCall) -> Approval:
        if call.name not in changing:
            return Approval(True)
        return Approval(
            False,
            f"refused: {call.name} may change files or run commands and {why} "
            f"(read-only approval). Answer with what you would change instead, or {remedy}.",
        )

    return policy


def allow_tools(names: Iterable[str], otherwise: BeforeToolCall) -> BeforeToolCall:
    """Return a policy that approves calls of the tools ``names`` and asks ``otherwise`` for others.

    Args:
        names: tool names approved without asking.
        otherwise: the policy for every other call (its exceptions propagate).
    """
    allowed = frozenset(names)

    def policy(call: ToolCall) -> Approval:
        if call.name in allowed:
            return Approval(True)
        return otherwise(call)

    return policy


def defer_changes(
    tools: Iterable[Tool], *, reason: str = "waiting for a decision: it may change files or run commands"
) -> BeforeToolCall:
    """Return a policy that approves tools with ``read_only`` set and defers every other call
    (``Approval.defer(reason)``), so an unattended run stops ``deferred`` before the first call
    that needs a decision (DESIGN.md "Unattended runs"); names not among ``tools`` are approved
    (the loop records ``unknown tool: NAME``).

    Args:
        tools: the run's tools (their names and ``read_only`` flags are copied now).
        reason: why a call waits, kept in the record's ``pending`` note.
    """
    changing = frozenset(t.name for t in tools if not t.read_only)

    def policy(call: ToolCall) -> Approval:
        return Approval.defer(reason) if call.name in changing else Approval(True)

    return policy


# --- asking a person ----------------------------------------------------------------------------

_VALUE_CHARS = 60
_LINE_CHARS = 200


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def visible(text: str) -> str:
    """``text`` with every character that is not printable -- control characters (escape
    sequences), bidirectional and other format characters such as U+202E, line and paragraph
    separators -- written as a visible escape (``\\x1b``, ``\\u202e``), so a terminal shows what
    is there and cannot be made to show something else."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else _escape(c) for c in text)


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def describe_call(call: ToolCall) -> str:
    """Return a one-line summary of ``call``: ``name(key=value, ...)``.

    Values are JSON (control characters and newlines escaped, other characters that are not
    printable shown by ``visible``), each shortened to 60 characters, the whole line to 200
    characters; shortened parts end with ``…``.
    """
    parts = []
    for key, value in call.input.items():
        shown: Any = visible(json.dumps(value, ensure_ascii=False))
        parts.append(f"{visible(str(key))}={_shorten(shown, _VALUE_CHARS)}")
    return _shorten(f"{visible(call.name)}({', '.join(parts)})", _LINE_CHARS)


def show_call(call: ToolCall, width: int | None = None) -> str:
    """Return ``call`` in full for a person to approve: ``name(key=value, ...)`` with every
    argument whole (JSON values, ``visible`` escapes), wrapped at ``width`` columns (default:
    the terminal's, at least 40) with continuation lines indented by four spaces. Nothing is
    shortened, so no part of what would run can be pushed out of sight."""
    if width is None:
        width = shutil.get_terminal_size((100, 24)).columns
    width = max(40, width)
    parts = [
        f"{visible(str(key))}={visible(json.dumps(value, ensure_ascii=False))}"
        for key, value in call.input.items()
    ]
    text = f"{visible(call.name)}({', '.join(parts)})"
    lines = textwrap.wrap(
        text,
        width,
        subsequent_indent="    ",
        drop_whitespace=False,
        replace_whitespace=False,
        break_on_hyphens=False,
    )
    return "\n".join(lines)


class TerminalApproval:
    """Ask a person on a terminal before each call.

    The prompt (written to ``output``) shows the whole call, wrapped (``show_call``), and reads
    one line from ``input``:

    - ``y`` / ``yes``: approve this call.
    - ``a`` / ``always``: approve this call and every later call of the same tool, for the life
      of this object.
    - ``n`` / ``no``, optionally followed by a reason on the same line (``n too risky``): refuse.
      The refusal reason recorded for the model is ``refused by the user: too risky``, or
      ``refused by the user`` without a reason.
    - end of input (EOF): refuse, reason ``refused: no answer (end of input)``.
    - anything else (an empty line too): the question is asked again.

    Args:
        tools: when given, calls of tools marked ``read_only`` are approved without asking.
        input: where answers are read (default: ``sys.stdin`` at call time).
        output: where prompts are written (default: ``sys.stderr`` at call time, so stdout stays
            clean for the run's result).

    Calls are serialised with a lock, so one policy object may serve several threads.
    """

    def __init__(
        self,
        tools: Iterable[Tool] | None = None,
        *,
        input: TextIO | None = None,
        output: TextIO | None = None,
    ) -> None:
        self._auto = frozenset(t.name for t in tools or () if t.read_only)
        self._always: set[str] = set()
        self._input = input
        self._output = output
        self._lock = threading.Lock()

    def will_ask(self, call: ToolCall) -> bool:
        """Whether ``call`` would be shown to the person (``False``: approved without asking)."""
        return call.name not in self._auto and call.name not in self._always

    def __call__(self, call: ToolCall) -> Approval:
        """Return the person's answer for ``call`` (see the class docstring)."""
        with self._lock:
            if not self.will_ask(call):
                return Approval(True)
            source = self._input if self._input is not None else sys.stdin
            sink = self._output if self._output is not None else sys.stderr
            sink.write(f"\ntool call: {show_call(call)}\n")
            while True:
                sink.write(f"approve? [y]es / [n]o (optionally: n REASON) / [a]lways {call.name}: ")
                sink.flush()
                line = source.readline()
                if not line:
                    sink.write("\n")
                    sink.flush()
                    return Approval(False, "refused: no answer (end of input)")
                word, _, rest = line.strip().partition(" ")
                word = word.lower().rstrip(",.:;")
                if word in ("y", "yes"):
                    return Approval(True)
                if word in ("a", "always"):
                    self._always.add(call.name)
                    return Approval(True)
                if word in ("n", "no"):
                    reason = rest.strip()
                    if reason:
                        return Approval(False, f"refused by the user: {reason}")
                    return Approval(False, "refused by the user")


def ask_on_terminal(
    tools: Iterable[Tool] | None = None,
    *,
    input: TextIO | None = None,
    output: TextIO | None = None,
) -> TerminalApproval:
    """Return a ``TerminalApproval`` (see there for the answers and the defaults).

    Args:
        tools: when given, its read-only tools are approved without asking.
        input: answer stream (default ``sys.stdin``); output: prompt stream (default
            ``sys.stderr``).
    """
    return TerminalApproval(tools, input=input, output=output)


# --- policies by mode name ----------------------------------------------------------------------


class ApprovalPolicy(Protocol):
    """A ``before_tool_call`` hook that can tell beforehand whether a call will wait for a person.

    ``TerminalApproval`` is one; ``policy_for`` returns one for every mode.
    """

    def __call__(self, call: ToolCall) -> Approval:
        """The decision for ``call`` (may block while a person answers)."""
        ...

    def will_ask(self, call: ToolCall) -> bool:
        """Whether calling the policy with ``call`` waits for a person's answer."""
        ...


@dataclass(frozen=True)
class _Unattended:
    """A policy that decides without a person (``will_ask`` is always ``False``)."""

    decide: BeforeToolCall

    def __call__(self, call: ToolCall) -> Approval:
        return self.decide(call)

    def will_ask(self, call: ToolCall) -> bool:
        return False


def _ask(tools: tuple[Tool, ...], why: str, remedy: str) -> ApprovalPolicy:
    return TerminalApproval(tools)


def _read_only(tools: tuple[Tool, ...], why: str, remedy: str) -> ApprovalPolicy:
    return _Unattended(read_only(tools, why=why, remedy=remedy))


def _all(tools: tuple[Tool, ...], why: str, remedy: str) -> ApprovalPolicy:
    return _Unattended(approve_all)


def _defer(tools: tuple[Tool, ...], why: str, remedy: str) -> ApprovalPolicy:
    return _Unattended(defer_changes(tools))


# --- command rules ------------------------------------------------------------------------------

COMMAND_TOOL = "run_command"
"""The tool whose ``command`` argument command rules judge."""


_RULES_HINT = "Run only commands the rules allow, or answer without it."


def _refuse_other_tools(call: ToolCall) -> Approval:
    return Approval(
        False, f"refused: only {COMMAND_TOOL} with an allowed command may run here (command rules)"
    )


class CommandPolicy:
    """An ``ApprovalPolicy`` that decides ``run_command`` calls by ``CommandRules`` and other calls
    by ``otherwise``.

    Args:
        rules: the compiled rules.
        otherwise: the policy of the other tools' calls (its ``will_ask`` is used when it has one).
        fall_through: ``False`` (``command_rules``): a line the rules do not admit is refused.
            ``True`` (``policy_for``): such a line goes to ``otherwise`` (a person, the mode's
            own rule); when that refuses, the refusal starts with the rules' reason. A denied
            line is refused either way, and so is an unreadable one when there are deny rules.
    """

    def __init__(self, rules: CommandRules, otherwise: BeforeToolCall, *, fall_through: bool = False) -> None:
        self.rules = rules
        self.otherwise = otherwise
        self.fall_through = fall_through

    def verdict(self, call: ToolCall) -> Verdict | None:
        """The rules' verdict on a ``run_command`` call; ``None`` for other tools."""
        if call.name != COMMAND_TOOL:
            return None
        command = call.input.get("command")
        if not isinstance(command, str):
            return Verdict("unreadable", "refused: the command must be a string")
        return self.rules.judge(command)

    def _final(self, verdict: Verdict) -> bool:
        """Whether ``verdict`` decides the call without asking ``otherwise``."""
        if verdict.kind in ("allowed", "denied") or not self.fall_through:
            return True
        return verdict.kind == "unreadable" and bool(self.rules.deny)

    def will_ask(self, call: ToolCall) -> bool:
        """Whether the call waits for a person: only when ``otherwise`` decides it and asks."""
        verdict = self.verdict(call)
        if verdict is not None and self._final(verdict):
            return False
        will_ask = getattr(self.otherwise, "will_ask", None)
        return bool(will_ask(call)) if callable(will_ask) else False

    def __call__(self, call: ToolCall) -> Approval:
        """The decision for ``call`` (see the class docstring)."""
        verdict = self.verdict(call)
        if verdict is None:
            return self.otherwise(call)
        if verdict.allowed:
            return Approval(True)
        if self._final(verdict):
            return Approval(False, f"{verdict.reason}. {_RULES_HINT}")
        decision = self.otherwise(call)
        if decision.approved or decision.deferred:
            return decision
        return Approval(False, f"{verdict.reason}; {decision.reason}")


def command_rules(
    allow: Iterable[str | CommandRule],
    deny: Iterable[str] = (),
    otherwise: BeforeToolCall | None = None,
    *,
    workspace: PathRules | None = None,
) -> CommandPolicy:
    """Return a policy that approves ``run_command`` only for lines its rules admit.

    A line runs only when every simple command in it -- joined by ``;`` ``&&`` ``||`` ``|`` ``&``
    or newlines, inside ``$(...)`` or backticks, or run by a wrapper (``env``, ``timeout``,
    ``xargs``, ``sh -c``, ``find -exec``...) -- matches an allow rule and none a deny rule; a line
    that cannot be read with certainty is refused (rules: ``miniagent._command_rules``).

    Args:
        allow: rules of words read like a command (``"git status"``, ``"git diff *"``,
            ``"pytest *"``: each word matches one word, a last ``*`` any further words, a ``*``
            inside a word is a glob on it), or rule objects such as those of
            ``READ_ONLY_COMMANDS``.
        deny: rules of words that refuse a line wherever their words appear in a command.
        otherwise: the policy for calls of other tools (e.g. ``read_only(tools)``); default:
            refuse them with a reason.
        workspace: the commands' folder as a ``PathRules`` (``miniagent.toolbox.Workspace``):
            needed by ``READ_ONLY_COMMANDS`` (their paths must resolve inside it, as for
            ``read_file``); pathname patterns are expanded in it.

    Returns:
        A ``CommandPolicy`` (an ``ApprovalPolicy``). Refusals say what was not allowed and why,
        e.g. ``refused: 'curl x' is not among the allowed commands (git status, ...)``.

    Raises:
        ValueError: a rule is not one simple command starting with a program name, a deny rule
            has assignments or redirections, or ``READ_ONLY_COMMANDS`` without ``workspace``.
        TypeError: a rule is neither a string nor a rule object.
    """
    rules = CommandRules(list(allow), list(deny), workspace=workspace)
    return CommandPolicy(rules, otherwise or _refuse_other_tools)


_COMMAND_DEFAULTS: dict[str, tuple[CommandRule, ...]] = {"read-only": READ_ONLY_COMMANDS}
"""The command rules a mode has by default (with a workspace): ``read-only`` runs the read-only
set."""


_POLICIES: dict[str, Callable[[tuple[Tool, ...], str, str], ApprovalPolicy]] = {
    "ask": _ask,
    "read-only": _read_only,
    "all": _all,
    "defer": _defer,
}

APPROVAL_MODES: tuple[str, ...] = tuple(_POLICIES)
"""The names ``policy_for`` knows, in the order help texts list them: ``ask``, ``read-only``,
``all``, ``defer``."""


def policy_for(
    mode: str,
    tools: Iterable[Tool],
    why: str = "this run is non-interactive",
    remedy: str = "ask the user to allow tools that change files",
    *,
    allow_commands: Iterable[str] = (),
    deny_commands: Iterable[str] = (),
    workspace: PathRules | None = None,
) -> ApprovalPolicy:
    """Return the approval policy of the mode named ``mode`` for a run with ``tools``.

    Args:
        mode: one of ``APPROVAL_MODES``: ``"ask"`` a person on the terminal before each call
            (``TerminalApproval(tools)``: read-only tools run without asking), ``"read-only"``
            (``read_only(tools, why=why)``: tools that may change something are refused),
            ``"all"`` (``approve_all``), ``"defer"`` (``defer_changes(tools)``: tools that may
            change something wait for a decision; the run stops ``deferred``).
        tools: the run's tools (their names and ``read_only`` flags are copied now).
        why: why only read-only tools run, as ``read_only``'s refusal says it (other modes
            ignore it).
        remedy: what the user can do about a refusal, as ``read_only``'s refusal says it.
        allow_commands: command rules (``command_rules``) whose ``run_command`` lines run
            without asking, in every mode.
        deny_commands: command rules whose lines are refused in every mode (``"all"`` too); a
            line that cannot be read is then refused as well.
        workspace: the commands' folder (``command_rules``); with it, ``"read-only"`` also runs
            the lines of ``READ_ONLY_COMMANDS`` (``_COMMAND_DEFAULTS``).

    Returns:
        An ``ApprovalPolicy``: use it as ``before_tool_call``; its ``will_ask(call)`` is true only
        for ``"ask"`` and a call the person has not yet approved for good (and the rules do not
        decide). A ``run_command`` line the rules do not admit is decided by the mode.

    Raises:
        ValueError: ``mode`` is not one of ``APPROVAL_MODES``, or a command rule is not valid.
    """
    make = _POLICIES.get(mode)
    if make is None:
        raise ValueError(f"unknown approval mode {mode!r} (choose from {', '.join(APPROVAL_MODES)})")
    base = make(tuple(tools), why, remedy)
    allow: list[str | CommandRule] = list(allow_commands)
    if workspace is not None:
        allow += _COMMAND_DEFAULTS.get(mode, ())
    deny = list(deny_commands)
    if not allow and not deny:
        return base
    return CommandPolicy(CommandRules(allow, deny, workspace=workspace), base, fall_through=True)
