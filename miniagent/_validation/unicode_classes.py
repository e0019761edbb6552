"""``re`` class members for ECMA-262 ``\\p{...}`` property escapes, from ``unicodedata``.

Supported names: every General_Category value by its short name, long name or alias (``L``,
``Letter``; ``Nd``, ``Decimal_Number``, ``digit``; ...), also written ``General_Category=...`` or
``gc=...``, and the binary properties ``Any``, ``ASCII`` and ``Assigned``. Scripts and the other
binary properties are not in the standard library: ``property_class`` returns ``None`` for them.

The categories of all code points are read once, on the first property escape of the
process (about a tenth of a second); each name's class is then cached. The Unicode version is
the interpreter's (``unicodedata.unidata_version``). Standard library only.
"""

from __future__ import annotations

import functools

__all__ = ["property_class"]

_MAX = 0x10FFFF

_CATEGORY_NAMES = {
    "C": ("Other",),
    "Cc": ("Control", "cntrl"),
    "Cf": ("Format",),
    "Cn": ("Unassigned",),
    "Co": ("Private_Use",),
    "Cs": ("Surrogate",),
    "L": ("Letter",),
    "LC": ("Cased_Letter",),
    "Ll": ("Lowercase_Letter",),
    "Lm": ("Modifier_Letter",),
    "Lo": ("Other_Letter",),
    "Lt": ("Titlecase_Letter",),
    "Lu": ("Uppercase_Letter",),
    "M": ("Mark", "Combining_Mark"),
    "Mc": ("Spacing_Mark",),
    "Me": ("Enclosing_Mark",),
    "Mn": ("Nonspacing_Mark",),
    "N": ("Number",),
    "Nd": ("Decimal_Number", "digit"),
    "Nl": ("Letter_Number",),
    "No": ("Other_Number",),
    "P": ("Punctuation", "punct"),
    "Pc": ("Connector_Punctuation",),
    "Pd": ("Dash_Punctuation",),
    "Pe": ("Close_Punctuation",),
    "Pf": ("Final_Punctuation",),
    "Pi": ("Initial_Punctuation",),
    "Po": ("Other_Punctuation",),
    "Ps": ("Open_Punctuation",),
    "S": ("Symbol",),
    "Sc": ("Currency_Symbol",),
    "Sk": ("Modifier_Symbol",),
    "Sm": ("Math_Symbol",),
    "So": ("Other_Symbol",),
    "Z": ("Separator",),
    "Zl": ("Line_Separator",),
    "Zp": ("Paragraph_Separator",),
    "Zs": ("Space_Separator",),
}
_BY_NAME = {alias: short for short, aliases in _CATEGORY_NAMES.items() for alias in (short, *aliases)}


@functools.lru_cache(maxsize=1)
def _runs() -> tuple[tuple[int, int, str], ...]:
    """Every code point in runs of one General_Category: ``(first, last, category)``."""
    import unicodedata

    runs: list[tuple[int, int, str]] = []
    start, current = 0, unicodedata.category("\x00")
    for code in range(1, _MAX + 1):
        category = unicodedata.category(chr(code))
        if category != current:
            runs.append((start, code - 1, current))
            start, current = code, category
    runs.append((start, _MAX, current))
    return tuple(runs)


def _ranges(wanted: frozenset[str]) -> list[tuple[int, int]]:
    """The code point ranges whose category is in ``wanted`` (two-letter names), merged."""
    ranges: list[tuple[int, int]] = []
    for first, last, category in _runs():
        if category not in wanted:
            continue
        if ranges and ranges[-1][1] == first - 1:
            ranges[-1] = (ranges[-1][0], last)
        else:
            ranges.append((first, last))
    return ranges


def _escape(code: int) -> str:
    return f"\\U{code:08x}" if code > 0xFFFF else f"\\u{code:04x}"


def _members(ranges: list[tuple[int, int]]) -> str:
    return "".join(_escape(a) if a == b else f"{_escape(a)}-{_escape(b)}" for a, b in ranges)


def _two_letter(short: str) -> frozenset[str]:
    """The two-letter categories a short name stands for (``L`` -> ``Lu``, ``Ll``, ...)."""
    if len(short) == 2 and short != "LC":
        return frozenset((short,))
    if short == "LC":
        return frozenset(("Lu", "Ll", "Lt"))
    return frozenset(name for name in _CATEGORY_NAMES if len(name) == 2 and name[0] == short)


@functools.lru_cache(maxsize=64)
def property_class(name: str) -> str | None:
    """The members (``re`` class text, without brackets) of ``\\p{name}``, or ``None`` when the
    name is not supported (see the module docstring)."""
    if name == "Any":
        return f"\\u0000-{_escape(_MAX)}"
    if name == "ASCII":
        return "\\u0000-\\u007f"
    if name == "Assigned":
        return _members(_ranges(frozenset(n for n in _CATEGORY_NAMES if len(n) == 2) - {"Cn", "LC"}))
    for prefix in ("General_Category=", "gc="):
        if name.startswith(prefix):
            name = name[len(prefix) :]
            break
    short = _BY_NAME.get(name)
    if short is None:
        return None
    return _members(_ranges(_two_letter(short)))
