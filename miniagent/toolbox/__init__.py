"""Built-in tools: files confined to a workspace folder, text search and shell commands.

``default_tools(workspace)`` returns, in this order:

====================  ==========  ===========================================================
tool                  read_only   input
====================  ==========  ===========================================================
``read_file``         yes         ``path``, ``offset`` (1-based line), ``limit`` (lines)
``write_file``        no          ``path``, ``content``
``edit_file``         no          ``path``, ``old_text``, ``new_text``
``list_dir``          yes         ``path`` (default ``.``), ``depth``
``grep``              yes         ``pattern``, ``path`` (default ``.``), ``glob``
``run_command``       no          ``command``, ``timeout`` (seconds)
====================  ==========  ===========================================================

Modules: ``paths`` (confinement), ``output`` (decoding and capping), ``files``, ``search``,
``shell``.
"""

from __future__ import annotations

import os

from ..tools import Tool
from .files import edit_file_tool, list_dir_tool, read_file_tool, write_file_tool
from .output import cap
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

MIN_OUTPUT_CHARS = 200


def default_tools(
    workspace: str | os.PathLike[str], *, max_output_chars: int = 30_000
) -> list[Tool]:
    """Return the six built-in tools, confined to ``workspace``.

    Args:
        workspace: the folder the tools work in; every path must resolve inside it.
        max_output_chars: cap of each result in characters (head and tail kept, with a note
            giving the exact number of characters left out).

    Returns:
        ``[read_file, write_file, edit_file, list_dir, grep, run_command]``.

    Raises:
        NotADirectoryError: ``workspace`` is not an existing folder.
        ValueError: ``max_output_chars`` is below 200.
    """
    if max_output_chars < MIN_OUTPUT_CHARS:
        raise ValueError(f"max_output_chars must be at least {MIN_OUTPUT_CHARS}")
    root = Workspace(workspace)
    return [
        read_file_tool(root, max_output_chars),
        write_file_tool(root),
        edit_file_tool(root),
        list_dir_tool(root, max_output_chars),
        grep_tool(root, max_output_chars),
        run_command_tool(root, max_output_chars),
    ]
