"""A run's budgets (DESIGN.md, "Budgets"): token and cost limits, and the usage they count.

Invariants:

- The budgets count this run's ``usage`` only (the restored history's requests do not count),
  and are checked before each request (``Budget.reached``), so the last turn's calls have all
  been answered when a run stops with ``max_budget``.
- An unknown cost is never counted as zero: a cost limit with a client that says it cannot
  price its model is refused before anything is written (``Budget.checked``), and a request
  that came without a cost makes ``reached`` raise.
- Unknown usage is never counted as zero either: a request whose stream brought no
  ``UsageEvent`` still counts as a request (``Tally.add_unreported``), and with either limit set
  makes ``reached`` raise (the server never said what it used).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .model import ModelClient
from .usage import Usage

__all__ = ["NO_USAGE", "UNPRICED", "Budget", "Tally"]

UNPRICED = (
    "max_cost_usd needs the cost of each request, but the client cannot price its model: pass "
    "prices={'input': ..., 'output': ...} (US dollars per million tokens) to create_client, or "
    "install the price table with pip install 'miniagent[cost]'"
)
"""The text of the ``ValueError`` for a cost limit whose cost cannot be known."""

NO_USAGE = (
    "the budget (max_total_tokens / max_cost_usd) needs each request's usage, but the server "
    "reported none for {count} of this run's requests, so what they used is unknown (an "
    "OpenAI-compatible server sends it when asked with stream_options.include_usage; use a "
    "server that does, or run without the budget)"
)
"""The text of the ``ValueError`` for a budget whose requests came without usage."""


@dataclass(frozen=True, slots=True)
class Budget:
    """A run's token and cost limits (DESIGN.md, "Budgets"), checked before each request."""

    max_total_tokens: int | None
    max_cost_usd: float | None

    @classmethod
    def checked(cls, max_total_tokens: object, max_cost_usd: object, client: ModelClient) -> Budget | None:
        """The budget of ``run_agent``'s arguments, or ``None`` when there is none.

        Raises:
            ValueError: a limit of the wrong type or range, or a cost limit for a client that
                says it cannot price its model.
        """
        tokens, cost = max_total_tokens, max_cost_usd
        if tokens is None and cost is None:
            return None
        if tokens is not None and (isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 0):
            raise ValueError(f"max_total_tokens must be an int >= 0, got {tokens!r}")
        if cost is not None:
            if isinstance(cost, bool) or not isinstance(cost, (int, float)) or not 0 <= cost < math.inf:
                raise ValueError(f"max_cost_usd must be a finite number >= 0 (US dollars), got {cost!r}")
            can_price = getattr(client, "can_price", None)
            if callable(can_price) and not can_price():
                raise ValueError(UNPRICED)
        return cls(tokens, None if cost is None else float(cost))

    def reached(self, usage: Tally) -> bool:
        """Whether ``usage`` (this run's so far) has reached a limit.

        Raises:
            ValueError: requests were made whose usage the server did not report (``NO_USAGE``),
                or a cost limit and requests were made whose cost is unknown (``UNPRICED``).
        """
        if self.max_total_tokens is not None and usage.input + usage.output >= self.max_total_tokens:
            return True  # the reported tokens alone reach it
        if usage.unreported:
            raise ValueError(NO_USAGE.format(count=usage.unreported))
        if self.max_cost_usd is None:
            return False
        if usage.unpriced:
            raise ValueError(UNPRICED)
        return usage.cost >= self.max_cost_usd


class Tally:
    """This run's usage as running sums: ``Usage`` addition without a new object per request
    (the loop adds one per turn). ``total()`` is the ``Usage`` that summing the events gives."""

    __slots__ = (
        "cache_read",
        "cache_write",
        "cost",
        "input",
        "output",
        "priced",
        "reasoning",
        "requests",
        "unpriced",
        "unreported",
    )

    def __init__(self) -> None:
        self.input = self.output = self.cache_read = self.cache_write = self.requests = 0
        self.unreported = 0  # requests whose usage never came
        self.reasoning = 0
        self.cost = 0.0
        self.priced = False  # some usage came with a cost
        self.unpriced = False  # some request came without one: the total cost is unknown

    def add(self, usage: Usage) -> None:
        """Add one ``UsageEvent``'s usage."""
        self.input += usage.input_tokens
        self.output += usage.output_tokens
        self.cache_read += usage.cache_read_tokens
        self.cache_write += usage.cache_write_tokens
        self.requests += usage.requests
        self.unreported += usage.unreported_requests
        self.reasoning += usage.reasoning_tokens
        if usage.cost_usd is not None:
            self.cost += usage.cost_usd
            self.priced = True
        elif usage.requests:
            self.unpriced = True

    def add_unreported(self) -> None:
        """Count one request whose stream brought no usage: a request, tokens unknown, cost unknown."""
        self.requests += 1
        self.unreported += 1
        self.unpriced = True

    def total(self) -> Usage:
        """The sum as a ``Usage`` (cost ``None`` when unknown or never reported)."""
        cost = self.cost if self.priced and not self.unpriced else None
        return Usage(
            self.input,
            self.output,
            self.cache_read,
            self.cache_write,
            self.requests,
            cost,
            self.unreported,
            self.reasoning,
        )
