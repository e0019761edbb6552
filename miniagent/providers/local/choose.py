"""Which demo a request gets: the embedded model's choice of the tool of a first reply.

Invariants:

- A tool no built-in demo knows (``@tool``, MCP) is chosen when it is nearer the request than
  every built-in demo (``any_tool.nearest_tool`` against the demos' intent words), unless the
  request has the shape of a built-in tool's job (``intent.code_shaped``: a marker comment, a
  command in backticks: "Find the TODO comment" is a search even beside an MCP ``add_todo``);
  and always when the request names it. It gets a ``custom`` demo, which is not shown.
- Else the built-in tool the request's cue words ask for (``intent.choose_tool``), among:

  - the file tools only when the request names a file ("Show me all TODOs" is a search);
  - ``edit_file`` only when the request says what to replace with what (``spans.edit_pairs``);
  - ``write_file`` only when it names the file the write goes to (``spans.write_target``) and
    the text to write (``spans.write_content``: "Create recipes.txt" wrote "Create Create
    Create" over it);

  and a request that tells to change a file which no write or edit fits gets no tool at all
  ("Replace line 3 of notes.txt with hi" is refused, never answered by a read); a command in
  backticks that the request does not tell to run is run only when it only reads
  (``commands``). The demo is
  the one of that tool nearest the request (``_demo_of``).
- Else, for a request that names a file and asks about it (``intent.asks_about``: a question,
  not "Send config.ini to Bob"), the ``read_file`` demo; else ``None``: no tool is guessed.

Why: at 135M parameters the model writes good arguments for a given tool but picks the tool
badly (``list_dir`` for most requests, measured); the words that say what to do pick it well.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...model import ToolSpec
from .any_tool import nearest_tool
from .commands import only_reads
from .demos import DEMOS, MORE_DEMOS, ROUTING_DEMOS, Demo
from .intent import (
    asks_about,
    asks_refused,
    choose_tool,
    code_shaped,
    cue_words,
    tells_to_change,
    tells_to_run,
)
from .spans import backticked, call_spans, edit_pairs, write_content, write_target
from .steps import FILE_TOOLS, WRITING_TOOLS
from .words import content_words as _words
from .words import file_names

__all__ = ["demo_fits", "demo_tools", "nearest_demo"]


def _intent_words(demo: Demo) -> set[str]:
    """The content words of ``demo``'s request that say what to do: without the words its call
    copies into its arguments (``"hi there"`` of "Write the text hi there into hi.txt." is what
    to write, not what to do)."""
    copied: set[str] = set()
    for value in demo.arguments.values():
        if isinstance(value, str):
            copied |= _words(value)
    return _words(demo.user) - copied


def nearest_demo(request: str, tools: Sequence[ToolSpec]) -> Demo | None:
    """The demo for ``request`` (its words, without a text attached) among the demos of
    ``tools`` (module invariants), or ``None`` when no tool is to be called."""
    fitting = _fitting(tools)
    known = {demo.tool for demo in fitting}
    offered = known if file_names(request) else known - FILE_TOOLS
    if not edit_pairs(request):
        offered = offered - {"edit_file"}  # an edit needs what to replace and with what
    if write_target(request) is None or not write_content(request):
        offered = offered - {"write_file"}  # a write needs the file it goes to and its text
    chosen = choose_tool(request, offered)
    other, score = nearest_tool(request, [spec for spec in tools if spec.name not in known])
    if (
        other is not None
        and score > _overlap(request, fitting)
        and (chosen is None or score >= 100 or not code_shaped(request))
    ):
        return Demo(request, other.name, {}, "", "", custom=True)
    if chosen is not None and tells_to_change(request) and chosen[0] not in WRITING_TOOLS:
        return None  # a change it cannot make is refused, never answered by a read
    code = backticked(request)
    asked_about = code is not None and not tells_to_run(request) and not only_reads(code)
    if chosen is not None and chosen[0] == "run_command" and asked_about:
        return None  # a command asked about is not run (commands.py)
    if chosen is not None:
        return _demo_of(chosen[0], request, fitting)
    if file_names(request) and asks_about(request) and not asks_refused(request):
        return next((d for d in DEMOS if d.tool == "read_file" and d in fitting), None)
    return None


def _fitting(tools: Sequence[ToolSpec]) -> list[Demo]:
    by_name = {spec.name: spec for spec in tools}
    return [demo for demo in (*DEMOS, *MORE_DEMOS, *ROUTING_DEMOS) if demo_fits(demo, by_name)]


def demo_tools(tools: Sequence[ToolSpec]) -> set[str]:
    """The names of ``tools`` some built-in demo shows (the tools the router chooses)."""
    return {demo.tool for demo in _fitting(tools)}


def _overlap(request: str, demos: Sequence[Demo]) -> int:
    """The most intent words (``_intent_words``) ``request`` shares with one of ``demos``."""
    wanted = _words(request)
    return max((len(wanted & _intent_words(demo)) for demo in demos), default=0)


def _demo_of(tool: str, request: str, demos: Sequence[Demo]) -> Demo:
    """The demo of ``tool`` nearest ``request``: one of the request's kind first (``_kind``: a
    listing of a named folder takes a demo with a ``path``, one of the project a demo without;
    a search for a definition, a marker comment or a word takes a demo of that search), then
    the one sharing most cue words (``intent.cue_words``), then the first."""
    wanted = set(cue_words(request))
    kind = _kind(tool, call_spans(tool, request), wanted)

    def score(demo: Demo) -> tuple[bool, int]:
        theirs = set(cue_words(demo.user))
        mine = _kind(tool, {k: [v] for k, v in demo.arguments.items()}, theirs)
        return mine == kind, len(wanted & theirs)

    return max((demo for demo in demos if demo.tool == tool), key=score)


def _kind(tool: str, spans: dict[str, Any], cues: set[str]) -> str:
    """What kind of call of ``tool`` a request (or demo) with these argument ``spans`` and cue
    words asks for: ``"path"`` or ``""`` for a listing; ``"marker"``, ``"define"`` or
    ``"word"`` for a search; ``""`` for other tools."""
    if tool == "list_dir":
        return "path" if "path" in spans else ""
    if tool == "grep":
        pattern = spans.get("pattern", [""])[0]
        if "marker" in cues or (pattern.isupper() and pattern.isalpha()):
            return "marker"
        return "define" if cues & {"define", "function", "class", "method"} else "word"
    return ""


def demo_fits(demo: Demo, tools: dict[str, ToolSpec]) -> bool:
    spec = tools.get(demo.tool)
    if spec is None:
        return False
    properties = spec.input_schema.get("properties")
    return isinstance(properties, dict) and all(name in properties for name in demo.arguments)
