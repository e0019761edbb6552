"""The ``run_command`` tool: ``/bin/sh -c COMMAND`` in the workspace, through ``process``.

How the command runs is ``process.run_process``'s contract: its own process group, stdin
``/dev/null``, stdout and stderr merged into one pipe (their order kept), read in the calling
thread with a cap, the whole group stopped (SIGTERM, then SIGKILL after ``kill_grace`` seconds)
when the shell exits, times out or is cancelled (within about 20 ms). The shell runs under the
reaper (``contain``): a child subreaper that also stops every descendant that left the group or
the session (``set -m``, ``setsid``, daemons) -- on Linux; it costs one more interpreter start
(about 20 ms) per command.

Sandbox: with a ``process.sandbox.Sandbox`` (``default_tools(..., sandbox="workspace")``), each
command is confined by the kernel before it runs: writes only inside the workspace and a private
temporary folder (``TMPDIR``), no network, no reading of secret folders (``sandbox``'s policy).

Secrets (see ``environment``): a command gets an environment without secret variables
(``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``, names ending in ``_API_KEY``, ``_TOKEN``,
``_SECRET``, ``_PASSWORD``, ``_ACCESS_KEY``, ... or containing ``SECRET_``), unless the caller
gives an explicit environment; and the values of secret variables (>= 8 characters) of
``os.environ`` and of the command's environment are replaced with ``***`` in its output, before
it is cut to length.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._redaction import Redactor
from ..errors import SandboxUnavailable
from ..process.children import KILL_GRACE_SECONDS, check_environment, run_process
from ..process.environment import scrubbed_environ, secret_values
from ..process.sandbox import Sandbox
from ..tools import TOOL_OUTPUT_CHARS, Tool, ToolResult
from .paths import Workspace
from .timeouts import ToolTimeout

__all__ = [
    "COMMAND_TIMEOUT",
    "CommandOutcome",
    "run_shell",
    "run_command_tool",
    "DEFAULT_TIMEOUT_SECONDS",
    "MAX_TIMEOUT_SECONDS",
]

COMMAND_TIMEOUT = ToolTimeout(default=60.0, maximum=600.0)
"""The ``timeout`` input of ``run_command``, in seconds."""
DEFAULT_TIMEOUT_SECONDS = COMMAND_TIMEOUT.default
MAX_TIMEOUT_SECONDS = COMMAND_TIMEOUT.maximum


@dataclass(frozen=True, slots=True)
class CommandOutcome:
    """What ``run_shell`` observed.

    Args:
        output: stdout and stderr merged, decoded, redacted and capped (characters).
        returncode: the shell's exit status; negative ``-N`` when killed by signal ``N``.
        stopped: ``"timeout"``, ``"cancelled"`` or ``None`` when the shell exited by itself.
        pgid: the process group id (the shell's pid), e.g. for checking that it is gone.
        seconds: wall time of the call.
    """

    output: str
    returncode: int
    stopped: str | None
    pgid: int
    seconds: float


def run_shell(
    command: str,
    cwd: str | os.PathLike[str],
    *,
    timeout: float,
    cancel: threading.Event | None = None,
    max_chars: int = TOOL_OUTPUT_CHARS,
    kill_grace: float = KILL_GRACE_SECONDS,
    env: Mapping[str, str] | None = None,
    sandbox: Sandbox | None = None,
) -> CommandOutcome:
    """Run ``/bin/sh -c command`` in ``cwd`` and return its merged output and status.

    Args:
        command: the shell command line.
        cwd: the working folder.
        timeout: seconds before the group is stopped (> 0).
        cancel: when set, the group is stopped within about 20 ms.
        max_chars: cap of the returned output in characters.
        kill_grace: seconds between SIGTERM and SIGKILL.
        env: the command's exact environment; ``None`` means ``os.environ`` now without its
            secret variables (``environment.scrubbed_environ``).
        sandbox: confine the command (``process.sandbox``): its environment then also gets
            ``TMPDIR``, ``TMP`` and ``TEMP`` naming its private temporary folder.

    Returns:
        A ``CommandOutcome`` whose output has the values of secret variables (of ``os.environ``
        and of ``env``, >= 8 characters) replaced with ``***``; no process of the group is alive
        when it returns.

    Raises:
        OSError: the shell could not be started (e.g. ``cwd`` is gone).
        SandboxUnavailable: ``sandbox`` cannot confine this command (e.g. the workspace holds
            the ``HOME`` of ``env``'s secrets).
    """
    child_env = scrubbed_environ() if env is None else dict(env)
    redact = Redactor(secret_values(os.environ, child_env))
    with contextlib.ExitStack() as stack:
        confine = None
        pass_fds: tuple[int, ...] = ()
        if sandbox is not None:
            confinement = stack.enter_context(sandbox.confinement(child_env))
            child_env.update(confinement.env)
            confine, pass_fds = confinement.spec, confinement.pass_fds
        outcome = run_process(
            ["/bin/sh", "-c", command],
            cwd,
            timeout=timeout,
            cancel=cancel,
            keep_bytes=max(4 * max_chars + 16, 65536),
            kill_grace=kill_grace,
            env=child_env,
            contain=True,
            confine=confine,
            pass_fds=pass_fds,
        )
    return CommandOutcome(
        output=outcome.output.text(max_chars, redact),
        returncode=outcome.returncode,
        stopped=outcome.stopped,
        pgid=outcome.pgid,
        seconds=outcome.seconds,
    )


_SANDBOX_NOTE = (
    " The command runs in a sandbox: it can write only inside the workspace and $TMPDIR, has no "
    "network access, and cannot read secret folders such as ~/.ssh."
)


def _status_line(outcome: CommandOutcome, timeout: float) -> str:
    if outcome.stopped == "cancelled":
        return "[cancelled]"
    if outcome.stopped == "timeout":
        return ToolTimeout.timed_out(timeout)
    if outcome.returncode < 0:
        try:
            name = signal.Signals(-outcome.returncode).name
        except ValueError:
            name = f"signal {-outcome.returncode}"
        return f"killed by signal {name}"
    return f"exit code: {outcome.returncode}"


@dataclass(frozen=True)
class _Settings:
    """How ``run_command`` runs its commands (fixed when the tool is made)."""

    workspace: Workspace
    max_chars: int
    kill_grace: float
    env: Mapping[str, str] | None
    sandbox: Sandbox | None


def _run_command(
    settings: _Settings, arguments: dict[str, Any], cancel: threading.Event | None
) -> ToolResult:
    command = str(arguments["command"])
    timeout, notes = COMMAND_TIMEOUT.resolve(arguments.get("timeout"))
    if timeout is None:
        return ToolResult(COMMAND_TIMEOUT.INVALID, is_error=True)
    if "\x00" in command:
        return ToolResult("the command contains a NUL character", is_error=True)
    try:
        outcome = run_shell(
            command,
            Path(settings.workspace.root),
            timeout=timeout,
            cancel=cancel,
            max_chars=settings.max_chars,
            kill_grace=settings.kill_grace,
            env=settings.env,
            sandbox=settings.sandbox,
        )
    except (OSError, SandboxUnavailable) as error:
        return ToolResult(f"cannot run the command: {error}", is_error=True)
    parts = [*notes]
    if outcome.output:
        parts.append(outcome.output.removesuffix("\n"))
    parts.append(_status_line(outcome, timeout))
    failed = outcome.stopped is not None or outcome.returncode != 0
    return ToolResult("\n".join(parts), is_error=failed)


def run_command_tool(
    workspace: Workspace,
    max_chars: int,
    *,
    kill_grace: float = KILL_GRACE_SECONDS,
    env: Mapping[str, str] | None = None,
    sandbox: Sandbox | None = None,
) -> Tool:
    """Return the ``run_command`` tool (not read-only: a command may change anything).

    Args:
        workspace: the commands' working folder.
        max_chars: cap of each result in characters.
        kill_grace: seconds between SIGTERM and SIGKILL when a command is stopped.
        env: the commands' exact environment (copied now); ``None`` means ``os.environ`` at each
            call without its secret variables (``environment.scrubbed_environ``).
        sandbox: confine every command (``process.sandbox``); the tool's description then tells
            the model what the sandbox allows.

    Input: ``command`` (shell command line), ``timeout`` (seconds, default
    ``DEFAULT_TIMEOUT_SECONDS``, lowered to ``MAX_TIMEOUT_SECONDS`` with a note).
    Result: the merged output (capped to ``max_chars`` characters, invalid UTF-8 replaced, values
    of secret variables replaced with ``***``), then one status line: ``exit code: N``,
    ``killed by signal NAME``, ``[timed out after N s]`` or ``[cancelled]``. ``is_error`` is true
    unless the command exited with status 0.

    Raises:
        TypeError, ValueError: ``env`` is not a valid environment (``check_environment``).
    """
    fixed_env = None if env is None else check_environment(env)
    settings = _Settings(workspace, max_chars, kill_grace, fixed_env, sandbox)

    def execute(arguments: dict[str, Any], cancel: threading.Event | None) -> ToolResult:
        return _run_command(settings, arguments, cancel)

    return Tool(
        name="run_command",
        description=(
            "Run a shell command (/bin/sh -c) in the workspace folder and return its combined "
            "stdout and stderr and its exit code. No input is available on stdin; "
            "background processes are stopped when the command ends. Secret environment "
            "variables (API keys, tokens, passwords) are not available to the command."
            + (_SANDBOX_NOTE if sandbox is not None else "")
        ),
        input_schema={
            "type": "object",
            "properties": {
                "command": {
                    "type": "string",
                    "description": "The shell command line to run, e.g. 'ls -la' or 'pytest -q'.",
                },
                "timeout": COMMAND_TIMEOUT.schema("command"),
            },
            "required": ["command"],
            "additionalProperties": False,
        },
        execute=execute,
        read_only=False,
    )
