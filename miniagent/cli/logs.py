"""Logging of the CLI: the library's ``miniagent.*`` loggers are configured here, never by the
library itself."""

from __future__ import annotations

import sys

__all__ = ["configure_logging"]


def configure_logging(debug: bool) -> None:
    """With ``debug``, send every logger's records (DEBUG and up) to stderr."""
    if debug:
        import logging

        logging.basicConfig(level=logging.DEBUG, stream=sys.stderr, format="miniagent: %(name)s: %(message)s")
