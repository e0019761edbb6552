"""The exception of a usage problem found after parsing, in a module of its own so that every
module of the CLI can raise it without importing the checks (and what they import)."""

from __future__ import annotations

__all__ = ["UsageProblem"]


class UsageProblem(Exception):
    """A usage problem found after parsing (``EXIT_USAGE``); the message is the whole explanation."""
