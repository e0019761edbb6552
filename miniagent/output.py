"""Structured output: an agent's final answer as one JSON value valid against a schema.

DESIGN.md "Structured output": with ``run_agent(output_schema=...)``, a turn that ends with text
and no calls must be one JSON value valid against the schema. Valid: the run is ``complete`` and
``RunResult.output`` holds the value. Invalid or not JSON: a user message quoting the problem
(``feedback``) is committed and the loop goes on within ``max_turns``. Text holding a fenced
```json block (prose around it allowed) counts as that block's value.

- ``OutputSchema.of(schema_or_type)``: a JSON Schema object as is, or a type hint (a dataclass,
  a ``TypedDict``, ``list[int]``, ...) whose schema ``miniagent.schema`` builds; the output is then
  converted to that type (a dataclass instance, an Enum member, ...).
- ``OutputSchema.parse(text) -> (value, problem)``: exactly one of them is meaningful.
- ``output_instruction(schema)``: the prompt text for providers that cannot constrain the output.
- ``strict_compatible(schema)``: whether OpenAI's strict mode accepts the schema.

Invariant: the check is the loop's, always (``validation.check_value``), whatever a provider asked
for natively; standard library only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ._json import loads
from ._strict import strict_problem
from .messages import Message
from .validation import check_value

if TYPE_CHECKING:
    import threading

__all__ = [
    "OutputSchema",
    "output_instruction",
    "with_output_instruction",
    "is_feedback",
    "strict_compatible",
    "parse_output",
]

FEEDBACK_PREFIX = "Your answer is not valid: "

_FENCE = r"```[ \t]*(?:json|JSON)?[ \t]*\r?\n(.*?)```"


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_output(
    text: str, schema: Any, cancel: threading.Event | None = None
) -> tuple[Any, str | None]:
    """Decode ``text`` as one JSON value and check it against ``schema``.

    The whole text is tried first; if it is not JSON, the first fenced code block (```json or
    plain ```) is. ``NaN``/``Infinity`` are refused (not JSON), so is a value nested deeper than
    ``miniagent._json.MAX_DEPTH``. The check is ``validation.check_value``: ``cancel`` stops it
    (the problem then says so), as does its default time limit.

    Returns:
        ``(value, None)`` when valid; ``(None, problem)`` otherwise, where ``problem`` is e.g.
        ``"the answer is not JSON: Expecting value: line 1 column 1 (char 0)"`` or
        ``"answer.lines: expected integer, got string"``.
    """
    try:
        value = loads(text, parse_constant=_refuse_constant)
    except ValueError as exc:
        fenced = re.search(_FENCE, text, re.DOTALL)
        if fenced is None:
            return None, f"the answer is not JSON: {exc}"
        try:
            value = loads(fenced.group(1), parse_constant=_refuse_constant)
        except ValueError as inner:
            return None, f"the ```json block of the answer is not JSON: {inner}"
    problem = check_value(schema, value, "answer", cancel=cancel)
    return (None, problem) if problem else (value, None)


def _compact(schema: Any) -> str:
    return json.dumps(schema, ensure_ascii=False, separators=(",", ":"))


def output_instruction(schema: Any) -> str:
    """The instruction a provider adds to the system prompt when it cannot ask for structured
    output natively (e.g. Anthropic models without structured outputs)."""
    return (
        "When you give your final answer (a turn without tool calls), reply with only one JSON "
        "value, no prose, that is valid against this JSON Schema: " + _compact(schema)
    )


def with_output_instruction(system: str, schema: dict[str, Any] | None) -> str:
    """``system`` with ``output_instruction(schema)`` appended (``system`` as is without one)."""
    if schema is None:
        return system
    return f"{system}\n\n{output_instruction(schema)}" if system else output_instruction(schema)


def is_feedback(message: Message) -> bool:
    """Whether ``message`` is the loop's answer to an invalid structured answer (``feedback``)."""
    return message.role == "user" and message.content.startswith(FEEDBACK_PREFIX)


@dataclass(frozen=True, slots=True)
class OutputSchema:
    """The schema of a run's final answer and the conversion of a valid answer.

    Args:
        schema: the JSON Schema (a dict).
        convert: maps a valid decoded value to what ``RunResult.output`` holds (``None``: as is).
    """

    schema: dict[str, Any]
    convert: Callable[[Any], Any] | None = None

    @classmethod
    def of(cls, spec: Any) -> OutputSchema:
        """From a JSON Schema dict, or a type hint (dataclass, TypedDict, ``list[int]``...).

        Raises:
            TypeError: ``spec`` is neither a dict nor a type with a JSON Schema form.
        """
        if isinstance(spec, dict):
            return cls(spec)
        from .schema import describe  # only runs that ask for a typed output pay for it

        described = describe(spec)
        return cls(described.schema, described.convert)

    def parse(self, text: str, cancel: threading.Event | None = None) -> tuple[Any, str | None]:
        """``(output, None)`` for a valid answer (converted), else ``(None, problem)``
        (``parse_output``; ``cancel`` stops the check)."""
        value, problem = parse_output(text, self.schema, cancel)
        if problem is not None or self.convert is None:
            return value, problem
        return self.convert(value), None

    def feedback(self, problem: str) -> str:
        """The user message committed after an invalid answer: it quotes the problem."""
        return (
            f"{FEEDBACK_PREFIX}{problem}. Reply with only one JSON value, no prose, "
            f"valid against this JSON Schema: {_compact(self.schema)}"
        )


def strict_compatible(schema: Any) -> bool:
    """Whether OpenAI's strict mode accepts ``schema``: every rule of its "Supported schemas" holds
    (``miniagent._strict.strict_problem`` lists and checks them: a root object, every object closed
    with all its properties required, supported keywords only, a ``$ref`` without siblings, the
    size limits...). A schema that breaks one is sent non-strict."""
    return strict_problem(schema) is None
