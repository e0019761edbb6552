"""Which built-in tool a request asks for, read from its cue words (the embedded model's router).

Invariants:

- ``cue_words`` are the request's words as the router reads them: lower case, each put in its
  canonical form (``CANONICAL``: ``defines``, ``definition`` -> ``define``; ``directory`` ->
  ``folder``), without file names, paths, code in backticks, identifiers (``write_report``,
  ``loadConfig``: their parts are never cues), and, in a request to write or create, without
  the content it copies (``spans.write_content``: "Write the words see you soon to bye.txt"
  asks to write, not to see).
- ``tool_scores`` scores each built-in tool: the weights of its cue words (``CUES``), two more
  for the request's first cue word when it is a verb of the tool (an imperative says its tool
  first: "Show me what's in ...", "Search for the word ..."), and the request's shapes
  (``SHAPES``): a marker comment (``TODO``, ``FIXME``) is searched for; a command in backticks
  is run; "how many lines" is counted by a command; a folder named is listed, never read.
- A tool that writes a file (``write_file``, ``edit_file``) only for a request that tells to
  change one (``tells_to_change``: its first verb writes or edits, and it is no question):
  a question is never answered by a write ("What's new in README.md?").
- ``choose_tool`` is the offered tool of the highest score, ``None`` when no tool scores (then
  no tool is guessed: ``grammar`` lets the first reply be a refusal only).

Why: the demo chooser compared all the words of a request with the demos' words, so words a
demo had by chance decided ("Is there a TODO in station.py?" listed a folder for the demo "Is
there a file called setup.py here?"; "defines" was not "defined", measured 5 of 10 held out).
Cue words are the few that say what to do, the same in every phrasing.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from .spans import markers, write_content
from .steps import QUESTION_WORDS, WRITING_TOOLS
from .words import PATH, STOP_WORDS

__all__ = [
    "CANONICAL",
    "CUES",
    "REFUSED",
    "asks_about",
    "asks_refused",
    "choose_tool",
    "code_shaped",
    "commands_unknown",
    "cue_words",
    "negated",
    "tells_to_change",
    "tells_to_run",
    "tool_scores",
    "two_tasks",
]

CANONICAL = {
    **dict.fromkeys(["defines", "defined", "definition", "definitions", "declared", "declares"], "define"),
    **dict.fromkeys(["directory", "directories", "dir", "folders", "subfolder", "subfolders"], "folder"),
    **dict.fromkeys(["display", "view", "print", "cat", "output"], "show"),
    **dict.fromkeys(["shows", "showing"], "show"),
    **dict.fromkeys(["reads", "reading"], "read"),
    **dict.fromkeys(["opens", "opening"], "open"),
    **dict.fromkeys(["contents", "content", "contains", "contain", "containing", "inside"], "content"),
    **dict.fromkeys(["says", "said", "saying", "mean", "means"], "say"),
    **dict.fromkeys(["check", "inspect", "examine", "review"], "read"),
    **dict.fromkeys(["summarize", "summary", "summarise", "explain", "describe"], "summarise"),
    **dict.fromkeys(["lists", "listing", "ls", "tree", "structure"], "list"),
    **dict.fromkeys(["searches", "searching", "grep", "locate", "seek"], "search"),
    **dict.fromkeys(["finds", "finding"], "find"),
    **dict.fromkeys(["looking", "looks"], "look"),
    **dict.fromkeys(
        ["mentions", "mentioned", "mentioning", "mention", "references", "occurrence"], "mention"
    ),
    **dict.fromkeys(["occurrences", "appears", "appear", "used", "uses"], "mention"),
    **dict.fromkeys(["runs", "running", "execute", "executes", "exec", "launch", "invoke"], "run"),
    **dict.fromkeys(["commands", "shell", "terminal"], "command"),
    **dict.fromkeys(["counts", "counting", "number", "many", "total"], "count"),
    **dict.fromkeys(["creates", "creating", "make", "makes", "generate"], "create"),
    **dict.fromkeys(["writes", "writing", "wrote", "save", "saves", "store", "put"], "write"),
    **dict.fromkeys(["replaces", "replacing", "substitute", "swap", "switch"], "replace"),
    **dict.fromkeys(["changes", "changing", "update", "updates", "modify", "edit"], "change"),
    **dict.fromkeys(["delete", "deletes", "remove", "removes", "erase", "rm", "wipe", "destroy"], "delete"),
    **dict.fromkeys(["imports", "import", "imported", "handle", "handles"], "mention"),
    **dict.fromkeys(["renames", "renaming"], "rename"),
    **dict.fromkeys(["todo", "todos", "fixme", "fixmes", "xxx", "hack"], "marker"),
    **dict.fromkeys(["lines"], "line"),
    **dict.fromkeys(["words"], "word"),
    **dict.fromkeys(["files"], "file"),
}
"""Words in their canonical (cue) form; a word not here is its own form."""

CUES: dict[str, dict[str, int]] = {
    "read_file": {"read": 3, "show": 2, "open": 3, "content": 2, "say": 2, "summarise": 3, "about": 1},
    "list_dir": {"list": 3, "folder": 3, "file": 1, "project": 1, "here": 1, "top": 1},
    "grep": {"search": 3, "find": 3, "look": 2, "mention": 3, "where": 2, "define": 4, "function": 1},
    "run_command": {"run": 3, "command": 3, "count": 2},
    "write_file": {"create": 3, "write": 3},
    "edit_file": {"replace": 4, "change": 3, "rename": 3},
}
"""Per built-in tool, its cue words and their weights."""

VERBS = frozenset(
    [
        "read",
        "show",
        "open",
        "summarise",
        "list",
        "search",
        "find",
        "look",
        "run",
        "count",
        "create",
        "write",
        "replace",
        "change",
        "rename",
    ]
)
"""Cue words that are verbs: the first of them in a request says its tool (two points more)."""

_IDENTIFIER = re.compile(r"\b\w*(?:_\w*|[a-z][A-Z]\w*)\b|\b\w+\(\)")


def cue_words(request: str) -> list[str]:
    """The cue words of ``request`` in order (module invariants), each in its canonical form."""
    words = _canonical(request)
    content = write_content(request) if {"write", "create"} & set(words) else []
    return _canonical(request.replace(content[0], " ")) if content else words


_LIST_NOUN = re.compile(
    r"\b(the|a|an|my|your|our|this|that|shopping|grocery|todo|to-do|mailing|wish|reading)\s+list\b", re.I
)
"""A "list" that is a thing, not the verb ("Email the shopping list to my sister" listed a folder)."""


def _canonical(text: str) -> list[str]:
    text = _IDENTIFIER.sub(" ", PATH.sub(" ", _LIST_NOUN.sub(r"\1 ", text)))
    return [CANONICAL.get(word, word) for word in re.findall(r"[a-z]+", text.lower())]


def code_shaped(request: str) -> bool:
    """Whether ``request`` names code only a built-in tool deals with: a marker comment
    (``TODO``, ``FIXME``: searched for) or a command in backticks (run)."""
    return bool(markers(request)) or bool(re.search(r"`[^`]+`", request))


def tool_scores(request: str) -> dict[str, int]:
    """Each built-in tool's score for ``request`` (module invariants); tools scoring 0 left out."""
    words = cue_words(request)
    scores: dict[str, int] = {}
    for tool, cues in CUES.items():
        score = sum(weight for word, weight in cues.items() if word in words)
        if score:
            scores[tool] = score
    first = next((word for word in words if word in VERBS), None)
    for tool, cues in CUES.items():
        if first in cues:
            scores[tool] = scores.get(tool, 0) + 2
    for tool, points in _shapes(request, words).items():
        scores[tool] = scores.get(tool, 0) + points
    return {tool: score for tool, score in scores.items() if score > 0}


def _shapes(request: str, words: list[str]) -> dict[str, int]:
    """Points for the request's shapes (``SHAPES`` in the module invariants)."""
    points: dict[str, int] = {}
    edits = {"replace", "change", "rename", "write", "create"} & set(words)
    if markers(request) and not edits:
        points["grep"] = 5
    if "`" in request and not {"search", "find", "look"} & set(words):
        points["run_command"] = 5
    if "count" in words and ({"line", "word"} & set(words)) and not edits:
        points["run_command"] = points.get("run_command", 0) + 4
    if re.search(r"\b(?:which|what) file\b", request, re.I) and not edits:
        points["grep"] = points.get("grep", 0) + 2
    if re.search(r"\blook(?:s|ing)? (?:at|into|over|through)\b", request, re.I) and not edits:
        points["read_file"] = points.get("read_file", 0) + 5  # "take a look at config.ini"
    if "count" in words and "file" in words and not {"line", "word"} & set(words):
        points["list_dir"] = points.get("list_dir", 0) + 5  # "How many files are in src?"
        points["run_command"] = -99
    if "folder" in words and not edits:
        points["list_dir"] = points.get("list_dir", 0) + 2
        points["read_file"] = -99
    return points


REFUSED = frozenset(["delete"])
"""Cue words of what no built-in tool does: such a request gets no tool (a refusal), never the
nearest ("delete config.ini" read it, measured)."""


def asks_refused(request: str) -> bool:
    """Whether ``request`` asks for what no built-in tool does (``REFUSED``)."""
    return bool(REFUSED & set(cue_words(request)))


_ASKING = QUESTION_WORDS | {"tell", "give", "the", "a", "an", "any", "i'm", "i'd", "please"}


def asks_about(request: str) -> bool:
    """Whether ``request`` asks about something (a question, or "tell me", "give me"...) rather
    than telling a tool no cue knows what to do ("Send config.ini to Bob", "Translate
    README.md into French": their first word is a verb no built-in tool does)."""
    words = request.split()
    return request.rstrip().endswith("?") or (bool(words) and words[0].lower().strip(",") in _ASKING)


CHANGE_VERBS = frozenset(["create", "write", "replace", "change", "rename"])
_POLITE = frozenset(["can", "could", "would", "will", "i", "please"])


_NEGATED = re.compile(r"\b(?:don'?t|do not|never|not|without|no need to)\b", re.I)
_ASKS_HOW = re.compile(
    r"\bhow (?:do|does|would|can|could|should|to)\b|\bwhat (?:would|if|happens|does)\b|\bshould i\b"
    r"|\bwhy\b|\bis it\b|\bwhether\b|\bexplain\b|\bis `",
    re.I,
)
"""Questions about doing a thing, not asking for it ("Tell me how to change ...", "What would
`rm notes.txt` do?", "Is `rm -rf src` a good idea?")."""


def negated(request: str) -> bool:
    """Whether ``request`` says not to do something ("Don't replace ...", "Please do not run
    ...", "Never write to config.ini"): then nothing is changed or run for it."""
    return bool(_NEGATED.search(request))


def _tells(request: str, verbs: frozenset[str]) -> bool:
    """Whether ``request``'s first verb is one of ``verbs``, it is no question about doing it
    (``_ASKS_HOW``) and it does not say not to (``negated``)."""
    words = request.split()
    first_word = words[0].lower().strip(",") if words else ""
    if first_word in QUESTION_WORDS and first_word not in _POLITE:
        return False
    if negated(request) or _ASKS_HOW.search(request):
        return False
    first = next((word for word in cue_words(request) if word in VERBS), None)
    return first in verbs


def tells_to_change(request: str) -> bool:
    """Whether ``request`` tells to write or edit a file: its first verb (``VERBS``) is one of
    ``CHANGE_VERBS``, it is no question ("What's new in README.md?", "Tell me how to change
    Monday to Sunday in plan.txt" are no edits; "Could you make me a file ...?" is one) and it
    does not say not to ("Don't replace Helo with Hello in app.py")."""
    return _tells(request, CHANGE_VERBS)


def tells_to_run(request: str) -> bool:
    """Whether ``request`` tells to run a command: its first verb is "run" (or "execute"...),
    as for ``tells_to_change`` ("What would `rm notes.txt` do?" and "Please do not run `rm
    app.py`" ran them, measured)."""
    return _tells(request, frozenset(["run"]))


_NEUTRAL = STOP_WORDS | {"get", "let", "help", "use", "try", "go", "just", "now", "ok", "okay", "so", "hey"}
_OBJECTS = frozenset(
    ["the", "a", "an", "my", "your", "our", "this", "that", "these", "those", "all", "it", "me"]
)


def commands_unknown(request: str) -> bool:
    """Whether ``request`` starts with a command no built-in tool knows: a first word (after
    "please") that is no cue word, question word or filler, followed by an object ("Email the
    shopping list to my sister", "Empty the file shopping.txt", "Send config.ini to Bob")."""
    words = [w.strip(",.!?:;").lower() for w in request.split()]
    while words and words[0] in {"please", "kindly"}:
        words = words[1:]
    if len(words) < 2 or not words[0].isalpha():
        return False
    known = words[0] in CANONICAL or words[0] in VERBS or any(words[0] in c for c in CUES.values())
    if known or words[0] in _ASKING or words[0] in _NEUTRAL:
        return False
    return words[1] in _OBJECTS or bool(PATH.fullmatch(words[1]))


_CLAUSE = re.compile(r",?\s+(?:and then|and also|then|and)\s+|;\s*|[.!?]\s+(?=[A-Za-z])", re.I)
"""Where a request's clauses meet ("..., then ...", "... and ...", "...; ...", "... . ...")."""
_LATER = re.compile(r",?\s+(?:and then|then)\s+|;\s*|[.!?]\s+(?=[A-Za-z])", re.I)
"""Where a later step begins: ``_CLAUSE`` but a plain "and" ("Write bread and butter ...")."""
_ANSWER_WORDS = frozenset(
    [
        "show",
        "tell",
        "give",
        "me",
        "us",
        "it",
        "the",
        "what",
        "result",
        "results",
        "output",
        "prints",
        "printed",
        "print",
        "says",
        "say",
        "answer",
        "report",
        "to",
        "back",
        "comes",
        "out",
        "is",
        "are",
        "was",
        "then",
        "please",
        "display",
    ]
)


def two_tasks(request: str) -> bool:
    """Whether ``request`` asks for two things that take two tools: two of its clauses ("...,
    then ...", "... and ...") each ask for a different tool with a score of at least 3, not
    counting a clause that only asks for the answer ("and tell me the output"). Found by a new
    user: "Replace milk with oat milk in shopping.txt and tell me how many lines it has" made
    the edit and answered "Done:" without the count."""
    tools = set()
    for clause in _CLAUSE.split(request):
        words = [w.lower() for w in re.findall(r"[A-Za-z]+", clause)]
        if not words or set(words) <= _ANSWER_WORDS or negated(clause):
            continue
        scores = tool_scores(clause)
        best = max(scores, key=lambda tool: scores[tool], default=None)
        if best is not None and scores[best] >= 3:
            tools.add(best)
    if len(tools) >= 2:
        return True
    later = _LATER.split(request)[1:]
    asks_more = any(set(re.findall(r"[a-z]+", c.lower())) - _ANSWER_WORDS for c in later)
    return tells_to_change(request) and asks_more  # "Change 8080 to 9090 ... and then tell me the new port"


def choose_tool(request: str, offered: Collection[str]) -> tuple[str, int] | None:
    """The offered built-in tool that ``request`` asks for and its score, or ``None`` when no
    offered tool scores or it asks what no tool does (``REFUSED``, ``commands_unknown``). A
    tool that writes a file only when the request tells to change one (``tells_to_change``).
    Ties go to the tool first in ``CUES``."""
    if asks_refused(request) or commands_unknown(request):
        return None
    if not tells_to_change(request):
        offered = [tool for tool in offered if tool not in WRITING_TOOLS]
    scores = tool_scores(request)
    ranked = sorted((tool for tool in scores if tool in offered), key=lambda t: -scores[t])
    return (ranked[0], scores[ranked[0]]) if ranked else None
