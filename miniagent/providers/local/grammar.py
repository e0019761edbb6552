"""The grammars of the embedded model's native client: what each reply may be (llama.cpp GBNF).

Invariants:

- ``turn_grammar`` decides each reply from the conversation's last message (the turn policy):

  - after a USER message: one tool call. Its tool is the tool of the demo nearest the request
    (``prompt.nearest_demo``) and its arguments have the demo's argument names (plus the
    tool's required ones); with no demo near, no built-in tool is guessed: a tool no demo
    shows (``@tool``, MCP), or an answer that is ``steps.refusal`` (the request in its own
    words) or a greeting (``allow_answer_first`` frees the answer and lets any tool be called);
  - after a TOOL RESULT: an answer that quotes the result (``quotes.answer_grammar``: the
    tool's opener and the whole result when it is short, else one line of it followed by
    ``(one line of N)``);
  - after a FAILED tool result whose error suggests the file meant ("file not found: README
    (did you mean README.md?)"): the same call with that file;
  - after any other FAILED tool result: ``"It failed: "`` quoting the error (another call was
    a guess: ``list_dir("to")`` after a refused write, measured).

- A string argument of a built-in tool's call is the request's own span when it has one
  (``spans.call_spans``: the content of a write, the old and new text of an edit, the command
  in backticks, the folder listed), else COPIED: one to ``COPY_WORDS`` words, each a word of
  the user's request (outer punctuation stripped) or a word the chosen demo's call adds to its
  own request (``wc``, ``-l``, ``def``), separated by single spaces. The 135M model writes good arguments
  only when it can copy them; free strings ran away in 3 of 11 tasks (measured).
- Every grammar is finite: the longest reply is bounded by the words, the quoted lines, or
  ``ANSWER_CHARS``; nothing can loop until the output-token limit.

Why: at 135M parameters the model follows demos, not instructions. The grammar turns each reply
into choices the model makes well (which words, which line) and leaves out what it does badly
(spelling a path, paraphrasing a result).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from ...messages import Message
from ...model import ToolSpec
from ...output import is_feedback
from .any_tool import call_spec
from .choose import demo_tools
from .demos import Demo
from .intent import two_tasks
from .prompt import attached_text, last_request
from .quotes import answer_grammar, quote_rule
from .quotes import literal as _literal
from .spans import call_spans
from .steps import FILE_TOOLS, TWO_TASKS, WRITING_TOOLS, refusal, two_step_refusal
from .words import STRIP as _STRIP
from .words import file_names, is_file_name, split_words

__all__ = [
    "ANSWER_CHARS",
    "COPY_WORDS",
    "answer_grammar",
    "call_grammar",
    "copy_words",
    "turn_grammar",
]

ANSWER_CHARS = 300
"""Most characters of a free text answer (one line)."""

SENTENCE_CHARS = 200
"""Most characters of the one sentence of a first answer (after its opener)."""

COPY_WORDS = 8
"""Most words of one copied string argument."""

CONTENT_KEYS = frozenset(["content", "new_text"])
"""Arguments that are a file's new content (``write_file``'s ``content``, ``edit_file``'s
``new_text``): copied words of them are never file names ("Write the word banana to fruits.txt"
edited banana into "fruits.txt", measured)."""

FAILED = "It failed: "
FILE = "\x00file"
"""In a template: one file name of the request (any run of words when it names none)."""
GREETING = "Hello! What can I do for you?"
"""The greeting, the other first answer than a refusal (``steps.refusal``): one fixed sentence,
since a free one after "Hello! " stated made-up facts ("Hello! 20°C (68°F) is the average
temperature in Helsinki.", measured)."""


GREETS = re.compile(
    r"^\W*(?:hi|hello|hey|howdy|greetings|good (?:morning|afternoon|evening|day)|thanks|thank you)\b", re.I
)
"""A request that greets (or thanks): answered with ``GREETING``; every other request with no
tool near is refused (the model chose the greeting for "Write hello to the README", measured)."""


def copy_words(request: str, demo: Demo | None = None) -> list[str]:
    """The words a string argument may be made of: the words of ``request`` (split at white
    space, outer punctuation stripped; an acronym's plural also in the singular: ``TODOs``,
    ``TODO``) and the words of ``demo``'s argument values that its request does not contain;
    in order, each once. Words with a double quote, a backslash or a
    control character are left out (they would need escaping in JSON)."""
    found: list[str] = []
    demo_request = set(split_words(demo.user)) if demo is not None else set()
    added = [
        word
        for value in (demo.arguments.values() if demo is not None else ())
        if isinstance(value, str)
        for word in split_words(value)
        if word not in demo_request
    ]
    for word in [*split_words(request), *added]:
        singular = [word[:-1]] if re.fullmatch(r"[A-Z0-9_]{2,}s", word) else []
        for form in [word, *singular]:
            if form and form not in found and not re.search(r'["\\\x00-\x1f]', form):
                found.append(form)
    return found


def turn_grammar(
    messages: Sequence[Message],
    tools: Sequence[ToolSpec],
    demo: Demo | None,
    *,
    allow_answer_first: bool = False,
    output_schema: dict[str, Any] | None = None,
) -> str:
    """The grammar of the next reply to ``messages`` with ``tools`` (the module's turn policy).

    Args:
        messages: the conversation so far, oldest first.
        tools: the tools offered; without tools any text is allowed.
        demo: the demo nearest the last user request (``prompt.nearest_demo``), or
            ``None``.
        allow_answer_first: let the first reply to a user message be any answer.
        output_schema: the JSON Schema of the final answer (``ModelRequest.output_schema``):
            every answer is then a JSON value of it instead of words (its strings copied from
            the request and the tool results, ``_answer_words``; free strings of at most 200
            characters before any result), also right after the loop's feedback on an
            invalid answer.

    Returns:
        A GBNF grammar (text) whose ``root`` is the whole reply.
    """
    last = messages[-1] if messages else None
    if output_schema is not None and (not tools or last is None or _answers_now(last)):
        return json_grammar(output_schema, _answer_words(messages) if tools else ())
    if not tools:
        return "root ::= [^\\x00]*\n"
    request = last_request(messages)
    if last is not None and last.role == "tool":
        if output_schema is not None:
            return call_grammar(tools, copy_words(request), answer=("json", output_schema))
        if not last.is_error:
            return answer_grammar(last.content, _called_tool(messages, last.tool_call_id), request)
        retry = _suggested_retry(messages, tools)
        if retry is not None:
            return retry
        return call_grammar([], (), answer=("quote", FAILED, last.content))  # no guess after it
    attached = attached_text(last)
    if attached is not None and output_schema is None and not file_names(request):
        return answer_grammar(attached, "read_file", request)  # a text given with the request: quoted
    if demo is not None and demo.tool in WRITING_TOOLS and not file_names(request):
        demo = None  # a write needs the file the request names: never a guessed one
    two_steps = two_step_refusal(request, demo) if WRITING_TOOLS & {t.name for t in tools} else None
    if two_steps is None and (demo is None or not demo.custom) and two_tasks(request):
        two_steps = TWO_TASKS
    if two_steps is not None and output_schema is None:
        return f"root ::= {_literal(two_steps)}\n"
    if demo is not None and demo.custom:
        return _any_tool_call(tools, demo.tool, request)
    if demo is not None and not allow_answer_first:
        spans = call_spans(demo.tool, request)
        return call_grammar(tools, copy_words(request), only=demo.tool, demo=demo, spans=spans)
    if output_schema is not None:
        return call_grammar(tools, copy_words(request, demo), answer=("json", output_schema))
    if not allow_answer_first:  # no demo near: no built-in tool is guessed
        known = demo_tools(tools)
        others = [t for t in _unguessed(tools, request) if t.name not in known]
        first = GREETING if GREETS.search(request) else refusal(request)
        return call_grammar(others, copy_words(request), answer=("first", first))
    return call_grammar(_unguessed(tools, request), copy_words(request, demo), answer=("free", ""))


GUESSED_TOOLS = frozenset(["run_command"])
"""Built-in tools never called without a demo near the request: a command is not guessed."""


def _unguessed(tools: Sequence[ToolSpec], request: str) -> list[ToolSpec]:
    """``tools`` without what would be a guess: the built-in tools that write (a write or an
    edit is made only with the spans of the request that asks for it, ``spans``), the built-in
    file tools when ``request`` names no file ("Translate this poem into French." wrote a file
    "this", then read one), and ``GUESSED_TOOLS``."""
    left = list(tools) if file_names(request) else [t for t in tools if t.name not in FILE_TOOLS]
    return [t for t in left if t.name not in WRITING_TOOLS | GUESSED_TOOLS]  # never a guess


_SUGGESTION = re.compile(r"\(did you mean ([^ ()?]+)\?\)$")
"""A file tool's suggestion after "file not found: README" (``toolbox.files``): one file."""


def _suggested_retry(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> str | None:
    """The grammar of the failed call made again with the one ``path`` its error suggests
    ("file not found: README (did you mean README.md?)"), else ``None``: the tool's own
    correction, which the model does not make (it quoted the error, measured)."""
    last = messages[-1]
    found = _SUGGESTION.search(last.content.strip())
    calls = [c for m in messages if m.role == "assistant" for c in m.tool_calls]
    failed = next((c for c in calls if c.id == last.tool_call_id), None)
    if found is None or failed is None or "path" not in failed.input or _failed_twice(messages):
        return None
    if failed.name in WRITING_TOOLS:
        return None  # a change goes only to the file the request names ("APP.PY" edited app.py)
    spec = next((t for t in tools if t.name == failed.name), None)
    if spec is None:
        return None
    arguments = {**failed.input, "path": found.group(1)}
    demo = Demo("", spec.name, arguments, "", "")
    spans = {key: [value] for key, value in arguments.items() if isinstance(value, str)}
    return call_grammar([spec], list(spans), only=spec.name, demo=demo, spans=spans)


def _failed_twice(messages: Sequence[Message]) -> bool:
    """Whether the call whose result (failed) ends ``messages`` was made and failed before, for
    the same request: then the answer quotes the error (the same call again never helped: "grep
    this in this" until ``max_turns``, measured)."""
    calls = {c.id: c for m in messages if m.role == "assistant" for c in m.tool_calls}
    last_user = max((i for i, m in enumerate(messages) if m.role == "user"), default=-1)
    failed = [
        calls[m.tool_call_id] for m in messages[last_user + 1 :] if m.is_error and m.tool_call_id in calls
    ]
    if len(failed) < 2:
        return False
    *before, latest = failed
    return any(c.name == latest.name and c.input == latest.input for c in before)


def _any_tool_call(tools: Sequence[ToolSpec], name: str, request: str) -> str:
    """The call of the tool ``name`` (no demo knows it), its schema narrowed to ``request``
    (``any_tool.call_spec``)."""
    spec = next(t for t in tools if t.name == name)
    plan = call_spec(spec, request, copy_words(request))
    return call_grammar([plan.spec], plan.words or copy_words(request))


def _answers_now(last: Message) -> bool:
    """Whether the reply after ``last`` must be the structured answer: a tool result came back
    fine, or the loop asked again for a valid answer."""
    return (last.role == "tool" and not last.is_error) or is_feedback(last)


ANSWER_WORDS = 400
"""Most words a JSON answer's strings are copied from."""


def _answer_words(messages: Sequence[Message]) -> list[str]:
    """The words a JSON answer's strings are copied from: the last request's and its tool
    results' (``copy_words``) but numbers (they are the answer's numbers, not its strings:
    ``{"file": "1"}``, measured), at most ``ANSWER_WORDS``; none without a tool result."""
    last_user = max((i for i, m in enumerate(messages) if m.role == "user"), default=-1)
    results = [m.content for m in messages[last_user + 1 :] if m.role == "tool" and not m.is_error]
    if not results:
        return []
    request = last_request(messages)
    words = copy_words(" ".join([request, *results]))
    return [w for w in words if not re.fullmatch(r"[-+]?\d+(\.\d+)?", w)][:ANSWER_WORDS]


def json_grammar(schema: dict[str, Any], words: Sequence[str] = ()) -> str:
    """The grammar of an answer that is one JSON value of ``schema``; its strings copied from
    ``words`` when there are any (a free string ran away after a tool result, measured), else
    free (at most 200 characters)."""
    g = _Grammar(words)
    g.add("root", g.schema(schema, "json"))
    return g.text()


def _called_tool(messages: Sequence[Message], call_id: str | None) -> str:
    for message in reversed(messages):
        for call in message.tool_calls:
            if call.id == call_id:
                return call.name
    return ""


# --- calls --------------------------------------------------------------------------------------


def call_grammar(
    tools: Sequence[ToolSpec],
    words: Sequence[str],
    *,
    only: str | None = None,
    demo: Demo | None = None,
    answer: tuple[Any, ...] | None = None,
    spans: dict[str, list[str]] | None = None,
) -> str:
    """The grammar of one tool call of ``tools`` (only the tool named ``only``, when given),
    string arguments copied from ``words``, or an answer.

    Args:
        tools: the tools offered.
        words: the words string arguments are made of (``copy_words``); empty: any string.
        only: the one tool that may be called.
        demo: with ``only``, the demo whose call the call follows: the same argument names
            (and the tool's required ones), and each string argument of the demo's is a
            template: the words the demo's call adds to its request stay, each run of words it
            copied from its request is a run of ``words``.
        answer: ``None`` (a call only); ``("free", openers)``: one sentence of at most
            ``SENTENCE_CHARS`` after one of ``openers`` (``""``: any line of at most
            ``ANSWER_CHARS``); ``("first", sentence)``: that sentence (the refusal, or the
            greeting);
            ``("quote", opener, text)``: ``opener`` quoting a line of ``text``;
            ``("json", schema)``: a JSON value of ``schema``.
        spans: with ``only``, per string argument the values it may be (``spans.call_spans``:
            the request's own words, whole), instead of its template.
    """
    g = _Grammar(words, _templates(demo) if only is not None else {}, spans if only is not None else {})
    calls = []
    for index, spec in enumerate(tools):
        if only is not None and spec.name != only:
            continue
        schema = spec.input_schema or {"type": "object"}
        if only is not None:
            schema = _narrowed(schema, set(demo.arguments) if demo is not None else None)
        arguments = g.schema(schema, g.fresh(f"args{index}"))
        if arguments == "value":
            arguments = "object"
        head = _literal(f'{{"name": {json.dumps(spec.name, ensure_ascii=False)}, "arguments": ')
        calls.append(g.add(f"call{index}", f'{head} {arguments} "}}"'))
    choices = []
    if calls:
        g.add("call", f'"<tool_call>\\n" ( {" | ".join(calls)} ) "\\n</tool_call>"')
        choices.append("call")
    if answer is not None and answer[0] == "json":
        free = _Grammar()  # the answer's strings are free (bounded), not copied
        value = free.schema(answer[1], "json")
        g.rules.update(free.rules)
        g.add("answer", value)
        choices.append("answer")
    elif answer is not None or not calls:
        g.add("answer", _answer_rule(answer))
        choices.append("answer")
    g.add("root", " | ".join(choices))
    return g.text()


def _answer_rule(answer: tuple[Any, ...] | None) -> str:
    free = f"[^\\x00\\n]{{0,{ANSWER_CHARS - 1}}}"
    if answer is None or (answer[0] == "free" and not answer[1]):
        return f"[^<\\x00 \\n] {free}"
    sentence = f"( [^\\x00\\n.!?] | [.!?] [^\\x00\\n .!?] ){{0,{SENTENCE_CHARS}}} [.!?]"
    if answer[0] == "first":  # the refusal, or the greeting
        return _literal(answer[1])
    if answer[0] == "free":  # one sentence: the model's second sentences repeat the first
        return f"( {' | '.join(_literal(o) for o in answer[1])} ) {sentence}"
    return quote_rule([answer[1]], answer[2], True)


def _templates(demo: Demo | None) -> dict[str, list[str | None]]:
    """Per string argument of ``demo``'s call: its words; ``FILE`` for a file name copied from
    the demo's request, ``None`` for a run of other words copied from it (``"wc -l log.txt"``
    for "How many lines does log.txt have?": ``["wc", "-l", FILE]``)."""
    if demo is None:
        return {}
    copied = set(split_words(demo.user))
    templates: dict[str, list[str | None]] = {}
    for name, value in demo.arguments.items():
        if not isinstance(value, str):
            continue
        parts: list[str | None] = []
        for word in value.split():
            if word.strip(_STRIP) not in copied:
                parts.append(word)
            elif is_file_name(word):
                parts.append(FILE)
            elif not parts or parts[-1] is not None:
                parts.append(None)
        templates[name] = parts
    return templates


def _narrowed(schema: dict[str, Any], keys: set[str] | None) -> dict[str, Any]:
    """``schema`` with only the properties in ``keys`` and the required ones, all required."""
    properties = schema.get("properties")
    if keys is None or not isinstance(properties, dict):
        return schema
    wanted = keys | set(schema.get("required") or ())
    kept = {name: value for name, value in properties.items() if name in wanted}
    return {**schema, "properties": kept, "required": list(kept)}


_JSON_RULES = r"""
ws ::= [ ]?
string ::= "\"" char{0,200} "\""
char ::= [^"\\\x00-\x1f] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F])
integer ::= "-"? ([0-9] | [1-9] [0-9]{1,15})
number ::= integer ("." [0-9]{1,15})? ([eE] [-+]? [0-9]{1,3})?
boolean ::= "true" | "false"
null ::= "null"
value ::= string | number | boolean | null | object | array
object ::= "{" ( string ": " value ( ", " string ": " value ){0,15} )? "}"
array ::= "[" ( value ( ", " value ){0,15} )? "]"
"""


MAX_DEPTH = 24
"""Deepest nesting of schemas given rules of their own; deeper values are any JSON value."""

_OWN_RULES = ("root", "call", "answer", "word", "file", "prose", "copied")
_SHARED = frozenset([*re.findall(r"^(\S+) ::=", _JSON_RULES, re.M), *_OWN_RULES])
"""Rule names the grammars use for themselves: never a name of a schema's rule."""


class _Grammar:
    """Builds GBNF rules for JSON Schemas (one rule per sub-schema); strings are copied from
    ``words`` when there are any, string properties named in ``templates`` follow their
    template (``_templates``). Every rule name is given once (``fresh``), whatever the names
    of the properties."""

    def __init__(
        self,
        words: Sequence[str] = (),
        templates: dict[str, list[str | None]] | None = None,
        spans: dict[str, list[str]] | None = None,
    ) -> None:
        self.rules: dict[str, str] = {}
        self.spans = spans or {}
        self.taken: set[str] = set(_SHARED)
        self.string = "string"
        self.templates = templates or {}
        if words:
            self.add("word", " | ".join(_literal(w) for w in words))
            files = [w for w in words if is_file_name(w)]
            self.add("file", " | ".join(_literal(w) for w in files) if files else "word")
            prose = [w for w in words if not is_file_name(w)]
            self.add("prose", " | ".join(_literal(w) for w in prose) if prose else "word")
            self.string = self.add("copied", f'"\\"" word ( " " word ){{0,{COPY_WORDS - 1}}} "\\""')

    def add(self, name: str, body: str) -> str:
        self.rules[name] = body
        self.taken.add(name)
        return name

    def fresh(self, name: str) -> str:
        """``name``, or ``name-2``, ``name-3``... : the first not given yet (now taken)."""
        chosen, number = name, 1
        while chosen in self.taken:
            number += 1
            chosen = f"{name}-{number}"
        self.taken.add(chosen)
        return chosen

    def text(self) -> str:
        """The grammar: the rules added, then the shared JSON rules."""
        body = "\n".join(f"{name} ::= {rule}" for name, rule in self.rules.items())
        return f"{body}\n{_JSON_RULES.strip()}\n"

    def schema(self, schema: Any, name: str, depth: int = 0) -> str:
        """Return a rule (or primitive rule name) matching values of ``schema``; ``name`` is
        the rule's name (already ``fresh``), ``depth`` how deep it is (``MAX_DEPTH``)."""
        if not isinstance(schema, dict) or depth > MAX_DEPTH:
            return "value"
        if "enum" in schema and isinstance(schema["enum"], list) and schema["enum"]:
            return self.add(
                name, " | ".join(_literal(json.dumps(v, ensure_ascii=False)) for v in schema["enum"])
            )
        if "const" in schema:
            return self.add(name, _literal(json.dumps(schema["const"], ensure_ascii=False)))
        kind = schema.get("type")
        simple = {"string": self.string, "integer": "integer", "number": "number", "boolean": "boolean"}
        if isinstance(kind, str) and kind in simple:
            return simple[kind]
        if kind == "array":
            item = self.schema(schema.get("items"), self.fresh(f"{name}-item"), depth + 1)
            return self.add(name, f'"[" ( {item} ( ", " {item} ){{0,15}} )? "]"')
        if kind == "object" and isinstance(schema.get("properties"), dict):
            return self.object(schema, name, depth)
        return "value"

    def value(self, schema: Any, key: str, name: str, depth: int = 0) -> str:
        """The rule of property ``key``: its spans when it has some (``spans``), else its
        template when it has one (``templates``), when it is a string; else its schema's."""
        spans = self.spans.get(key) if depth == 1 else None
        if spans and isinstance(schema, dict) and schema.get("type") == "string":
            return self.add(name, " | ".join(_literal(json.dumps(s, ensure_ascii=False)) for s in spans))
        template = self.templates.get(key) if depth == 1 else None
        if template is None or not isinstance(schema, dict) or schema.get("type") != "string":
            return self.schema(schema, name, depth)
        unit = "prose" if key in CONTENT_KEYS else "word"  # content is never a file name
        run = f'{unit} ( " " {unit} ){{0,{COPY_WORDS - 1}}}' if "word" in self.rules else "char{1,200}"
        file = "file" if "file" in self.rules and key not in CONTENT_KEYS else run
        parts = [run if part is None else file if part == FILE else _literal(part) for part in template]
        return self.add(name, '"\\"" ' + ' " " '.join(parts or ['""']) + ' "\\""')

    def object(self, schema: dict[str, Any], name: str, depth: int = 0) -> str:
        """Properties in the schema's order; required ones always, optional ones may be left out.
        Built from the last property back (no recursion per property: any number of them)."""
        properties: dict[str, Any] = schema["properties"]
        required = set(schema.get("required") or ())
        keys = list(properties)
        values = [
            self.value(properties[k], k, self.fresh(f"{name}-{_rule_name(k)}"), depth + 1) for k in keys
        ]
        # rest[(i, emitted)]: the properties from i on; emitted: whether one was written before.
        rest = {(len(keys), True): self.add(self.fresh(f"{name}-end"), '""')}
        rest[(len(keys), False)] = rest[(len(keys), True)]
        for i in range(len(keys) - 1, -1, -1):
            key = _literal(json.dumps(keys[i], ensure_ascii=False))
            for emitted in (True, False):
                separator = '", " ' if emitted else ""
                pair = f'{separator}{key} ": " {values[i]} {rest[(i + 1, True)]}'
                body = pair if keys[i] in required else f"{pair} | {rest[(i + 1, emitted)]}"
                rule = self.fresh(f"{name}-r{i}{'c' if emitted else 'f'}")
                rest[(i, emitted)] = self.add(rule, body)
        return self.add(name, f'"{{" {rest[(0, False)]} "}}"')


def _rule_name(text: str) -> str:
    """A readable GBNF rule-name part for ``text`` (ASCII letters, digits and ``-``); not
    unique (``Mode`` and ``mode`` give ``mode``): ``_Grammar.fresh`` makes names unique."""
    cleaned = "".join(c if c.isascii() and c.isalnum() else "-" for c in text.lower())
    return re.sub("-+", "-", cleaned).strip("-") or "x"
