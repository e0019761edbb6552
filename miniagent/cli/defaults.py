"""What the CLI decides when the user did not say: provider, approval mode, session path, system
prompt, and the exit codes it returns.

Invariants: every function here is pure or touches only the file it is asked to create; nothing
here imports typer, the providers or the toolbox (so they are cheap to import and to test).

Exit codes: ``EXIT_CODES`` is their one table (code and meaning); ``miniagent --help`` prints it
(``exit_codes_text``) and every other text names the ``EXIT_*`` constants. They follow DESIGN.md
"Beyond the seed": the stop reasons' codes are the library's (``exit_code_for_stop_reason``),
``EX_USAGE`` of ``sysexits.h`` for a usage error (never click's 2, which would read as
``max_turns``), coreutils ``timeout``'s code for ``--timeout``, and ``128 + signal`` for a run
stopped by a signal.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from .._catalogue import PROVIDERS, check_provider, chosen_by_key
from .._folders import own_folder
from ..agent import exit_code_for_stop_reason
from ..approval import APPROVAL_MODES
from ..tools import MIN_TOOL_OUTPUT_CHARS, Tool

__all__ = [
    "DEFAULT_CHAT_COMPACT_AT",
    "DEFAULT_MAX_REPEATS",
    "DEFAULT_MAX_TURNS",
    "EXIT_BUDGET",
    "EXIT_CODES",
    "EXIT_DEFERRED",
    "EXIT_ERROR",
    "EXIT_MAX_TURNS",
    "EXIT_NO_PROGRESS",
    "EXIT_OK",
    "EXIT_SIGHUP",
    "EXIT_SIGINT",
    "EXIT_SIGPIPE",
    "EXIT_SIGTERM",
    "EXIT_TIMEOUT",
    "EXIT_USAGE",
    "PROVIDERS",
    "compact_at",
    "default_session_path",
    "default_system_prompt",
    "exit_codes_text",
    "resolve_approval",
    "resolve_provider",
    "session_folder",
]

EXIT_OK = exit_code_for_stop_reason("complete")
EXIT_MAX_TURNS = exit_code_for_stop_reason("max_turns")
EXIT_BUDGET = exit_code_for_stop_reason("max_budget")
EXIT_DEFERRED = exit_code_for_stop_reason("deferred")
EXIT_NO_PROGRESS = exit_code_for_stop_reason("no_progress")
EXIT_ERROR = 1
EXIT_USAGE = 64  # EX_USAGE from sysexits.h
EXIT_TIMEOUT = 124  # --timeout: as coreutils timeout(1)
EXIT_SIGINT = 128 + signal.SIGINT  # the library's code for "aborted" too
EXIT_SIGTERM = 128 + signal.SIGTERM
EXIT_SIGHUP = 128 + signal.SIGHUP
EXIT_SIGPIPE = 128 + signal.SIGPIPE  # stdout was a pipe that closed (as a Unix tool killed by SIGPIPE)

EXIT_CODES: dict[int, str] = {
    EXIT_OK: "complete",
    EXIT_MAX_TURNS: "max turns reached",
    EXIT_BUDGET: "budget reached (--max-total-tokens, --max-cost)",
    EXIT_DEFERRED: "tool calls wait for a decision (--approve defer: miniagent session pending)",
    EXIT_NO_PROGRESS: "no progress: the same call got the same result --max-repeats times in a row",
    EXIT_ERROR: "error (provider, tool server, session file or its lock)",
    EXIT_USAGE: "usage error (options, arguments, --base-url)",
    EXIT_TIMEOUT: "--timeout ran out",
    EXIT_SIGINT: "cancelled (Ctrl-C)",
    EXIT_SIGTERM: "terminated (SIGTERM)",
    EXIT_SIGHUP: "hung up (SIGHUP)",
    EXIT_SIGPIPE: "standard output closed (e.g. | head)",
}
"""Every exit code of the CLI and what it means, in the order help lists them."""

DEFAULT_MAX_TURNS = 8
DEFAULT_MAX_REPEATS = 3  # --max-repeats: the same call with the same result 3 times stops the run
MIN_CONTEXT_CHARS = 2 * MIN_TOOL_OUTPUT_CHARS
"""The smallest ``--context-max-chars``: a tool result (at least ``MIN_TOOL_OUTPUT_CHARS``) may
take half of the budget."""
DEFAULT_MAX_OUTPUT_TOKENS = 1024  # --max-output-tokens: every provider gets an output-token limit
DEFAULT_CHAT_COMPACT_AT = 100_000
"""``chat``'s ``--compact-at`` when not given, for a model whose context size the CLI does not
know: under the 128,000-token windows of today's smaller hosted models, with room for the answer."""

DEFAULT_SYSTEM_PROMPT = """\
You are miniagent, a careful assistant that works on the files in the folder {workspace}.
You can call these tools: {tools}. Paths are relative to that folder.
Use the tools to look at files instead of guessing, change files only when asked, and keep
answers short and concrete. When you are done, answer in plain text without calling a tool."""


def exit_codes_text() -> str:
    """``EXIT_CODES`` as one sentence for help texts: ``0 complete, 2 max turns reached, ...``
    (no final full stop)."""
    return ", ".join(f"{code} {meaning}" for code, meaning in EXIT_CODES.items())


def resolve_provider(
    provider: str | None, environ: Mapping[str, str] | None = None, *, base_url: str | None = None
) -> str:
    """Choose the provider: the given one, else by the API keys present, else ``local``.

    Args:
        provider: ``--provider`` or ``MINIAGENT_PROVIDER`` (``None`` or empty: not chosen).
        environ: the environment (default ``os.environ``).
        base_url: ``--base-url`` / ``MINIAGENT_BASE_URL``; with no provider and no key it means
            an OpenAI-compatible server that needs no key (Ollama, llama.cpp, vLLM).

    Returns:
        ``provider`` when set; otherwise the catalogue's choice (``_catalogue.chosen_by_key``):
        ``"anthropic"`` if ``ANTHROPIC_API_KEY`` is set, else ``"openai"`` if ``OPENAI_API_KEY``
        is set or ``base_url`` is given, else ``"local"`` (the embedded model).

    Raises:
        ValueError: ``provider`` is not a provider of the catalogue.
    """
    env = os.environ if environ is None else environ
    if provider:
        return check_provider(provider)
    return chosen_by_key(env, base_url)


def resolve_approval(approve: str | None, stdin_is_terminal: bool, *, continuing: bool = False) -> str:
    """Choose the approval mode: the given one, else ``ask`` on a terminal, else ``read-only``
    (``defer`` for ``run --continue``: calls nobody decided on keep waiting, never refused).

    Args:
        approve: ``--approve`` (``None``: not given).
        stdin_is_terminal: whether standard input is a terminal (a person can answer).
        continuing: the run goes on from a session (``run --continue``).

    Returns:
        One of ``approval.APPROVAL_MODES`` (the name ``approval.policy_for`` takes).

    Raises:
        ValueError: ``approve`` is not one of those.
    """
    if approve is None:
        return "ask" if stdin_is_terminal else "defer" if continuing else "read-only"
    if approve not in APPROVAL_MODES:
        raise ValueError(f"unknown approval mode {approve!r} (choose from {', '.join(APPROVAL_MODES)})")
    return approve


def session_folder(environ: Mapping[str, str] | None = None) -> Path:
    """The folder of ``chat``'s own sessions: ``$XDG_STATE_HOME/miniagent/sessions``.

    Args:
        environ: the environment (default ``os.environ``); ``XDG_STATE_HOME`` defaults to
            ``~/.local/state``.
    """
    env = os.environ if environ is None else environ
    state = env.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "miniagent" / "sessions"


def default_session_path(environ: Mapping[str, str] | None = None, now: float | None = None) -> Path:
    """Create and return a new, empty session file for ``chat``: ``<session_folder>/<time>.jsonl``.

    The file is created with ``O_EXCL`` (a ``-N`` suffix is added when the stamp is taken), so
    two chats started in the same second never share a session.

    Args:
        environ: the environment (default ``os.environ``), see ``session_folder``.
        now: the time stamp to use (default: now).

    Raises:
        OSError: the folder cannot be created (it and its new parents are ``0700``), or another
            user owns it (``ForeignFolderError``).
    """
    folder = own_folder(session_folder(environ))
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    number = 1
    while True:
        path = folder / (f"{stamp}.jsonl" if number == 1 else f"{stamp}-{number}.jsonl")
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        except FileExistsError:
            number += 1
            continue
        return path


def default_system_prompt(workspace: Path, tools: Sequence[Tool]) -> str:
    """Return the default system prompt, naming the workspace and the tools.

    Args:
        workspace: the folder the tools work in.
        tools: the run's tools.

    Returns:
        The prompt text.
    """
    names = ", ".join(t.name for t in tools) or "none"
    return DEFAULT_SYSTEM_PROMPT.format(workspace=workspace, tools=names)


def compact_at(
    given: int | None, *, chat: bool, context_size: int | None, max_output_tokens: int
) -> int | None:
    """The ``--compact-at`` of a command: the tokens at which a run compacts, or ``None`` (never).

    ``given`` wins (``0``: never). Without it, ``run`` never compacts and ``chat`` compacts at
    three quarters of the model's context size when known (``context_size``: the embedded model's
    ``n_ctx``), less room for one answer (``max_output_tokens``) and a turn's growth, else at
    ``DEFAULT_CHAT_COMPACT_AT``.
    """
    if given is not None:
        return given or None
    if not chat:
        return None
    if context_size is None:
        return DEFAULT_CHAT_COMPACT_AT
    return max(256, min(context_size * 3 // 4, context_size - max_output_tokens - 512))
