"""Built-in tools: files confined to a workspace folder, text search and shell commands.

``default_tools(workspace)`` returns, in this order:

====================  ==========  ===========================================================
tool                  read_only   input
====================  ==========  ===========================================================
``read_file``         yes         ``path``, ``offset`` (1-based line), ``limit`` (lines)
``write_file``        no          ``path``, ``content``
``edit_file``         no          ``path``, ``old_text``, ``new_text``
``list_dir``          yes         ``path`` (default ``.``), ``depth``
``grep``              yes         ``pattern``, ``path`` (default ``.``), ``glob``, ``timeout``
``run_command``       no          ``command``, ``timeout`` (seconds)
====================  ==========  ===========================================================

Child processes: ``run_command`` and ``grep`` (whose search runs in a child so that a slow regular
expression can be cancelled or timed out) run in their own process group, stopped on cancel or
timeout. Secrets: they get an environment without secret variables -- ``OPENAI_API_KEY``,
``ANTHROPIC_API_KEY`` and any name that, upper-cased, is or ends with ``_API_KEY``, ``_APIKEY``,
``_TOKEN``, ``_SECRET``, ``_SECRET_KEY``, ``_PASSWORD``, ``_PASSWD``, ``_ACCESS_KEY``,
``_PRIVATE_KEY``, or contains ``SECRET_`` at its start or after ``_``
(``miniagent.process.environment``) -- and values of such variables (at least 8 characters) are
replaced with ``***`` in command output and in the result of every other tool (a ``.env`` file
read with ``read_file`` or found by ``grep``).
A tool that transforms a secret (base64, reversed) can still reveal it: redaction matches values.

Sandbox (``sandbox="workspace"``): ``run_command``'s commands and ``grep``'s child are confined by
the kernel (``miniagent.process.sandbox``: Landlock, seccomp, no capabilities): writes only
inside the workspace and a private temporary folder, no network, no secret folders read. Where
the kernel cannot do that, ``default_tools`` raises ``SandboxUnavailable`` -- it never hands out
tools that would run unconfined.

Modules: ``paths`` (confinement), ``timeouts`` (the timeout input), ``files``, ``search`` (with
its child ``_grep_worker``), ``shell`` (``run_command``). Child processes are
``miniagent.process``'s (own group, capped reading, group stop, registry, the secret-free
environment); decoding and bounded output are ``miniagent._capture``'s, shortening
``miniagent._text``'s (one marker) and redaction ``miniagent._redaction``'s.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from .._redaction import redactor
from .._text import cap
from ..process.environment import secret_values
from ..process.sandbox import sandbox_for
from ..tools import MIN_TOOL_OUTPUT_CHARS, TOOL_OUTPUT_CHARS, Tool, ToolResult
from .files import edit_file_tool, list_dir_tool, read_file_tool, write_file_tool
from .paths import OutsideWorkspaceError, Workspace
from .search import grep_tool
from .shell import run_command_tool, run_shell

__all__ = [
    "default_tools",
    "Workspace",
    "OutsideWorkspaceError",
    "cap",
    "run_shell",
    "read_file_tool",
    "write_file_tool",
    "edit_file_tool",
    "list_dir_tool",
    "grep_tool",
    "run_command_tool",
]

def default_tools(
    workspace: str | os.PathLike[str],
    *,
    max_output_chars: int = TOOL_OUTPUT_CHARS,
    command_env: Mapping[str, str] | None = None,
    sandbox: str = "none",
) -> list[Tool]:
    """Return the six built-in tools, confined to ``workspace``.

    Args:
        workspace: the folder the tools work in; every path must resolve inside it.
        max_output_chars: cap of each result in characters (head and tail kept, with a note
            giving the exact number of characters left out); default ``TOOL_OUTPUT_CHARS`` of
            ``miniagent.tools`` (``tool_output_chars`` fits it to a context budget).
        command_env: the environment of ``run_command``'s commands. ``None`` (default):
            ``os.environ`` at each call without its secret variables -- ``OPENAI_API_KEY``,
            ``ANTHROPIC_API_KEY`` and every name that, upper-cased, is or ends with
            ``_API_KEY``, ``_APIKEY``, ``_TOKEN``, ``_SECRET``, ``_SECRET_KEY``, ``_PASSWORD``,
            ``_PASSWD``, ``_ACCESS_KEY`` or ``_PRIVATE_KEY``, or contains ``SECRET_`` at its
            start or after ``_`` (``environment.is_secret_name``). A mapping: exactly that
            environment (copied now; nothing added or removed). Either way, values (>= 8
            characters) of secret variables of ``os.environ`` and of the command's environment are
            replaced with ``***`` in command output, and those of ``os.environ`` in every other
            tool's result.
        sandbox: ``"none"`` (default: commands run with the user's authority) or
            ``"workspace"``: ``run_command`` and ``grep``'s child run confined by the kernel
            (``miniagent.process.sandbox``: writes only inside the workspace and a private
            temporary folder named by ``TMPDIR``, no network, secret folders unreadable).

    Returns:
        ``[read_file, write_file, edit_file, list_dir, grep, run_command]``.

    Raises:
        SandboxUnavailable: ``sandbox="workspace"`` where the kernel cannot confine (not Linux,
            Landlock missing or older than ABI 4...) or the workspace holds a secret folder.
        NotADirectoryError: ``workspace`` is not an existing folder.
        ValueError: ``max_output_chars`` is below ``MIN_TOOL_OUTPUT_CHARS`` (``miniagent.tools``), or
            ``command_env`` has a name that is empty or contains ``=`` or NUL, or a value with NUL,
            or ``sandbox`` is not ``"none"`` or ``"workspace"``.
        TypeError: ``command_env`` has a name or value that is not a ``str``.
    """
    if max_output_chars < MIN_TOOL_OUTPUT_CHARS:
        raise ValueError(f"max_output_chars must be at least {MIN_TOOL_OUTPUT_CHARS}")
    root = Workspace(workspace)
    commands = sandbox_for(sandbox, root.root)
    search = sandbox_for(sandbox, root.root, writable=False)
    return [
        _redacting(read_file_tool(root, max_output_chars)),
        _redacting(write_file_tool(root)),
        _redacting(edit_file_tool(root)),
        _redacting(list_dir_tool(root, max_output_chars)),
        _redacting(grep_tool(root, max_output_chars, search)),
        run_command_tool(root, max_output_chars, env=command_env, sandbox=commands),  # redacts before its cap
    ]


def _redacting(tool: Tool) -> Tool:
    """``tool`` whose results have the values of secret variables of ``os.environ`` (read at each
    call) replaced with ``***``: a key in a file must not reach the record or the model."""
    execute = tool.execute

    def redacted(arguments: dict[str, Any], cancel: threading.Event | None) -> ToolResult:
        result = execute(arguments, cancel)
        values = secret_values(os.environ)
        if not values:
            return result
        return ToolResult(redactor(values)(result.content), result.is_error)

    return replace(tool, execute=redacted)
