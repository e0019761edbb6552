"""Decoded JSON values as JSON Schema compares them (standard library only).

- ``json_equal(a, b)``: equality of ``enum``, ``const`` and ``uniqueItems``: ``1 == 1.0``, but
  ``true != 1`` and ``false != 0``, also inside arrays and objects.
- ``first_duplicate(items)``: the first pair of equal items, in one pass over hashed canonical
  forms (time linear in the total size, where comparing every pair would be quadratic).
- ``is_multiple(value, divisor)``: ``multipleOf`` in exact decimal arithmetic, as the JSON texts
  of the numbers say (``0.07`` is a multiple of ``0.01``; binary floating point says it is not),
  for numbers of any size (``10 ** 400``) without overflow.
- ``show(value)``: a value as JSON for an error text, at most ``SHOW_MAX`` characters, built only
  as far as it is shown (a huge value costs no more than a small one).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fractions import Fraction

__all__ = ["SHOW_MAX", "json_equal", "first_duplicate", "is_multiple", "show"]

SHOW_MAX = 60  # characters of a value quoted in an error text


def json_equal(a: Any, b: Any) -> bool:
    """Equality of two decoded JSON values as JSON Schema defines it (``enum``, ``const``,
    ``uniqueItems``): ``1 == 1.0``, but ``true != 1`` and ``false != 0``, also inside arrays and
    objects."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, list):
        if not isinstance(b, list) or len(a) != len(b):
            return False
        return all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return (
            isinstance(b, dict)
            and a.keys() == b.keys()
            and all(json_equal(item, b[key]) for key, item in a.items())
        )
    if isinstance(b, (list, dict)):
        return False
    return bool(a == b)


class _Bool:
    """The canonical form of ``true``/``false``: equal only to itself (never to ``1``/``0``)."""

    __slots__ = ("value",)

    def __init__(self, value: bool) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Bool) and other.value is self.value

    def __hash__(self) -> int:
        return hash((_Bool, self.value))


_TRUE, _FALSE = _Bool(True), _Bool(False)


def _canonical(value: Any) -> Any:
    """A hashable form of ``value``; two forms are equal exactly when ``json_equal`` says so
    (numbers stay numbers: Python's ``1 == 1.0`` and their equal hashes are JSON's rule)."""
    if value is True or value is False:
        return _TRUE if value else _FALSE
    if isinstance(value, (str, int, float)) or value is None:
        return value
    if isinstance(value, list):
        return ("array", tuple(_canonical(item) for item in value))
    if isinstance(value, dict):
        return ("object", frozenset((key, _canonical(item)) for key, item in value.items()))
    try:
        hash(value)
    except TypeError:
        return ("unhashable", id(value))
    return value


def first_duplicate(items: list[Any], spend: Callable[[int], None]) -> tuple[int, int] | None:
    """``(i, j)`` with ``i < j`` for the first item ``j`` equal (``json_equal``) to an earlier
    item ``i``, or ``None`` when all are unique. ``spend(n)`` is called as the work goes (for a
    caller that stops on a cancel or a deadline)."""
    seen: dict[Any, int] = {}
    for index, item in enumerate(items):
        if index & 1023 == 0:
            spend(1024)
        if isinstance(item, (list, dict)):
            spend(len(item))
        key = _canonical(item)
        first = seen.setdefault(key, index)
        if first != index:
            return first, index
    return None


def _exact(number: int | float) -> Fraction:
    """A number as the decimal its JSON text wrote (``repr`` is the shortest text that reads
    back as the same float, which is the JSON text for every number a person writes)."""
    from fractions import Fraction  # imported by the first multipleOf on a float only

    if isinstance(number, int):
        return Fraction(number)
    return Fraction(repr(number))


def is_multiple(value: int | float, divisor: int | float) -> bool:
    """Whether ``value`` is an integer multiple of ``divisor`` (``> 0``), exactly."""
    if type(value) is int and type(divisor) is int:
        return value % divisor == 0
    if any(isinstance(n, float) and not math.isfinite(n) for n in (value, divisor)):
        return False
    return (_exact(value) / _exact(divisor)).denominator == 1


def show(value: Any) -> str:
    """``value`` as JSON for an error text, shortened to about ``SHOW_MAX`` characters."""
    pieces: list[str] = []
    _render(value, pieces, [SHOW_MAX + 1], 0)
    text = "".join(pieces)
    return text if len(text) <= SHOW_MAX else text[: SHOW_MAX - 3] + "..."


def _scalar(value: Any, room: int) -> str:
    if isinstance(value, str):
        value = value[:room]
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):  # not JSON, or an integer too long to write
        return repr(value)[:room] if not isinstance(value, int) else "(a very large integer)"


def _render(value: Any, pieces: list[str], room: list[int], depth: int) -> None:
    """Append the JSON text of ``value`` to ``pieces`` until ``room[0]`` characters are used."""
    if room[0] <= 0:
        return
    if depth > 40 or not isinstance(value, (list, dict)):
        text = "..." if isinstance(value, (list, dict)) else _scalar(value, room[0])
        pieces.append(text)
        room[0] -= len(text)
        return
    is_list = isinstance(value, list)
    pieces.append("[" if is_list else "{")
    room[0] -= 1
    entries: Any = enumerate(value) if isinstance(value, list) else value.items()
    for index, (key, item) in enumerate(entries):
        if room[0] <= 0:
            return
        if index:
            pieces.append(", ")
            room[0] -= 2
        if not is_list:
            name = _scalar(str(key), room[0]) + ": "
            pieces.append(name)
            room[0] -= len(name)
        _render(item, pieces, room, depth + 1)
    pieces.append("]" if is_list else "}")
    room[0] -= 1
