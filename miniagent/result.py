"""What a run returns: ``RunResult``, its ``StopReason`` and the exit code of each
(``exit_code_for_stop_reason``; DESIGN.md "Public API", "Round 3 contracts").

Invariants: a ``RunResult`` crosses process boundaries as JSON (``to_json`` / ``from_json``: a
task queue, a web API) and comes back equal, except ``output`` (the caller decodes it from the
last answer again); each of the six stop reasons has its own exit code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from .messages import Message, ToolCall, call_from_json, call_to_json
from .usage import Usage

__all__ = ["StopReason", "RunResult", "exit_code_for_stop_reason"]

StopReason = Literal["complete", "max_turns", "aborted", "max_budget", "deferred", "no_progress"]

_EXIT_CODES: dict[str, int] = {
    "complete": 0,
    "max_turns": 2,
    "max_budget": 3,
    "deferred": 4,
    "no_progress": 5,
    "aborted": 130,
}


@dataclass(slots=True)
class RunResult:
    """What a run returns: the whole record (restored history included), why it stopped, and
    what this run's model requests used (the sum of their ``UsageEvent``s; a request that
    reported none counts in ``requests`` and ``unreported_requests``, its cost unknown).

    ``output``: with ``run_agent(output_schema=...)`` and stop reason ``complete``, the final
    answer decoded from JSON (converted to the type when the schema was given as a type);
    otherwise ``None``.

    ``pending``: with stop reason ``deferred``, the calls that wait for a decision, in order
    (the deferred call and the later calls of its turn); empty otherwise.
    """

    messages: list[Message]
    stop_reason: StopReason
    usage: Usage = field(default_factory=Usage)
    output: Any = None
    pending: tuple[ToolCall, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The JSON object of this result, to cross a process boundary (a task queue, a web API):
        ``{"messages": [Message.to_json(), ...], "stop_reason", "usage": Usage.to_json(),
        "pending": [{"id", "name", "input"}, ...]}``."""
        return {
            "messages": [message.to_json() for message in self.messages],
            "stop_reason": self.stop_reason,
            "usage": self.usage.to_json(),
            "pending": [call_to_json(call) for call in self.pending],
        }

    @classmethod
    def from_json(cls, data: Any) -> RunResult:
        """The result of ``to_json``'s object (a dict, or its JSON text as ``str`` / ``bytes``).

        Raises:
            ValueError: not JSON, not an object, an unknown stop reason, or a bad message or usage.
        """
        if isinstance(data, (str, bytes, bytearray)):
            from ._json import loads

            data = loads(data)
        if type(data) is not dict:
            raise ValueError("a run result is a JSON object")
        stop_reason = data.get("stop_reason")
        if stop_reason not in _EXIT_CODES:
            raise ValueError(f"unknown stop reason: {stop_reason!r}")
        messages = data.get("messages", [])
        if type(messages) is not list:
            raise ValueError("messages is not a list")
        usage = Usage.from_json(data["usage"]) if data.get("usage") is not None else Usage()
        pending = data.get("pending", [])
        if type(pending) is not list:
            raise ValueError("pending is not a list")
        calls = tuple(call_from_json(item) for item in pending)
        return cls([Message.from_json(item) for item in messages], stop_reason, usage, pending=calls)


def exit_code_for_stop_reason(stop_reason: StopReason) -> int:
    """Map a stop reason to a process exit code: complete 0, max_turns 2, max_budget 3,
    deferred 4, no_progress 5, aborted 130 (DESIGN.md "Round 3 contracts").

    Raises:
        ValueError: not one of the six stop reasons.
    """
    try:
        return _EXIT_CODES[stop_reason]
    except KeyError:
        raise ValueError(f"unknown stop reason: {stop_reason!r}") from None
