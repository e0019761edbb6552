"""The ``miniagent.mcp`` logger, imported on first use (``logging`` costs a few milliseconds of
start-up that ``import miniagent.mcp`` does not pay; the transports, loaded when a server
starts, use ``logging`` directly)."""

from __future__ import annotations

from typing import Any

__all__ = ["log"]

DEBUG, INFO, WARNING, ERROR, CRITICAL = 10, 20, 30, 40, 50  # the ``logging`` levels


def log(level: int, message: str, *args: Any) -> None:
    """``logging.getLogger("miniagent.mcp").log(level, message, *args)``."""
    import logging

    logging.getLogger("miniagent.mcp").log(level, message, *args)
