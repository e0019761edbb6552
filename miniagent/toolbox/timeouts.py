"""The one vocabulary of tool timeouts: the input, its check and the notes in a result."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

__all__ = ["ToolTimeout"]


@dataclass(frozen=True, slots=True)
class ToolTimeout:
    """The timeout a tool takes as input, in seconds: default, maximum and the texts around it.

    Every tool that stops a child after a time uses one of these, so the model sees one
    vocabulary: the input ``timeout`` (a positive number of seconds), ``INVALID`` when it is not
    a finite one, ``[timeout lowered to the maximum of N s]`` when it is above the maximum, and
    ``[timed out after N s]`` (``timed_out``) in the result.

    Args:
        default: seconds when the input gives none.
        maximum: the largest accepted; larger finite values are lowered to it.
    """

    default: float
    maximum: float
    INVALID: ClassVar[str] = "timeout must be a positive, finite number of seconds"

    def resolve(self, raw: Any) -> tuple[float | None, list[str]]:
        """Return the timeout asked for (``raw``: a number or ``None``) and notes for the result.

        Returns:
            ``(seconds, notes)``; ``(None, [])`` when ``raw`` is not a positive finite number
            (zero, negative, NaN, infinity or ``1e400``, an integer too large for a float): the
            caller answers ``INVALID``. A finite value above ``maximum`` is lowered to it.
        """
        if raw is None:
            return self.default, []
        try:
            timeout = float(raw)
        except (OverflowError, TypeError, ValueError):  # OverflowError: an int such as 10**400
            return None, []
        if not 0 < timeout < math.inf:  # also refuses NaN, which would make the deadline never pass
            return None, []
        if timeout > self.maximum:
            return self.maximum, [f"[timeout lowered to the maximum of {self.maximum:g} s]"]
        return timeout, []

    def schema(self, what: str) -> dict[str, Any]:
        """The JSON Schema of the ``timeout`` input; ``what`` names what is stopped (``command``)."""
        return {
            "type": "number",
            "exclusiveMinimum": 0,
            "maximum": self.maximum,
            "description": f"Seconds before the {what} is stopped. "
            f"Default: {self.default:g}; at most {self.maximum:g}.",
        }

    @staticmethod
    def timed_out(seconds: float, hint: str = "") -> str:
        """The line that ends a timed-out result: ``[timed out after N s]`` (``; hint`` inside)."""
        return f"[timed out after {seconds:g} s; {hint}]" if hint else f"[timed out after {seconds:g} s]"
