"""The ``miniagent`` command line: ``miniagent run PROMPT`` and ``miniagent chat``.

Contract (DESIGN.md "CLI"), each point tested in ``tests/cli/``:

- Exit codes: one table, ``defaults.EXIT_CODES`` (``miniagent --help`` prints it). A runtime
  error (provider unreachable, bad key, empty answer, corrupt or locked session) is one line
  ``miniagent: error: ...`` on stderr, a traceback only with ``--debug`` (``report``); a usage
  error is ``EXIT_USAGE``, never click's own 2, which would read as max_turns.
- stdout carries only the answer (``display``): ``run`` streams the assistant's text when stdout
  is a terminal and prints the last assistant text of the run at the end otherwise; ``chat``
  prints every non-empty assistant message (streamed on a terminal) and a compact line per tool
  call and result. Progress (spinner, tool lines of ``run``, notes), prompts and errors go to stderr.
- ``--json``: stdout holds one JSON object per line and nothing else (``display.JsonDisplay``).
- Signals (``signals``), handled only around a run and only in the main thread: the first SIGINT
  (or SIGTERM, SIGHUP) sets the run's cancel event, so the loop closes its calls as the spec says
  and the process exits ``128 + signal``. The first signal while an approval prompt waits also
  interrupts the prompt. A second signal exits at once with ``os._exit(128 + signal)`` after
  killing the run's commands. In ``chat`` a Ctrl-C cancels the current answer and returns to the
  prompt; Ctrl-C at the prompt leaves with ``EXIT_SIGINT``.

Modules, one job each: ``app`` (the Typer app, ``run_cli``, ``main``), ``options`` (every option,
one field each), ``checks`` (usage checks before anything starts), ``defaults`` (provider,
approval mode, session path, system prompt, the exit-code table), ``assemble`` (what the runs are
made of: tools, MCP servers, approval policy, system prompt, client), ``runner`` (one run at a time
under signals, threads and ``--timeout``), ``report`` (how a command ends: outcome, error line,
stop notes, exit code), ``run`` and ``chat`` (the commands), ``display`` (one class per output
mode), ``terminal`` (spinner, one-line forms), ``signals``, ``logs``, ``session_command``.
"""

from __future__ import annotations

from .app import app, main, run_cli
from .defaults import (
    EXIT_ERROR,
    EXIT_OK,
    EXIT_SIGINT,
    EXIT_SIGTERM,
    EXIT_USAGE,
    default_session_path,
    default_system_prompt,
    resolve_approval,
    resolve_provider,
    session_folder,
)

__all__ = [
    "app",
    "main",
    "run_cli",
    "resolve_provider",
    "resolve_approval",
    "default_session_path",
    "session_folder",
    "default_system_prompt",
    "EXIT_OK",
    "EXIT_ERROR",
    "EXIT_USAGE",
    "EXIT_SIGINT",
    "EXIT_SIGTERM",
]
