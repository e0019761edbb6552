"""When and how long to wait before retrying a failed provider request.

The rules follow what the official OpenAI and Anthropic SDKs do: retry HTTP 408, 409, 429 and
5xx (Anthropic's 529 "overloaded" included) and connection errors; honour ``retry-after-ms`` and
``Retry-After`` (seconds or an HTTP date, RFC 9110 section 10.2.3) when it is at most
``max_retry_after`` seconds; otherwise exponential backoff with jitter. Waiting happens on the
run's cancel event, so a cancel ends the wait at once.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from urllib3.exceptions import InvalidHeader
from urllib3.util.retry import Retry

from ._errors import NEVER_RETRYABLE_KINDS, RETRYABLE_STATUSES

__all__ = ["RetryPolicy", "WaitFunction", "cancellable_wait", "retry_after_seconds"]

WaitFunction = Callable[["threading.Event | None", float], bool]
"""``wait(cancel, seconds) -> cancelled``: block up to ``seconds``; true when ``cancel`` was set."""

_RETRY_AFTER_PARSER = Retry(total=0, retry_after_max=10**9)


def cancellable_wait(cancel: threading.Event | None, seconds: float) -> bool:
    """Wait ``seconds`` (non-negative float) on ``cancel``; return ``True`` if it was set.

    Without a cancel event this simply sleeps and returns ``False``.
    """
    if cancel is None:
        threading.Event().wait(seconds)
        return False
    return cancel.wait(seconds)


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """The server's requested delay in seconds, or ``None`` when it gave none (or garbage).

    Args:
        headers: response headers (case-insensitive mapping, e.g. ``requests`` headers).

    Reads ``retry-after-ms`` (milliseconds, sent by OpenAI and Anthropic) first, then
    ``Retry-After`` as delta-seconds (integer or decimal) or an HTTP date (parsed by
    ``urllib3.util.Retry.parse_retry_after`` against the current ``time.time()``; a date in the
    past gives 0).
    """
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            value = float(millis) / 1000.0
            if value >= 0:
                return value
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if not raw:
        return None
    try:
        value = float(raw)
        return value if value >= 0 else None
    except ValueError:
        pass
    try:
        return _RETRY_AFTER_PARSER.parse_retry_after(raw)
    except InvalidHeader:
        return None


@dataclass(frozen=True)
class RetryPolicy:
    """How a client retries a request that failed before its first event.

    Args:
        max_retries: retries after the first attempt (0 disables retrying).
        backoff_base: first backoff delay in seconds; attempt ``n`` (0-based) waits
            ``min(backoff_max, backoff_base * 2**n)`` scaled by a random factor in [0.75, 1].
        backoff_max: upper bound of a computed backoff delay, seconds.
        max_retry_after: a server-requested delay (``Retry-After``) up to this many seconds is
            honoured exactly; a longer one is replaced by the computed backoff (as the SDKs do).
        wait: ``wait(cancel, seconds) -> cancelled``; the default waits on the cancel event.
            Tests inject a recorder here.
    """

    max_retries: int = 3
    backoff_base: float = 0.5
    backoff_max: float = 8.0
    max_retry_after: float = 60.0
    wait: WaitFunction = field(default=cancellable_wait)

    def status_is_retryable(self, status: int, headers: Mapping[str, str], kind: str | None = None) -> bool:
        """Whether an HTTP ``status`` may succeed on retry (``x-should-retry`` overrides); never
        when the error body's type ``kind`` is one no retry can fix (``NEVER_RETRYABLE_KINDS``:
        OpenAI's 429 ``insufficient_quota``)."""
        hint = (headers.get("x-should-retry") or "").strip().lower()
        if hint in ("true", "false"):
            return hint == "true"
        if kind in NEVER_RETRYABLE_KINDS:
            return False
        return status in RETRYABLE_STATUSES or status >= 500

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number ``attempt + 1`` (``attempt`` 0-based).

        Args:
            attempt: how many retries were already made.
            retry_after: the server's requested delay in seconds, if any.
        """
        if retry_after is not None and 0 <= retry_after <= self.max_retry_after:
            return retry_after
        base = min(self.backoff_max, self.backoff_base * (2.0**attempt))
        return base * (1.0 - 0.25 * random.random())
