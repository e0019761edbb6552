"""Logging of the CLI: the library's ``miniagent.*`` loggers are configured here, never by the
library itself (see ``miniagent._log``).

- ``-v``: INFO records of ``miniagent.*`` on stderr (requests, tools, retries, stop reason);
  ``-vv``: DEBUG too (HTTP statuses).
- ``--log-file PATH``: DEBUG records of ``miniagent.*`` appended to PATH, with time and level
  (a new file is created ``0600``; a FIFO or device is refused, never waited on).
- ``--debug``: DEBUG records of every logger on stderr (tracebacks come from the runner).

The records hold names, counts, durations, statuses and reasons: never a key (tested). Every
line, on stderr and in the file, is written with its control characters as visible escapes
(``terminal.neutralise``), so what a server or a file name holds cannot drive the terminal.
"""

from __future__ import annotations

import os
import sys
from typing import IO, TYPE_CHECKING

from .._regular import open_regular
from .checks import UsageProblem
from .terminal import neutralise

if TYPE_CHECKING:
    from pathlib import Path

    from .options import Options

__all__ = ["configure_logging"]

_STDERR_FORMAT = "miniagent: %(name)s: %(message)s"  # shown without the name's "miniagent." prefix
_FILE_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def configure_logging(options: Options) -> None:
    """Send log records where ``--debug``, ``-v`` and ``--log-file`` say (nothing by default).

    Raises:
        UsageProblem: the ``--log-file`` cannot be opened for appending.
    """
    if not (options.debug or options.verbose or options.log_file):
        return
    import logging

    class Escaped(logging.Formatter):
        """A record's lines with their control characters as visible escapes (``neutralise``):
        a message may quote a server (a 503 body holding OSC 52 or BEL) or a file name."""

        def format(self, record: logging.LogRecord) -> str:
            return neutralise(super().format(record))

    class ShortNames(Escaped):
        """``miniagent: agent: ...``: the logger's name without the prefix the line starts with."""

        def format(self, record: logging.LogRecord) -> str:
            return super().format(record).replace("miniagent: miniagent.", "miniagent: ", 1)

    if options.debug:
        root = logging.getLogger()  # as logging.basicConfig: only when nothing is configured yet
        if not root.handlers:
            root_handler = logging.StreamHandler(sys.stderr)
            root_handler.setFormatter(ShortNames(_STDERR_FORMAT))
            root.addHandler(root_handler)
        root.setLevel(logging.DEBUG)
    ours = logging.getLogger("miniagent")
    levels: list[int] = []
    if options.verbose and not options.debug:
        level = logging.INFO if options.verbose == 1 else logging.DEBUG
        handler = logging.StreamHandler(sys.stderr)
        handler.setLevel(level)
        handler.setFormatter(ShortNames(_STDERR_FORMAT))
        ours.addHandler(handler)
        levels.append(level)
    if options.log_file is not None:
        file_handler = logging.StreamHandler(_open_log_file(options.log_file))
        file_handler.setLevel(logging.DEBUG)
        file_handler.setFormatter(Escaped(_FILE_FORMAT))
        ours.addHandler(file_handler)
        levels.append(logging.DEBUG)
    if levels:
        ours.setLevel(min(levels))


def _open_log_file(path: Path) -> IO[str]:
    """``--log-file`` opened for appending (created ``0600``) without blocking on a FIFO that
    replaced it after parsing (``_regular.open_regular``).

    Raises:
        UsageProblem: it cannot be opened, or is not a regular file.
    """
    try:
        fd = open_regular(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    except OSError as error:
        raise UsageProblem(f"cannot open --log-file {path}: {error.strerror or error}") from None
    return open(fd, "a", encoding="utf-8", errors="backslashreplace")
