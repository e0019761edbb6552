"""Arguments read from a request's own words: the spans the embedded model's calls copy.

Invariants (each function returns ``[]`` or ``None`` when the request has no such span, and the
grammar then falls back to words copied one by one):

- ``write_target``: the file a write goes to, named right after "to", "into", "called", "file",
  "create"...; never a file named as what to read ("a summary of README.md").
- ``write_content``: the text a write puts in its file: text in quotes, else the words after
  the last content marker (``says``, ``text``, ``containing``, ``words``...) or after the
  write's verb, up to the target phrase ("to bye.txt", "in a file called note.txt") or the
  end. Never a file name, never only the words of the target phrase ("Write a file called
  shopping.txt" gives none: it wrote "file called" over shopping.txt); none when the text is
  described, not given ("Write a short note to notes.txt", "Write a summary of notes.txt to
  notes.txt": after the verb comes "a", "the"..., or the words end at a file they are made of).
- ``edit_pairs``: ``(old, new)`` pairs of a replacement: "replace X with Y", "change X to Y",
  "rename X to Y", "from X to Y", "X -> Y". ``old`` is X without a lead ("the word"), and
  first its last word when only that is a name or number ("the station Hilltop": ``Hilltop``);
  ``new`` is Y without the "in FILE" that names the file. No pair when X names a place or a
  setting, not a text ("the first line", "line 3", "it", "the version": ``_vague``).
- ``folder``: the folder a listing names ("the data folder", "inside src/", "in docs"), ``""``
  for the project itself ("here", "the project", "top level"), ``None`` when it names none.
- ``backticked``: the code in backticks (a command to run as written); ``count_command``: the
  ``wc`` command that counts what a request asks of the files it names; ``markers``: the marker
  comments named (``TODO``: what a search looks for); ``searched_word``: the word a search
  looks for ("mentions the thermometer": ``thermometer``).
- ``call_spans`` gathers them per argument of a built-in tool's call.

Why: the 135M model picks words one by one badly (it stopped "meeting at noon" after
"meeting"; "Change celsius to kelvin" became old_text "Change to kelvin", measured); a span of
the request is what the user wrote, whole.
"""

from __future__ import annotations

import re
import shlex

from .words import STRIP, is_file_name, quoted_texts, split_words

__all__ = [
    "backticked",
    "call_spans",
    "count_command",
    "edit_pairs",
    "folder",
    "markers",
    "searched_word",
    "write_content",
    "write_target",
]

_MARKERS = frozenset(
    [
        "says",
        "say",
        "saying",
        "text",
        "containing",
        "contains",
        "words",
        "word",
        "line",
        "reading",
        "content",
        "contents",
        "message",
        "sentence",
        "phrase",
        "with",
    ]
)
_WRITE_VERBS = frozenset(["write", "put", "save", "store", "add", "type"])
_TARGET_START = frozenset(["to", "into", "in", "as", "inside", "under", "at"])
_TARGET_FILLER = frozenset(["a", "an", "the", "new", "file", "called", "named", "name"])
_LEAD = frozenset(["the", "a", "an", "that", "saying", "with"])


def _quoted_text(request: str) -> list[str]:
    """The quoted texts of ``request`` that are no file name."""
    return [q for q in quoted_texts(request) if not is_file_name(q)]


_TARGET_BEFORE = frozenset(
    ["to", "into", "in", "as", "inside", "called", "named", "file", "create", "make", "write", "save"]
)
"""Words right before the file a write goes to ("to bye.txt", "a file named x.txt", "Create
notes.txt"); a file after "of", "from" or "about" is what to read ("Write me a summary of
README.md": README.md is no target)."""


def write_target(request: str) -> str | None:
    """The file a write of ``request`` goes to: the last file name right after a word of
    ``_TARGET_BEFORE``, or ``None``."""
    tokens = split_words(request)
    found = None
    for index, token in enumerate(tokens[1:], start=1):
        before = tokens[index - 1].lower()
        if before in {"the", "my", "a"} and index >= 2:
            before = tokens[index - 2].lower()  # "to the README"
        if is_file_name(token) and before in _TARGET_BEFORE:
            found = token
    return found


_DESCRIBED = frozenset(["a", "an", "the", "some", "my", "your", "this", "that", "its", "their"])
"""First words of a write's object that describe the text rather than give it ("Write a short
note to notes.txt" wrote "short note" over notes.txt; "Write the version number to v.txt")."""


def write_content(request: str) -> list[str]:
    """The text a write of ``request`` puts in its file (module invariants): at most one span."""
    quoted = _quoted_text(request)
    if quoted:
        return [quoted[0]]
    tokens = split_words(request)
    lowered = [t.lower() for t in tokens]
    starts = [i + 1 for i, word in enumerate(lowered) if word in _MARKERS]
    if not starts:
        starts = [i + 1 for i, word in enumerate(lowered) if word in _WRITE_VERBS][:1]
        if starts and starts[0] < len(lowered) and lowered[starts[0]] in _DESCRIBED:
            return []  # "Write a short note to notes.txt": what to write is described, not given
    for start in reversed(starts):
        span = _until_target(tokens, start)
        if span and span[-1].lower() in {"of", "from", "about", "in", "on"}:
            return []  # "Write a summary of notes.txt to ...": made from a file
        if span and not all(word.lower() in _TARGET_FILLER | _TARGET_START for word in span):
            return [" ".join(span)]
    return []


def _until_target(tokens: list[str], start: int) -> list[str]:
    """The words from ``start`` up to the target phrase (``to`` [a new file called] FILE) or
    the end, without leading fillers; ``[]`` when a file name comes before any word."""
    words: list[str] = []
    for index in range(start, len(tokens)):
        token = tokens[index]
        if is_file_name(token):
            break
        if token.lower() in _TARGET_START and _file_follows(tokens, index + 1):
            break
        if not token:
            continue
        words.append(token)
    while words and words[0].lower() in _LEAD:
        words.pop(0)
    if len(words) > 2 and words[-1].lower() == "it" and words[-2].lower() in _TARGET_START:
        words = words[:-2]  # "... with hello in it"
    return words


def _file_follows(tokens: list[str], index: int) -> bool:
    """Whether a file name follows ``index`` after only fillers (``a new file called``)."""
    while index < len(tokens) and tokens[index].lower() in _TARGET_FILLER:
        index += 1
    return index < len(tokens) and is_file_name(tokens[index])


_PAIRS = (
    re.compile(r"\bfrom\s+(?P<old>.+?)\s+to\s+(?P<new>.+)$", re.I),
    re.compile(
        r"\b(?:replace|substitute|swap|change|rename|update|switch)\s+(?P<old>.+?)\s+"
        r"(?:with|by|to|into|for|->|→)\s+(?P<new>.+)$",
        re.I,
    ),
    re.compile(r"(?P<old>\S+)\s*(?:->|→)\s*(?P<new>\S+)"),
)
_FILE = r"\S*\w[./]\w\S*"
"""A file name or path in a pattern (as ``words.PATH`` finds them)."""
_IN_FILE = re.compile(rf"\s+(?:in|of|inside|within|on)\s+(?:the\s+)?(?:file\s+)?{_FILE}.*$", re.I)
_OLD_LEAD = re.compile(r"^(?:all\s+)?(?:the\s+)?(?:word|text|string|value|name)?\s*", re.I)


_VAGUE_OLD = frozenset(
    ["it", "all", "every", "each", "everything", "line", "lines", "first", "last", "contents", "content"]
)
"""First words of an old text that name a place or a part, not the text itself ("the first
line", "line 3", "every a", "it", "the contents of notes.txt")."""


def _vague(old: str) -> bool:
    """Whether the ``old`` of "change OLD to NEW" names no text to find: a place or a part
    (``_VAGUE_OLD``), or "the" and one lower-case word, a setting's name ("Update the version
    in setup.py to 2.0" is no replacement of the word "version")."""
    words = [w.lower() for w in split_words(old) if w]
    if words and words[0] == "the":
        words = words[1:]
        if len(words) == 1 and words[0].isalpha() and words[0].islower():
            return True
    return bool(words) and words[0] in _VAGUE_OLD


def edit_pairs(request: str) -> list[tuple[str, str]]:
    """The ``(old, new)`` pairs of a replacement in ``request`` (module invariants), best first."""
    text = " ".join(request.split())
    for quoted in quoted_texts(text):  # a quoted file name with spaces is cut off like any other
        if is_file_name(quoted):
            text = re.sub(rf"[\"'\u201c\u2018]{re.escape(quoted)}[\"'\u201d\u2019]", "QUOTED.file", text)
    text = re.sub(rf"^.*?{_FILE}\s*[:,]\s*", "", text, count=1)  # "Update config.ini: ..."
    text = re.sub(rf"^\s*in\s+{_FILE}\s*,?\s*", "", text, flags=re.I)  # "In config.ini, ..."
    match = next((m for m in (p.search(text) for p in _PAIRS) if m is not None), None)
    if match is None:
        return []
    old = _IN_FILE.sub("", match.group("old"))
    new = match.group("new")
    new = _IN_FILE.sub("", new).strip().rstrip(".!?").strip()
    old_words = [w for w in split_words(_OLD_LEAD.sub("", old.strip())) if w]
    new = _strip_quotes(new)
    if re.match(r"^from\s", " ".join(old_words), re.I) or not old_words or not new or _vague(old):
        return []
    last = old_words[-1]
    lead = old_words[:-1]
    named = (
        bool(lead)
        and all(w.isalpha() and w.islower() for w in lead)
        and (last[:1].isupper() or last[:1].isdigit())
    )
    olds = [last, " ".join(old_words)] if named else [" ".join(old_words)]
    olds = [_strip_quotes(o) for o in olds if not is_file_name(o)]
    return [(o, new) for o in olds if o]


def _strip_quotes(text: str) -> str:
    return text.strip().strip(STRIP).strip()


_FOLDER_WORDS = r"folder|directory|dir|subfolder|subdirectory"
_NOT_NAMES = frozenset(
    ["a", "an", "the", "my", "your", "our", "each", "every", "which", "what", "that", "this", "it"]
)
"""Words in a folder's place that name none ("list what's in it")."""
_TOP = frozenset(["here", "project", "top", "root", "current", "this", "repo", "repository", "workspace"])
"""Words in a folder's place that name the project itself."""
_TOP_WORD = re.compile(rf"\b(?:{'|'.join(sorted(_TOP - {'this'}))})\b", re.I)
"""One of ``_TOP`` anywhere in a request ("this" only where a folder's name stands)."""


def folder(request: str) -> str | None:
    """The folder a listing in ``request`` names (module invariants): a quoted name first, then
    the word before "folder" ("the data folder"), after it ("the folder src"), or after "in" at
    the end ("in docs"); a word that names no folder ("the", "my", "it") is passed over."""
    text = " ".join(request.split())
    quoted = [q for q in quoted_texts(text) if not re.search(r"\.\w{1,5}$", q)]
    if quoted and re.search(rf"\b(?:{_FOLDER_WORDS}|list|in|inside)\b", text, re.IGNORECASE):
        return quoted[0].rstrip("/")
    for pattern in (
        rf"\b(?:the\s+)?([\w./-]+)\s+(?:{_FOLDER_WORDS})\b",
        rf"\b(?:{_FOLDER_WORDS})\s+(?:called\s+|named\s+)?([\w./-]+)",
        r"\b(?:in|inside|of|under)\s+(?:the\s+)?([\w-]+/[\w./-]*|[\w-]+/?)\s*[?.!]?$",
    ):
        found = re.search(pattern, text, re.IGNORECASE)
        if found is None:
            continue
        name = found.group(1).strip(STRIP)
        if name.lower() in _TOP:
            return ""
        if name.lower() in _NOT_NAMES:
            continue
        if re.fullmatch(r"[\w./-]+", name) and not re.search(r"\.\w{1,5}$", name):
            return name.rstrip("/") or ""
    return "" if _TOP_WORD.search(text) else None


_COUNTED = (("line", "-l"), ("word", "-w"), ("character", "-m"), ("char", "-m"), ("byte", "-c"))


def count_command(request: str) -> str | None:
    """``wc -l FILE...`` (``-w`` words, ``-m`` characters, ``-c`` bytes) for a request to count
    the lines (words...) of the files it names (quoted for the shell when they need it), else
    ``None`` ("how many lines do a.txt and b.txt have" counted one of them, measured)."""
    names = [n for n in split_words(request) if is_file_name(n)]
    lowered = request.lower()
    if not names or not re.search(r"\b(?:how many|count|number of|total)\b", lowered):
        return None
    flag = next((f for word, f in _COUNTED if re.search(rf"\b{word}s?\b", lowered)), None)
    quoted = [shlex.quote(name) for name in names]
    return f"wc {flag} {' '.join(quoted)}" if flag else None


def backticked(request: str) -> str | None:
    """The first code in backticks of ``request``, or ``None``."""
    found = re.search(r"`([^`]+)`", request)
    return found.group(1).strip() if found and found.group(1).strip() else None


def call_spans(tool: str, request: str) -> dict[str, list[str]]:
    """Per string argument of a call of the built-in ``tool`` for ``request``: the spans it may
    be (one each: the call copies what the user wrote, whole); an argument left out has no span
    and is copied word by word."""
    spans: dict[str, list[str]] = {}
    if tool == "write_file":
        spans["content"] = write_content(request)
        spans["path"] = [target] if (target := write_target(request)) else []
    elif tool == "edit_file" and (pairs := edit_pairs(request)):
        old, new = pairs[0]
        spans.update(old_text=[old], new_text=[new])
    elif tool == "run_command":
        code = backticked(request) or count_command(request)
        spans["command"] = [code] if code else []
    elif tool == "list_dir":
        spans["path"] = [name] if (name := folder(request)) else []
    elif tool == "grep":
        word = [f"(?i){re.escape(w)}" for w in searched_word(request)]  # "lentil" finds "Lentil"
        spans["pattern"] = markers(request)[:1] or word
    return {key: found for key, found in spans.items() if found}


_SEARCH_CUES = frozenset(
    ["mention", "mentions", "mentioned", "mentioning", "for", "word", "term", "string", "containing"]
)
_SEARCH_FILLERS = frozenset(["the", "a", "an", "word", "term", "string", "text", "of"])


def searched_word(request: str) -> list[str]:
    """The word a search of ``request`` looks for: quoted text, else the word after the last
    search cue ("mentions the thermometer", "for the word battery"), when it is not a file name
    or code name; ``[]`` otherwise."""
    quoted = _quoted_text(request)
    if quoted:
        return [quoted[0]]
    tokens = split_words(request)
    lowered = [t.lower() for t in tokens]
    cues = [i for i, word in enumerate(lowered) if word in _SEARCH_CUES]
    if not cues:
        return []
    index = cues[-1] + 1
    while index < len(tokens) and lowered[index] in _SEARCH_FILLERS:
        index += 1
    if index >= len(tokens) or not tokens[index] or is_file_name(tokens[index]) or "_" in tokens[index]:
        return []
    return [tokens[index]]


_MARKER_WORD = re.compile(r"\b(TODO|FIXME|XXX|HACK|BUG|NOTE)[sS]?\b")


def markers(request: str) -> list[str]:
    """The marker comments ``request`` names (``TODO``, ``FIXME``...; ``TODOs`` as ``TODO``)."""
    return [match.group(1) for match in _MARKER_WORD.finditer(request)]
