"""Refusals of the embedded model: requests of two steps, and requests no tool can do.

Invariants:

- ``refusal``: the one sentence a request no tool can do may be answered with; it says what
  was asked, in the request's own words ("I cannot order a pizza for you with the tools I
  have."; a question is quoted whole), never words of a demo ("I cannot book flights to Oslo"
  for a weather question, measured).

- A request is of two steps when it asks for a write (its demo's tool is ``write_file`` or
  ``edit_file``, or it says ``write``, ``save``, ``copy``...) whose content must first be read
  from a file: it names two or more files (one to read, one to write: "Read fruits.txt and
  write its lines in reverse order to reversed.txt"), or it derives the content from the file it
  names (``append``, ``reverse``, ``sort``, ``uppercase``...).
- A request of two tasks that take two tools ("Replace milk with oat milk in shopping.txt and
  tell me how many lines it has", ``intent.two_tasks``) is refused at once with ``TWO_TASKS``:
  the model makes one call per request, and half of such a request was done with "Done:".
- Such a request is refused at once, in one sentence that names its files, before any call:
  the model never writes a guess over a file the request names as its input (measured: the
  file name itself was written over the file, "fruits.txt" into fruits.txt).
- The content a write copies from the request is never a file name (``grammar``: the
  ``content`` argument's words leave file names out).

Why: the 135M model makes one call per request well; a read then a write of what was read (or
changed from it) is beyond it, and a half-done request must not destroy its input.
"""

from __future__ import annotations

import itertools

from .demos import Demo
from .words import content_words, file_names, split_words

__all__ = ["FILE_TOOLS", "TWO_TASKS", "WRITING_TOOLS", "refusal", "two_step_refusal"]

WRITING_TOOLS = frozenset(["write_file", "edit_file"])
"""The built-in tools that change a file."""

FILE_TOOLS = WRITING_TOOLS | {"read_file"}
"""The built-in tools whose call needs a file the request names."""

WRITE_WORDS = frozenset(
    [
        "write",
        "save",
        "copy",
        "append",
        "rename",
        "move",
        "store",
        "put",
        "prepend",
        "duplicate",
        "overwrite",
        "replace",
    ]
)
"""Words that ask for a write whatever demo is nearest (``content_words`` forms)."""

DERIVED_WORDS = frozenset(
    [
        "append",
        "prepend",
        "reverse",
        "reversed",
        "sort",
        "sorted",
        "copy",
        "duplicate",
        "uppercase",
        "lowercase",
        "capitalise",
        "capitalize",
        "backup",
        "merge",
        "combine",
        "concatenate",
    ]
)
"""Words that make a write's content from a file's content (``content_words`` forms)."""

TWO_TASKS = "I cannot do that in one step: it asks for two things. Ask me for one, then the other."
"""The refusal of a request of two tasks for two tools (``intent.two_tasks``)."""

_TARGET_WORDS = ("to", "into", "called", "named", "as")
"""Words before the file a write goes to ("... to reversed.txt", "... called config.bak")."""


def two_step_refusal(request: str, demo: Demo | None) -> str | None:
    """The one-sentence refusal of ``request`` when it is of two steps (module invariants), else
    ``None``. ``demo`` is the demo nearest the request (``prompt.nearest_demo``)."""
    words = content_words(request)
    files = file_names(request)
    writes = (demo is not None and demo.tool in WRITING_TOOLS) or bool(words & WRITE_WORDS)
    if not writes or not files:
        return None
    if len(files) >= 2:
        target = _target(request, files)
        sources = " and ".join(f for f in files if f != target)
        return (
            f"I cannot do that in one step: it needs {sources} read first, then {target} "
            "written from it. Ask me to read it, then to write the new text."
        )
    if words & DERIVED_WORDS:
        return (
            f"I cannot do that in one step: it needs {files[0]} read first, then written from "
            "it. Ask me to read it, then to write the new text."
        )
    return None


def _target(request: str, files: list[str]) -> str:
    """The file a two-file request writes: the one after ``to``, ``into``, ``called``... (the
    last such); else the first file named when the request replaces or overwrites ("Replace the
    contents of a.txt with ..."), the last one named otherwise."""
    tokens = split_words(request)
    lowered = {token.lower() for token in tokens}
    found = files[0] if lowered & {"replace", "overwrite"} else files[-1]
    for before, token in itertools.pairwise(tokens):
        if token in files and before.lower() in _TARGET_WORDS:
            found = token
    return found


_QUESTIONS = "what what's whats which who whom whose where when why how is are am was were do does did"
QUESTION_WORDS = frozenset(f"{_QUESTIONS} can could will would should shall may might has have had i".split())
"""First words of a question or of a wish ("I need..."): answered with the request quoted."""

_SWAPS = {"me": "you", "my": "your", "mine": "yours", "i": "you", "myself": "yourself", "i'm": "you're"}
"""The request's words for its writer, as the answer says them."""

REFUSAL_CHARS = 200
"""Most characters of a request quoted or repeated in a refusal."""


def refusal(request: str) -> str:
    """The sentence that refuses ``request`` (module invariants)."""
    text = " ".join(request.split())
    words = [w for w in text.rstrip(".!").split() if w.lower().strip(",") != "please"]
    if not words:
        return "I cannot do that with the tools I have."
    if text.endswith("?") or words[0].lower() in QUESTION_WORDS or len(text) > REFUSAL_CHARS:
        return f'I cannot answer that with the tools I have: "{text[:REFUSAL_CHARS]}"'
    said = [_SWAPS.get(w.lower(), w) for w in words]
    if said[0][1:2].islower() or len(said[0]) == 1:
        said[0] = said[0].lower()
    return f"I cannot {' '.join(said)} with the tools I have."
