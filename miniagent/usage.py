"""Token usage and cost of model requests: ``Usage`` (DESIGN.md, "Round 2 contracts").

Invariants:

- ``input_tokens`` counts every input token of a request, cached ones included;
  ``cache_read_tokens`` and ``cache_write_tokens`` say which part of them came from / went to a
  prompt cache (so both are at most ``input_tokens``). Providers normalise to this (Anthropic's
  own ``input_tokens`` excludes the cached part).
- ``cost_usd`` is ``None`` when unknown; an unknown cost is never counted as zero: adding a usage
  whose cost is unknown gives an unknown total. ``Usage()`` (no requests) is the neutral element.
- ``reasoning_tokens`` is the part of ``output_tokens`` the model spent reasoning (OpenAI
  ``output_tokens_details.reasoning_tokens``), so it is at most ``output_tokens``; 0 when the
  server does not say.
- ``requests`` counts every request, reported or not; ``unreported_requests`` says how many of
  them came without usage (the server sent none): their tokens are in no count, so the token
  counts are then a lower bound and the cost is unknown.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["PRICE_KEYS", "Usage", "price_table_installed"]

PRICE_KEYS = ("input", "output", "cache_read", "cache_write")
"""The keys of a ``prices`` mapping (US dollars per million tokens of each kind), in order."""


def price_table_installed() -> bool:
    """Whether the ``genai-prices`` table (extra ``cost``) can be imported (not imported here)."""
    import importlib.util

    try:
        return importlib.util.find_spec("genai_prices") is not None
    except (ImportError, ValueError):
        return False


_INT_FIELDS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "requests",
    "unreported_requests",
    "reasoning_tokens",
)


@dataclass(frozen=True, slots=True)
class Usage:
    """What model requests used: tokens, requests and cost.

    Args:
        input_tokens: input (prompt) tokens, cached ones included.
        output_tokens: output (completion) tokens, reasoning tokens included.
        cache_read_tokens: the part of ``input_tokens`` read from a prompt cache.
        cache_write_tokens: the part of ``input_tokens`` written to a prompt cache.
        requests: how many model requests this covers (a ``UsageEvent`` carries 1).
        cost_usd: the cost in US dollars, or ``None`` when it is not known.
        unreported_requests: how many of ``requests`` came without usage from the server
            (counted by the loop, which knows a request happened; their cost is unknown).
        reasoning_tokens: the part of ``output_tokens`` spent on reasoning, when reported.

    ``a + b`` adds field by field; the cost is ``None`` when either side's is ``None``, except
    that a usage of no requests with no cost (``Usage()``) adds nothing.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    requests: int = 0
    cost_usd: float | None = None
    unreported_requests: int = 0
    reasoning_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        """``input_tokens + output_tokens`` (what ``max_total_tokens`` budgets)."""
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        """Field-by-field sum (see the class docstring for the cost)."""
        if not isinstance(other, Usage):
            return NotImplemented
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.requests + other.requests,
            _add_cost(self, other),
            self.unreported_requests + other.unreported_requests,
            self.reasoning_tokens + other.reasoning_tokens,
        )

    def to_json(self) -> dict[str, Any]:
        """The JSON object of this usage: every field, ``cost_usd`` ``null`` when unknown."""
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "requests": self.requests,
            "cost_usd": self.cost_usd,
            "unreported_requests": self.unreported_requests,
            "reasoning_tokens": self.reasoning_tokens,
        }

    @classmethod
    def from_json(cls, data: Any) -> Usage:
        """Build a ``Usage`` from its JSON object (missing fields take their defaults).

        Raises:
            ValueError: not an object, a count that is not a non-negative int, or a cost that
                is not a finite number or null.
        """
        if type(data) is not dict:
            raise ValueError("usage is not a JSON object")
        counts: dict[str, int] = {}
        for name in _INT_FIELDS:
            value = data.get(name, 0)
            if type(value) is not int or value < 0:
                raise ValueError(f"usage {name} is not a non-negative integer")
            counts[name] = value
        cost = data.get("cost_usd")
        if cost is not None:
            if type(cost) not in (int, float) or cost != cost or cost in (float("inf"), float("-inf")):
                raise ValueError("usage cost_usd is not a finite number")
            cost = float(cost)
        return cls(**counts, cost_usd=cost)


def _add_cost(a: Usage, b: Usage) -> float | None:
    if a.cost_usd is None and a.requests == 0:
        return b.cost_usd
    if b.cost_usd is None and b.requests == 0:
        return a.cost_usd
    if a.cost_usd is None or b.cost_usd is None:
        return None
    return a.cost_usd + b.cost_usd
