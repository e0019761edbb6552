"""Loggers of the library (``miniagent.*``) that cost nothing until an application logs.

The library never configures logging (no handler, no level): records go wherever the
application sends the ``miniagent`` loggers (the CLI: ``-v``/``--verbose`` to stderr, ``--log-file``).
So that ``import miniagent`` does not import ``logging`` (a few milliseconds of start-up), a
``Logger`` here looks ``logging`` up in ``sys.modules``: when no code of the process imported it,
nothing can have been configured to receive a record, and the call returns at once.

Invariant: log texts carry names, counts, durations, statuses and reasons, never keys, header
values, URLs with credentials or message content.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["DEBUG", "INFO", "WARNING", "Logger"]

DEBUG, INFO, WARNING = 10, 20, 30


class Logger:
    """A ``logging.getLogger(name)`` resolved on first use once ``logging`` is imported."""

    __slots__ = ("_logger", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        self._logger: Any = None

    def log(self, level: int, message: str, *args: object) -> None:
        """``logging.Logger.log(level, message, *args)`` when ``logging`` is in use, else nothing."""
        logger = self._resolved()
        if logger is not None and logger.isEnabledFor(level):
            logger.log(level, message, *args)

    def enabled(self, level: int) -> bool:
        """Whether a record of ``level`` would reach a handler now (``False`` without ``logging``).

        Callers on a hot path ask once (the loop: once per run) and skip building their records.
        """
        logger = self._resolved()
        return logger is not None and bool(logger.isEnabledFor(level))

    def _resolved(self) -> Any:
        """The ``logging`` logger of this name, once ``logging`` is imported; ``None`` before."""
        if self._logger is None:
            logging = sys.modules.get("logging")
            if logging is not None:
                self._logger = logging.getLogger(self.name)
        return self._logger

    def debug(self, message: str, *args: object) -> None:
        """A DEBUG record (see ``log``)."""
        self.log(DEBUG, message, *args)

    def info(self, message: str, *args: object) -> None:
        """An INFO record (see ``log``)."""
        self.log(INFO, message, *args)

    def warning(self, message: str, *args: object) -> None:
        """A WARNING record (see ``log``)."""
        self.log(WARNING, message, *args)
