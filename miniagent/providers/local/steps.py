"""Requests of two steps, which the embedded model answers "I cannot do that in one step".

Invariants:

- A request is of two steps when it asks for a write (its demo's tool is ``write_file`` or
  ``edit_file``, or it says ``write``, ``save``, ``copy``...) whose content must first be read
  from a file: it names two or more files (one to read, one to write: "Read fruits.txt and
  write its lines in reverse order to reversed.txt"), or it derives the content from the file it
  names (``append``, ``reverse``, ``sort``, ``uppercase``...).
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

__all__ = ["two_step_refusal"]

WRITING_TOOLS = frozenset(["write_file", "edit_file"])
"""The built-in tools that change a file."""

WRITE_WORDS = frozenset(
    ["write", "save", "copy", "append", "rename", "move", "store", "put", "prepend", "duplicate", "overwrite"]
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
