"""What one server's client knows that must never be written: ``Secrets``.

Invariants:

- A ``Secrets`` holds every secret value the client knows for one server: the values of this
  process's secret variables and of the server's ``env``, every header value (and its part
  after a scheme such as ``Bearer``), and the OAuth tokens and client secret once known
  (``add``). Values shorter than ``MIN_REDACTED_CHARS`` are not hidden (too short to be keys,
  and hiding them would blank ordinary text).
- ``redact(text)`` hides them, and ``Bearer`` tokens, ``authorization`` / ``api_key`` values and
  URL queries a server echoes (``_redaction.redact``); it runs on every text the client writes
  about a server: errors (``MCPError``) and log lines (stderr, log notifications, skipped
  stdout lines). ``hide(text)`` hides the known values only: tool results, whose URLs and
  words the model needs.
- ``clean(text)`` is ``redact`` plus terminal escapes made visible (``approval.visible``), for
  the server's own words that reach a log line.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from ._errors import MCPError

if TYPE_CHECKING:
    from .._redaction import Redactor

MIN_REDACTED_CHARS = 8  # _redaction.MIN_REDACTED_CHARS (that module is imported when first used)

__all__ = ["Secrets"]


class Secrets:
    """The secret values of one server's client (see the module docstring); thread-safe.

    Args:
        values: the values known at the start.
    """

    def __init__(self, values: Iterable[str] = ()) -> None:
        """Keep the values of at least ``MIN_REDACTED_CHARS`` characters."""
        import threading  # here: importing the package starts no thread machinery

        self._lock = threading.Lock()
        self._values: set[str] = set()
        self._redactor: Redactor | None = None
        for value in values:
            self.add(value)

    def add(self, value: str | None) -> None:
        """Hide ``value`` (and its part after a scheme word such as ``Bearer``) from now on."""
        if not value:
            return
        with self._lock:
            for part in (value, value.partition(" ")[2]):
                if len(part) >= MIN_REDACTED_CHARS and part not in self._values:
                    self._values.add(part)
                    self._redactor = None

    def hide(self, text: str) -> str:
        """``text`` with every known value replaced by ``***``."""
        from .._redaction import Redactor

        with self._lock:
            if self._redactor is None:
                self._redactor = Redactor(self._values)
            redactor = self._redactor
        return redactor(text)

    def redact(self, text: str) -> str:
        """``hide(text)``, and ``Bearer`` tokens, credential fields and URL queries hidden."""
        from .._redaction import redact

        return redact(self.hide(text))

    def clean(self, text: str) -> str:
        """``redact(text)`` with control characters shown as visible escapes (for log lines)."""
        from ..approval import visible

        return visible(self.redact(text))

    def error(self, error: MCPError) -> MCPError:
        """``error`` again, its text redacted (the same ``server``, ``kind`` and ``code``)."""
        text = str(error)
        clean = self.redact(text)
        if clean == text:
            return error
        return MCPError(clean, server=error.server, kind=error.kind, code=error.code)
