"""Logging of the CLI: the library's ``miniagent.*`` loggers are configured here, never by the
library itself (see ``miniagent._log``).

- ``-v``: INFO records of ``miniagent.*`` on stderr (requests, tools, retries, stop reason);
  ``-vv``: DEBUG too (HTTP statuses).
- ``--log-file PATH``: DEBUG records of ``miniagent.*`` appended to PATH, with time and level.
- ``--debug``: DEBUG records of every logger on stderr (tracebacks come from the runner).

The records hold names, counts, durations, statuses and reasons: never a key (tested).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from .checks import UsageProblem

if TYPE_CHECKING:
    from .options import Options

__all__ = ["configure_logging"]

_STDERR_FORMAT = "miniagent: %(name)s: %(message)s"
_FILE_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def configure_logging(options: Options) -> None:
    """Send log records where ``--debug``, ``-v`` and ``--log-file`` say (nothing by default).

    Raises:
        UsageProblem: the ``--log-file`` cannot be opened for appending.
    """
    if not (options.debug or options.verbose or options.log_file):
        return
    import logging

    if options.debug:
        logging.basicConfig(level=logging.DEBUG, stream=sys.stderr, format=_STDERR_FORMAT)
    ours = logging.getLogger("miniagent")
    levels: list[int] = []
    if options.verbose and not options.debug:
        level = logging.INFO if options.verbose == 1 else logging.DEBUG
        handler = logging.StreamHandler(sys.stderr)
        handler.setLevel(level)
        handler.setFormatter(logging.Formatter(_STDERR_FORMAT))
        ours.addHandler(handler)
        levels.append(level)
    if options.log_file is not None:
        try:
            file_handler = logging.FileHandler(options.log_file, encoding="utf-8", delay=False)
        except OSError as error:
            raise UsageProblem(
                f"cannot open --log-file {options.log_file}: {error.strerror or error}"
            ) from None
        file_handler.setLevel(logging.DEBUG)
        file_handler.setFormatter(logging.Formatter(_FILE_FORMAT))
        ours.addHandler(file_handler)
        levels.append(logging.DEBUG)
    if levels:
        ours.setLevel(min(levels))
