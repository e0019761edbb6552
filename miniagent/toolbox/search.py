"""The ``grep`` tool: search files in the workspace with a regular expression.

Walks the given folder (or searches one file) without following symlinks to folders; symlinks to
files are searched only when they resolve inside the workspace. Binary files, files larger than
``MAX_FILE_BYTES`` and the ``.git`` folder are skipped.

The search itself runs in a child process (``_grep_worker.py`` via ``process.run_process``): a
regular expression can backtrack for minutes inside ``re`` (``(a+)+$`` against ``"a" * 40 + "b"``),
where no cancel event reaches, so the child is killed when the cancel event is set (within about
20 ms) or after ``timeout`` seconds (default ``DEFAULT_TIMEOUT_SECONDS``). This process compiles
the pattern first (a bad one is an error result at once) and resolves the path inside the
workspace; the child gets the resolved root and top, an environment without secrets, and imports
only the standard library (about 20 ms of start-up per call). With a sandbox (``default_tools(...,
sandbox="workspace")``) the child confines itself with the kernel before it opens a file: it can
write nothing, reach no network and read no secret folder (``process.sandbox``).
"""

from __future__ import annotations

import contextlib
import json
import re
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._capture import BINARY_SNIFF_BYTES, decode
from .._redaction import Redactor
from .._text import cap, omission_note, shorten
from ..errors import SandboxUnavailable
from ..process.children import ProcessOutcome, run_process
from ..process.environment import current_redactor, scrubbed_environ
from ..process.sandbox import CONFINE_MODULE, Sandbox
from ..tools import Tool, ToolResult
from .files import guarded
from .globs import GlobError, GlobFilter, compile_glob
from .paths import NAME_FORM, OutsideWorkspaceError, Workspace
from .timeouts import ToolTimeout

__all__ = [
    "grep_tool",
    "GREP_TIMEOUT",
    "MAX_MATCHES",
    "MAX_LINE_CHARS",
    "MAX_FILE_BYTES",
    "WORKER_MEMORY_BYTES",
    "DEFAULT_TIMEOUT_SECONDS",
    "MAX_TIMEOUT_SECONDS",
]

MAX_MATCHES = 1000
MAX_LINE_CHARS = 500
MAX_FILE_BYTES = 20 * 1024 * 1024
WORKER_MEMORY_BYTES = 192 * 1024 * 1024
"""Address-space limit of the search child: a pattern that backtracks on a long line cannot grow
it past this; that file is skipped and the result says so."""
GREP_TIMEOUT = ToolTimeout(default=30.0, maximum=300.0)
"""The ``timeout`` input of ``grep``, in seconds."""
DEFAULT_TIMEOUT_SECONDS = GREP_TIMEOUT.default
MAX_TIMEOUT_SECONDS = GREP_TIMEOUT.maximum
_TIMEOUT_HINT = (
    "a pattern with nested repetition such as (a+)+ can take exponential time: "
    "simplify the pattern, or narrow the path or glob"
)
_SKIPPED_FOLDERS = (".git",)
_WORKER = Path(__file__).with_name("_grep_worker.py")
# Everything the child writes is kept (at most MAX_MATCHES JSON lines of bounded length).
_WORKER_KEEP_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class _Search:
    """One checked grep request: what the worker is asked (``request``) and the time limit."""

    pattern: str
    timeout: float
    notes: list[str]
    request: dict[str, Any]


def _worker_argv() -> list[str]:
    """The child's command line: this interpreter, isolated (-I), without site (-S)."""
    utf8 = "1" if sys.flags.utf8_mode else "0"  # the same file-name encoding as this process
    return [sys.executable, "-I", "-S", "-X", f"utf8={utf8}", str(_WORKER)]


def _check_input(workspace: Workspace, arguments: dict[str, Any]) -> _Search | ToolResult:
    """Check the model's input in this process (pattern, timeout, path): a ``_Search``, or the
    error result saying what is wrong."""
    pattern = str(arguments["pattern"])
    glob = arguments.get("glob")
    try:
        selected = compile_glob(str(glob)) if glob else GlobFilter(None, None)
    except GlobError as error:
        return ToolResult(str(error), is_error=True)
    timeout, notes = GREP_TIMEOUT.resolve(arguments.get("timeout"))
    if timeout is None:
        return ToolResult(GREP_TIMEOUT.INVALID, is_error=True)
    try:
        re.compile(pattern)
    except (re.error, OverflowError, RecursionError, ValueError, MemoryError) as error:
        # OverflowError: a{9999999999}; RecursionError: hundreds of nested groups.
        return ToolResult(f"invalid regular expression {shorten(repr(pattern), 200)}: {error}", is_error=True)
    try:
        top = workspace.resolve(str(arguments.get("path", ".")))
    except OutsideWorkspaceError as error:
        return ToolResult(str(error), is_error=True)
    if top.is_dir():
        is_dir = True
    elif top.is_file():
        is_dir = False
    else:
        return ToolResult(f"not found: {workspace.display(top)}", is_error=True)
    request = {
        "root": str(workspace.root),
        "top": str(top),
        "is_dir": is_dir,
        "pattern": pattern,
        "glob_name": selected.name_regex,
        "glob_path": selected.path_regex,
        "name_form": NAME_FORM,
        "max_matches": MAX_MATCHES,
        "max_line_chars": MAX_LINE_CHARS,
        "max_file_bytes": MAX_FILE_BYTES,
        "sniff_bytes": BINARY_SNIFF_BYTES,
        "skipped_folders": list(_SKIPPED_FOLDERS),
        "max_memory_bytes": WORKER_MEMORY_BYTES,
    }
    return _Search(pattern, timeout, notes, request)


def _run_worker(
    workspace: Workspace, search: _Search, cancel: threading.Event | None, sandbox: Sandbox | None
) -> ProcessOutcome | ToolResult:
    """Run the worker on ``search`` (killed on cancel or timeout), confined by ``sandbox`` when
    given; an error result when it cannot start."""
    if not sys.executable:
        return ToolResult("cannot run the search: no Python interpreter path", is_error=True)
    env = scrubbed_environ()
    try:
        with contextlib.ExitStack() as stack:
            request = dict(search.request)
            pass_fds: tuple[int, ...] = ()
            if sandbox is not None:
                confinement = stack.enter_context(sandbox.confinement(env))
                request["confine"] = {"module_dir": str(CONFINE_MODULE.parent), "spec": confinement.spec}
                pass_fds = confinement.pass_fds
            return run_process(
                _worker_argv(),
                workspace.root,
                timeout=search.timeout,
                cancel=cancel,
                keep_bytes=_WORKER_KEEP_BYTES,
                env=env,
                input_data=json.dumps(request).encode("ascii"),
                pass_fds=pass_fds,
            )
    except (OSError, SandboxUnavailable) as error:
        return ToolResult(f"cannot run the search: {error}", is_error=True)


def _match_line(match: dict[str, Any], redact: Redactor) -> str:
    """``path:line_number: text`` of one match; a cut line shows its window with the one marker
    on each cut side and ``[match at column N]``. Secrets are hidden in the text, and their
    parts at the window's cut edges."""
    if "column" not in match:
        return f"{match['path']}:{match['line']}: {redact(str(match['text']))}"
    text = redact.edges(str(match["text"]), start=bool(match["before"]), end=bool(match["after"]))
    if match["before"]:
        text = f"{omission_note(int(match['before']))} {text}"
    if match["after"]:
        text = f"{text} {omission_note(int(match['after']))}"
    return f"{match['path']}:{match['line']}: {text} [match at column {match['column']}]"


def _read_worker(outcome: ProcessOutcome) -> tuple[list[str], dict[str, Any] | None, str]:
    """Split the child's output into match lines (secrets hidden: ``_match_line``), the final
    summary (if any) and other text."""
    redact = current_redactor()
    data = outcome.output.complete()
    if data is None:
        return [], None, "the search output was too large"
    matches: list[str] = []
    summary: dict[str, Any] | None = None
    other: list[str] = []
    for raw in data.split(b"\n"):
        if not raw:
            continue
        try:
            kind, value = json.loads(raw)
        except ValueError:  # a line cut by a kill, or a traceback
            other.append(decode(raw))
            continue
        if kind == "match":
            matches.append(_match_line(value, redact))
        elif kind == "done":
            summary = value
    return matches, summary, "\n".join(other)


def _summary_notes(summary: dict[str, Any] | None) -> list[str]:
    """Notes after the matches: the match limit reached, files skipped and why."""
    if summary is None:
        return []
    notes = []
    if summary.get("full"):
        notes.append(f"[stopped after {MAX_MATCHES} matches; narrow the pattern, path or glob]")
    skipped: dict[str, int] = summary.get("skipped") or {}
    if skipped:
        parts = ", ".join(f"{count} {why}" for why, count in sorted(skipped.items()))
        notes.append(f"[skipped: {parts}]")
    return notes


def _grep(
    workspace: Workspace,
    max_chars: int,
    arguments: dict[str, Any],
    cancel: threading.Event | None,
    sandbox: Sandbox | None = None,
) -> ToolResult:
    search = _check_input(workspace, arguments)
    if isinstance(search, ToolResult):
        return search
    outcome = _run_worker(workspace, search, cancel, sandbox)
    if isinstance(outcome, ToolResult):
        return outcome
    matches, summary, other = _read_worker(outcome)
    if outcome.stopped is None and (outcome.returncode != 0 or summary is None):
        if "MemoryError" in other:
            return ToolResult(
                f"the search ran out of memory (its limit is {WORKER_MEMORY_BYTES // 2**20} MB); "
                "narrow the path or glob, or simplify the pattern",
                is_error=True,
            )
        detail = cap(other.strip() or "no output", 2000)
        return ToolResult(f"the search failed (exit status {outcome.returncode}): {detail}", is_error=True)
    lines = [*search.notes, *(matches or [f"no matches for {search.pattern!r}"]), *_summary_notes(summary)]
    if outcome.stopped == "cancelled":
        lines.append("[cancelled]")
    elif outcome.stopped == "timeout":
        lines.append(ToolTimeout.timed_out(search.timeout, _TIMEOUT_HINT))
    return ToolResult(cap("\n".join(lines), max_chars), is_error=outcome.stopped is not None)


def grep_tool(workspace: Workspace, max_chars: int, sandbox: Sandbox | None = None) -> Tool:
    """Return the ``grep`` tool (read-only).

    Args:
        workspace: the folder searched; every path must resolve inside it.
        max_chars: cap of each result in characters.
        sandbox: confine the search child (``process.sandbox``; a ``Sandbox`` that writes
            nothing fits it).

    Input: ``pattern`` (Python regular expression, searched in each line), ``path`` (file or
    folder, default ``"."``), ``glob`` (optional, git/ripgrep syntax: ``globs``; without ``/``
    matched against file names, with ``/`` against workspace-relative paths; ``**``, ``{a,b}``,
    ``[!x]``; an unsupported glob is an error result), ``timeout`` (seconds, default
    ``DEFAULT_TIMEOUT_SECONDS``, lowered to ``MAX_TIMEOUT_SECONDS`` with a note).
    Result: one ``path:line_number: line`` per matching line (at most ``MAX_MATCHES``; of a line
    longer than ``MAX_LINE_CHARS`` characters, a window of that many around the match, the one
    marker ``[... N characters left out ...]`` on each cut side and ``[match at column N]``),
    then notes on skipped files; ``no matches ...``
    when nothing matched; capped to ``max_chars`` characters. A bad pattern is an error result.
    Cancelled or timed out: the matches found so far, then ``[cancelled]`` or
    ``[timed out after N s; ...]``, as an error result.
    """

    def execute(arguments: dict[str, Any], cancel: threading.Event | None) -> ToolResult:
        return guarded(lambda: _grep(workspace, max_chars, arguments, cancel, sandbox))

    return Tool(
        name="grep",
        description=(
            "Search text files in the workspace for lines matching a regular expression "
            "(Python syntax). Results are lines 'path:line_number: line'."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "pattern": {
                    "type": "string",
                    "description": "Regular expression searched in each line (Python re syntax).",
                },
                "path": {
                    "type": "string",
                    "description": "File or folder to search, relative to the workspace root. Default: '.'.",
                },
                "glob": {
                    "type": "string",
                    "description": "Only search files matching this glob (git/ripgrep syntax), "
                    "e.g. '*.py', '*.{md,sh}', 'src/**/*.ts'. Without '/' it matches file names.",
                },
                "timeout": GREP_TIMEOUT.schema("search"),
            },
            "required": ["pattern"],
            "additionalProperties": False,
        },
        execute=execute,
        read_only=True,
    )
