"""Paths named on the command line, checked by one rule while it is parsed: files
(``--session``, ``--log-file``, ``--output-schema``, ``--mcp-config``, ``session pop PATH``) and
the folder ``--workspace``.

Invariants:

- The check is a typer callback (``regular_files`` / ``folder``), so it runs while click parses,
  before logging, the ``--timeout`` clock or anything else starts. A path that exists and is not
  what the option wants (a FIFO, a socket, a device, or a folder where a file is wanted; a file
  where a folder is wanted), also through a symlink, is a usage error: exit 64 with one line that
  names the option, the path and what it is. It uses ``os.stat``, which never blocks on a FIFO.
- A missing path is left to the option's own rule (click's ``exists=True``; a session or log
  file that does not exist yet is created).
- The files are later opened through ``_regular.open_regular`` (non-blocking, checked on the
  descriptor), so a path swapped for a FIFO after parsing is refused as well, never waited on.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import typer

from .._regular import file_kind, regular_file_problem

__all__ = ["folder", "regular_files"]


def regular_files(value: Any) -> Any:
    """The callback of an option or argument naming files (one ``Path``, a list, or ``None``).

    Returns:
        ``value`` unchanged.

    Raises:
        typer.BadParameter: a path exists and is not a regular file (click adds the option).
    """
    for path in _paths(value):
        kind = regular_file_problem(path)
        if kind is not None:
            raise typer.BadParameter(f"{path} is {kind}, not a regular file")
    return value


def folder(value: Any) -> Any:
    """The callback of an option naming a folder (``--workspace``): a path that exists and is
    not a folder (a FIFO, a file) is refused at once.

    Raises:
        typer.BadParameter: the path exists and is not a folder.
    """
    for path in _paths(value):
        try:
            kind = file_kind(os.stat(path).st_mode)
        except (OSError, ValueError):
            continue  # missing: click's exists=True says so
        if kind != "a folder":
            raise typer.BadParameter(f"{path} is {kind}, not a folder")
    return value


def _paths(value: Any) -> list[Path]:
    if value is None:
        return []
    return [Path(item) for item in value] if isinstance(value, (list, tuple)) else [Path(value)]
