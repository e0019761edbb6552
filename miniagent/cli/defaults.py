"""What the CLI decides when the user did not say: provider, approval mode, session path, system
prompt, and the exit codes it returns.

Invariants: every function here is pure or touches only the file it is asked to create; nothing
here imports typer, the providers or the toolbox (so they are cheap to import and to test).
Exit codes follow DESIGN.md "Beyond the seed": 64 for a usage error (``EX_USAGE`` of
``sysexits.h``, never click's 2, which would read as ``max_turns``) and ``128 + signal`` for a
run stopped by a signal.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from .._folders import own_folder
from .._provider_names import PROVIDERS, check_provider
from ..tools import Tool

__all__ = [
    "APPROVALS",
    "DEFAULT_MAX_TURNS",
    "EXIT_ERROR",
    "EXIT_OK",
    "EXIT_SIGINT",
    "EXIT_SIGPIPE",
    "EXIT_SIGTERM",
    "EXIT_TIMEOUT",
    "EXIT_USAGE",
    "PROVIDERS",
    "default_session_path",
    "default_system_prompt",
    "resolve_approval",
    "resolve_provider",
    "session_folder",
]

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 64  # EX_USAGE from sysexits.h
EXIT_SIGINT = 128 + signal.SIGINT  # 130
EXIT_SIGTERM = 128 + signal.SIGTERM  # 143
EXIT_TIMEOUT = 124  # --timeout: as coreutils timeout(1)
EXIT_SIGPIPE = 128 + signal.SIGPIPE  # 141: stdout was a pipe that closed (as a Unix tool killed by SIGPIPE)

APPROVALS = ("ask", "read-only", "all")
DEFAULT_MAX_TURNS = 8
DEFAULT_MAX_OUTPUT_TOKENS = 1024  # --max-output-tokens: every provider gets an output-token limit

DEFAULT_SYSTEM_PROMPT = """\
You are miniagent, a careful assistant that works on the files in the folder {workspace}.
You can call these tools: {tools}. Paths are relative to that folder.
Use the tools to look at files instead of guessing, change files only when asked, and keep
answers short and concrete. When you are done, answer in plain text without calling a tool."""


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
        ``provider`` when set; otherwise ``"anthropic"`` if ``ANTHROPIC_API_KEY`` is set, else
        ``"openai"`` if ``OPENAI_API_KEY`` is set or ``base_url`` is given, else ``"local"`` (the
        embedded model).

    Raises:
        ValueError: ``provider`` is not one of ``local``, ``openai``, ``anthropic``.
    """
    env = os.environ if environ is None else environ
    if provider:
        return check_provider(provider)
    if env.get("ANTHROPIC_API_KEY"):
        return "anthropic"
    if env.get("OPENAI_API_KEY") or base_url:
        return "openai"
    return "local"


def resolve_approval(approve: str | None, stdin_is_terminal: bool) -> str:
    """Choose the approval mode: the given one, else ``ask`` on a terminal, else ``read-only``.

    Args:
        approve: ``--approve`` (``None``: not given).
        stdin_is_terminal: whether standard input is a terminal (a person can answer).

    Returns:
        ``"ask"``, ``"read-only"`` or ``"all"``.

    Raises:
        ValueError: ``approve`` is not one of those.
    """
    if approve is None:
        return "ask" if stdin_is_terminal else "read-only"
    if approve not in APPROVALS:
        raise ValueError(f"unknown approval mode {approve!r} (choose from {', '.join(APPROVALS)})")
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
