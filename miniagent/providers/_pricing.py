"""Cost of a request: ``Pricer`` turns a request's ``Usage`` into US dollars (issue 15).

Where a price comes from, in order:

1. prices the user gave (``prices={"input": 3.0, "output": 15.0, "cache_read": 0.3,
   "cache_write": 3.75}``, US dollars per million tokens; cache prices default to the input
   price), e.g. ``{"input": 0, "output": 0}`` for a local model;
2. the ``genai-prices`` table (extra ``cost``), imported only when a price is first needed, for
   the provider (``anthropic``, ``openai``) or the base URL of an OpenAI-compatible server;
3. otherwise the cost is unknown: ``None``, never zero.

Invariant: usage fields follow ``miniagent.usage`` (``input_tokens`` includes the cached part),
which is also what ``genai_prices.Usage`` means by them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ..usage import PRICE_KEYS, Usage

__all__ = ["PRICE_KEYS", "Pricer", "check_prices"]

_PER = 1_000_000


def check_prices(prices: Mapping[str, float] | None) -> dict[str, float] | None:
    """Validate user prices (US dollars per million tokens).

    Raises:
        ValueError: an unknown key, a missing ``input`` or ``output``, or a price that is not a
            finite number >= 0.
    """
    if prices is None:
        return None
    unknown = sorted(set(prices) - set(PRICE_KEYS))
    if unknown:
        raise ValueError(f"unknown price key(s) {', '.join(unknown)}; known: {', '.join(PRICE_KEYS)}")
    for key in ("input", "output"):
        if key not in prices:
            raise ValueError(f"prices need {key!r} (US dollars per million tokens)")
    checked: dict[str, float] = {}
    for key, value in prices.items():
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
            or value < 0
        ):
            raise ValueError(
                f"price {key!r} must be a finite number >= 0 (US dollars per million tokens), got {value!r}"
            )
        checked[key] = float(value)
    checked.setdefault("cache_read", checked["input"])
    checked.setdefault("cache_write", checked["input"])
    return checked


class Pricer:
    """Prices one client's requests.

    Args:
        model: the model name as sent to the server.
        provider_id: ``genai-prices``'s provider id (``"anthropic"``, ``"openai"``), or ``None``
            to match the provider by ``base_url``.
        base_url: the API root (used when ``provider_id`` is ``None``).
        prices: the user's prices (see the module docstring), or ``None``.
    """

    def __init__(
        self, model: str, provider_id: str | None, base_url: str, prices: Mapping[str, float] | None
    ) -> None:
        """Check the prices; nothing is imported or looked up yet."""
        self.model = model
        self.provider_id = provider_id
        self.base_url = base_url
        self.prices = check_prices(prices)
        self._known: bool | None = None if self.prices is None else True

    def can_price(self) -> bool:
        """Whether a request's cost can be known: user prices, or a model the price table knows
        (imports ``genai-prices`` on first use; ``False`` without it)."""
        if self._known is None:
            self._known = self._table_cost(Usage(1, 1, requests=1)) is not None
        return self._known

    def priced(self, usage: Usage) -> Usage:
        """``usage`` with ``cost_usd`` set (``None`` when it cannot be known)."""
        return replace(usage, cost_usd=self.cost(usage))

    def cost(self, usage: Usage) -> float | None:
        """The cost of ``usage`` in US dollars, or ``None`` (also for token counts too large to
        price: never an ``OverflowError``)."""
        if self.prices is not None:
            p = self.prices
            fresh = max(usage.input_tokens - usage.cache_read_tokens - usage.cache_write_tokens, 0)
            try:
                total = (
                    fresh * p["input"]
                    + usage.cache_read_tokens * p["cache_read"]
                    + usage.cache_write_tokens * p["cache_write"]
                    + usage.output_tokens * p["output"]
                )
            except OverflowError:  # a count past float's range
                return None
            return total / _PER if math.isfinite(total) else None
        if self._known is False:
            return None
        cost = self._table_cost(usage)
        self._known = cost is not None
        return cost

    def _table_cost(self, usage: Usage) -> float | None:
        try:
            import genai_prices
        except ImportError:
            return None
        table_usage = genai_prices.Usage(
            input_tokens=usage.input_tokens,
            cache_read_tokens=usage.cache_read_tokens,
            cache_write_tokens=usage.cache_write_tokens,
            output_tokens=usage.output_tokens,
        )
        where: dict[str, Any] = (
            {"provider_id": self.provider_id} if self.provider_id else {"provider_api_url": self.base_url}
        )
        try:
            result = genai_prices.calc_price(table_usage, self.model, **where)
            total = float(result.total_price)
        except LookupError:
            return None
        except (ArithmeticError, ValueError):  # counts too large for the table's arithmetic
            return None
        return total if math.isfinite(total) else None
