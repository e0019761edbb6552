"""Calls of any tool by the embedded model: tools no built-in demo knows (``@tool``, MCP).

Invariants:

- ``nearest_tool`` scores each such tool by the request's content words it shares with the
  tool's name (two points each) and with the first sentence of its description (one point);
  a request that names the tool (``use get_weather for Oslo``) chooses it whatever the score.
  ``prompt.nearest_demo`` takes it over the built-in demos when it scores higher.
- ``call_spec`` narrows the tool's schema to what the request gives, so the grammar leaves the
  model only choices it makes well:

  - an enum: the values the request names (all of them when it names none); an optional
    enum the request does not name is left out;
  - an integer or number: the numbers of the request (digits, or ``one`` to ``twelve``); a
    number next to a word like the property's name (``10 minutes``, ``six-sided``) only
    for that property; an optional one only when the request has a number for it;
  - a string naming a thing (``city``, ``name``, ``symbol``...): one of the request's
    capitalised words (runs of them: ``New York``), when it has any; other strings: words
    copied from the request, without stop words, the tool's own words and the words other
    arguments took (the one string left takes them whole when they stand side by side: "buy
    stamps"); an optional string is left out;
  - every property kept is required, so the call is complete.

Why: at 135M parameters the model follows demos, not instructions, and has none for these
tools; what it cannot get wrong is a choice between the few values a request holds.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ...model import ToolSpec
from .words import STOP_WORDS, content_words, split_words

__all__ = ["GENERIC_WORDS", "ToolCallPlan", "call_spec", "nearest_tool", "tool_words"]

GENERIC_WORDS = frozenset(
    [
        "get",
        "set",
        "make",
        "turn",
        "check",
        "show",
        "tell",
        "use",
        "using",
        "return",
        "current",
        "currently",
        "latest",
        "tool",
        "give",
        "want",
        "need",
        "now",
        "right",
        "how",
        "much",
        "many",
        "word",
        "text",
        "value",
        "about",
        "as",
        "into",
        "up",
        "some",
        "any",
        "all",
        "there",
        "here",
        "w",
        "what",
        "whats",
        "let",
        "could",
        "would",
        "will",
        "should",
        "know",
    ]
)
"""Words that say nothing about which tool or which value (beyond ``STOP_WORDS``)."""

_ENTITIES = "name city symbol ticker country place location person company town timezone zone user"
ENTITY_WORDS = frozenset(f"{_ENTITIES} contact region state airport team station".split())
"""Property-name words of a string that names a thing (filled with a capitalised word)."""

NUMBER_WORDS = {
    w: n
    for n, w in enumerate(
        [
            "zero",
            "one",
            "two",
            "three",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "eleven",
            "twelve",
        ]
    )
}


@dataclass(frozen=True)
class ToolCallPlan:
    """What the grammar of a call of a tool without demos needs: the tool with its schema
    narrowed (``call_spec``) and the words its string arguments are copied from."""

    spec: ToolSpec
    words: tuple[str, ...]


def tool_words(spec: ToolSpec) -> tuple[set[str], set[str]]:
    """(words of the tool's name, other words of its description's first sentence), as
    ``content_words`` makes them, ``GENERIC_WORDS`` left out."""
    name = re.sub(r"([a-z])([A-Z])", r"\1 \2", spec.name).replace("_", " ").replace("-", " ")
    named = content_words(name) - GENERIC_WORDS
    first = " ".join(spec.description.split()).split(". ")[0]
    return named, content_words(first) - GENERIC_WORDS - named


def names_tool(request: str, spec: ToolSpec) -> bool:
    """Whether ``request`` names ``spec`` (its name as a word, any case)."""
    return spec.name.lower() in {word.lower() for word in split_words(request)}


def nearest_tool(request: str, tools: Sequence[ToolSpec]) -> tuple[ToolSpec | None, int]:
    """The tool of ``tools`` nearest ``request`` and its score (module invariants); a named tool
    scores 100. ``(None, 0)`` when none shares a word."""
    wanted = content_words(request)
    best: ToolSpec | None = None
    best_score = 0
    for spec in tools:
        named, described = tool_words(spec)
        score = 2 * len(wanted & named) + len(wanted & described) + _enums_named(request, spec)
        if names_tool(request, spec):
            score = 100
        if score > best_score:
            best, best_score = spec, score
    return best, best_score


def _enums_named(request: str, spec: ToolSpec) -> int:
    """How many enum values of ``spec``'s properties ``request`` names (``off`` of a mode)."""
    properties = (spec.input_schema or {}).get("properties")
    if not isinstance(properties, dict):
        return 0
    values = [v for p in properties.values() if isinstance(p, dict) for v in p.get("enum") or ()]
    return sum(1 for v in values if isinstance(v, str) and _mentioned(v, request))


# --- the arguments ------------------------------------------------------------------------------


def _numbers(request: str) -> list[tuple[float, str]]:
    """Each number of ``request`` with the text around it (its word and the next one)."""
    tokens = [t.lower() for t in split_words(request)]
    found: list[tuple[float, str]] = []
    for index, token in enumerate(tokens):
        following = tokens[index + 1] if index + 1 < len(tokens) and "-" not in token else ""
        context = f"{token} {following}"
        digits = re.match(r"^-?\d+(?:\.\d+)?(?=$|-|[a-z%])", token)
        head = token.split("-")[0]
        if digits:
            found.append((float(digits.group()), context))
        elif head in NUMBER_WORDS:
            found.append((float(NUMBER_WORDS[head]), context))
    return found


def _stems(key: str) -> list[str]:
    """Stems of a property name's words (``sides`` -> ``side``, ``from_currency`` ->
    ``from``, ``curr``): the first four letters of each word of three letters or more."""
    words = re.sub(r"([a-z])([A-Z])", r"\1 \2", key).replace("_", " ").replace("-", " ").lower().split()
    return [w[:4] for w in words if len(w) >= 3]


def _bound(number_context: str, key: str) -> bool:
    """Whether a number (its word and the next, ``_numbers``) is of property ``key``: its own
    word holds the stem (``six-sided``) or the next word starts with it (``10 minutes``)."""
    own, _, following = number_context.partition(" ")
    return any(stem in own or following.startswith(stem) for stem in _stems(key))


def _as_number(value: float, kind: str) -> float | int:
    return int(value) if kind == "integer" or value.is_integer() else value


def _proper_nouns(request: str) -> list[str]:
    """Runs of capitalised words of ``request`` (not its first word; a possessive ``'s``
    dropped): ``Oslo``, ``New York``, ``ACME``."""
    runs: list[str] = []
    current: list[str] = []
    for index, raw in enumerate(request.split()):
        word = re.sub(r"['\u2019]s$", "", raw.strip(".,;:!?\"'`()[]{}<>"))
        capital = index > 0 and bool(re.match(r"^[A-Z][\w-]*$", word)) and word.lower() not in STOP_WORDS
        if capital:
            current.append(word)
        if (not capital or raw[-1:] in ".,;:!?") and current:
            runs.append(" ".join(current))
            current = []
    if current:
        runs.append(" ".join(current))
    return list(dict.fromkeys(runs))


def _mentioned(value: Any, request: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(str(value).lower())}(?!\w)", request.lower()) is not None


_NUMERIC = ("integer", "number")


def call_spec(spec: ToolSpec, request: str, words: Sequence[str]) -> ToolCallPlan:
    """``spec`` with its schema narrowed to ``request`` (module invariants) and the words its
    copied strings take (from ``words``, the request's copy words)."""
    schema = spec.input_schema or {}
    found = schema.get("properties")
    properties: dict[str, Any] = found if isinstance(found, dict) else {}
    required = set(schema.get("required") or ())
    numbers = _numbers(request)
    kept: dict[str, Any] = {}
    used: set[str] = set()
    numeric = [
        k for k, v in properties.items() if isinstance(v, dict) and v.get("type") in ("integer", "number")
    ]
    bound = {k: [n for n, c in numbers if _bound(c, k)] for k in numeric}
    free = [n for n, c in numbers if not any(_bound(c, k) for k in numeric)]
    spare = len(free) - sum(1 for k in numeric if k in required and not bound[k])
    for key, prop in properties.items():
        if not isinstance(prop, dict):
            if key in required:
                kept[key] = prop
            continue
        narrowed = _narrow(key, prop, key in required, request, bound.get(key, []), free, spare)
        if narrowed is None:
            continue
        if key in numeric and not bound[key] and key not in required:
            spare -= 1
        kept[key] = narrowed
        for value in narrowed.get("enum", ()):
            used |= {w.lower() for w in str(value).split()}
    copied = _copy_words(spec, request, words, used)
    _fill_strings(kept, request, copied)
    narrowed_schema = {**schema, "type": "object", "properties": kept, "required": list(kept)}
    return ToolCallPlan(ToolSpec(spec.name, spec.description, narrowed_schema), tuple(copied))


def _copy_words(spec: ToolSpec, request: str, words: Sequence[str], used: set[str]) -> list[str]:
    """The words copied strings may take: ``words`` without stop words, the tool's own words,
    its property names, the request's first word (a verb or a question word), the words of
    chosen enum values and numbers; a possessive ``'s`` dropped."""
    tool_named, tool_described = tool_words(spec)
    properties = (spec.input_schema or {}).get("properties")
    keys = " ".join(properties) if isinstance(properties, dict) else ""
    excluded = (
        STOP_WORDS | GENERIC_WORDS | tool_named | tool_described | content_words(keys.replace("_", " "))
    )
    first = split_words(request)[:1]
    kept = [
        w
        for w in (re.sub(r"['\u2019]s$", "", w) for w in words)
        if w.lower() not in used
        and w not in first
        and content_words(w) - excluded
        and not re.fullmatch(r"-?\d+(\.\d+)?", w)
    ]
    return list(dict.fromkeys(kept))


def _fill_strings(kept: dict[str, Any], request: str, copied: list[str]) -> None:
    """Strings a word of the request decides: a ``to_*``/``from_*`` property takes the word after
    ``to``/``from`` (``to dollars``); then, when one string is left, the words left when they
    stand side by side in the request (one word, or a run: ``buy stamps``)."""
    tokens = split_words(request)
    strings = [
        k for k, v in kept.items() if isinstance(v, dict) and v.get("type") == "string" and "enum" not in v
    ]
    taken: list[str] = []
    for key in strings:
        head = re.split(r"[_\-A-Z]", key, maxsplit=1)[0].lower()
        if head not in ("to", "from"):
            continue
        after = [b for a, b in itertools.pairwise(tokens) if a.lower() == head and b in copied]
        if after:
            kept[key] = {**kept[key], "enum": after[:1]}
            taken.append(after[0])
    rest = [w for w in copied if w not in taken]
    open_strings = [k for k in strings if "enum" not in kept[k]]
    run = _contiguous(tokens, rest)
    if len(open_strings) == 1 and run is not None:
        kept[open_strings[0]] = {**kept[open_strings[0]], "enum": [run]}


def _contiguous(tokens: list[str], words: list[str]) -> str | None:
    """``words`` joined when they stand side by side in ``tokens`` in that order ("buy stamps"
    of "Add a todo to buy stamps with high priority": the model stopped after "buy"), else
    ``None``."""
    if not words:
        return None
    for start in range(len(tokens) - len(words) + 1):
        if tokens[start : start + len(words)] == words:
            return " ".join(words)
    return None


def _narrow(
    key: str,
    prop: dict[str, Any],
    required: bool,
    request: str,
    bound: list[float],
    free: list[float],
    spare: int,
) -> dict[str, Any] | None:
    """One property narrowed to ``request`` (``call_spec``), or ``None`` to leave it out."""
    kind = prop.get("type")
    enum = prop.get("enum")
    if isinstance(enum, list) and enum:
        named = [v for v in enum if _mentioned(v, request)]
        if named:
            return {**prop, "enum": named}
        return prop if required else None
    if kind in ("integer", "number"):
        candidates = bound or (free if required or spare > 0 else [])
        if kind == "integer":
            candidates = [n for n in candidates if float(n).is_integer()]
        if candidates:
            return {"enum": list(dict.fromkeys(_as_number(n, str(kind)) for n in candidates))}
        return prop if required else None
    if kind == "string" and required:
        nouns = _proper_nouns(request)
        if nouns and set(_stems(key)) & {w[:4] for w in ENTITY_WORDS}:
            return {"enum": nouns}
        return prop
    return prop if required else None
