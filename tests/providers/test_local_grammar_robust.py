"""Grammars of the embedded model for any input: every text, every property name, any size.

Each kind of input that once broke a grammar is a test here: a control character in a tool
result (llama.cpp's GBNF has no ``\\b``: "failed to parse grammar"), two property names that
gave one rule name (``Mode`` and ``mode``), and a schema so wide that building its grammar
raised ``RecursionError``. ``check_gbnf`` is a small checker of what llama.cpp's parser needs
(defined once, every reference defined, literals with its escapes only); the real parser is
used in ``test_local_model.py::test_llama_cpp_parses_the_grammars_of_awkward_inputs``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from miniagent.messages import Message, ToolCall
from miniagent.model import ToolSpec
from miniagent.providers.local import prompt as local_prompt
from miniagent.providers.local.grammar import json_grammar, turn_grammar

_NAME = r"[a-zA-Z0-9_-]+"
_ESCAPE = r'\\(?:x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[nrt\\"\[\]])'
_LITERAL = re.compile(rf'"(?:[^"\\\x00-\x1f\x7f]|{_ESCAPE})*"')
_CLASS = re.compile(rf"\[\^?(?:[^\]\\\x00-\x1f]|{_ESCAPE})*\]")
_TOKEN = re.compile(rf"\s+|{_LITERAL.pattern}|{_CLASS.pattern}|{_NAME}|[()|*+?]|\{{\d+(?:,\d*)?\}}")


def check_gbnf(grammar: str) -> dict[str, str]:
    """Parse ``grammar`` as llama.cpp's GBNF parser would accept it (one rule a line); return
    its rules. Fails the test on a rule defined twice, a reference to no rule, or a literal with
    a raw control character or an escape llama.cpp does not know."""
    rules: dict[str, str] = {}
    for line in grammar.splitlines():
        if not line.strip():
            continue
        found = re.fullmatch(rf"({_NAME}) ::= (.*)", line, re.S)
        assert found, f"not a rule: {line[:80]!r}"
        name, body = found.groups()
        assert name not in rules, f"rule {name} defined twice"
        rules[name] = body
    for name, body in rules.items():
        position = 0
        while position < len(body):
            token = _TOKEN.match(body, position)
            assert token, f"rule {name}: cannot parse {body[position : position + 40]!r}"
            word = token.group()
            if re.fullmatch(_NAME, word) and not word.isdigit():
                assert word in rules, f"rule {name} refers to undefined {word}"
            position = token.end()
    assert "root" in rules
    return rules


@pytest.fixture
def specs(tmp_path: Path) -> tuple[ToolSpec, ...]:
    from miniagent.toolbox import default_tools

    return tuple(ToolSpec(t.name, t.description, t.input_schema) for t in default_tools(tmp_path))


def _after(result: str, tool: str = "read_file", error: bool = False) -> list[Message]:
    call = ToolCall("c1", tool, {"path": "notes.txt"})
    return [
        Message("user", "What does notes.txt say?"),
        Message("assistant", "", (call,)),
        Message("tool", result, tool_call_id="c1", is_error=error),
    ]


CONTROL = "".join(chr(c) for c in [*range(0x20), 0x7F, 0x85, 0x9F]) + "\ud800"
"""Every C0 control character, DEL, two C1 ones and a lone surrogate."""


@pytest.mark.parametrize("error", [False, True])
@pytest.mark.parametrize("text", ["back\bspace", f"all {CONTROL} of them", "x" * 300 + "\b\n" * 3])
def test_a_tool_result_with_control_characters_gives_a_valid_grammar(
    specs: tuple[ToolSpec, ...], text: str, error: bool
) -> None:
    """A notes.txt holding a backspace made llama.cpp answer 400 "failed to parse grammar"."""
    messages = _after(text, error=error)
    demo = local_prompt.nearest_demo(local_prompt.last_request(messages), specs)
    grammar = turn_grammar(messages, specs, demo)
    check_gbnf(grammar)
    assert "\\b" not in grammar.replace("\\\\", "")
    if "back" in text and not error:
        assert '"It says: " ) ( "\\"back^Hspace\\"" )' in grammar  # shown as cat -v shows it


def test_control_characters_in_requests_enums_and_names_give_a_valid_grammar() -> None:
    spec = ToolSpec(
        "pick\bone",
        "Pick.",
        {"type": "object", "properties": {"k\by": {"enum": ["a\bb", "c\x00"]}, "z": {"const": "\f"}}},
    )
    request = Message("user", "pick\b the a\fb one\x00 now")
    check_gbnf(turn_grammar([request], (spec,), None))
    check_gbnf(json_grammar(spec.input_schema))


def test_properties_whose_names_differ_only_in_case_or_punctuation_get_rules_of_their_own() -> None:
    """ "Mode" and "mode" shared one rule name: the second overwrote the first."""
    schema = {
        "type": "object",
        "properties": {
            "Mode": {"enum": ["fast", "slow"]},
            "mode": {"type": "object", "properties": {"x": {"type": "integer"}}},
            "mo-de": {"type": "array", "items": {"enum": [1, 2]}},
            "r0f": {"type": "boolean"},  # the name of a rule of the object's own
            "ré": {"enum": ["é"]},
            "日本": {"enum": ["a"]},
            "": {"enum": ["empty"]},
        },
        "required": ["Mode", "mode"],
    }
    rules = check_gbnf(json_grammar(schema))
    names = [k for k in rules if k.startswith("json-") and "-r" not in k and not k.endswith("-end")]
    assert len(set(names)) == len(names)
    bodies = " ".join(rules.values())
    for piece in ('"\\"fast\\"" | "\\"slow\\""', '"\\"x\\"" ": " integer', '"1" | "2"', '"\\"é\\""'):
        assert piece in bodies
    upper, lower = (re.search(rf'"\\"{k}\\"" ": " (\S+)', bodies) for k in ("Mode", "mode"))
    assert upper is not None and lower is not None and upper.group(1) != lower.group(1)
    assert "fast" in rules[upper.group(1)] and rules[lower.group(1)].startswith('"{"')


def test_a_schema_with_thousands_of_properties_builds_without_recursion_error() -> None:
    properties = {f"field_{i}": {"type": "integer"} for i in range(1500)}
    wide = {"type": "object", "properties": properties, "required": ["field_0"]}
    check_gbnf(json_grammar(wide))
    deep: dict[str, object] = {"type": "string"}
    for _ in range(2000):
        deep = {"type": "object", "properties": {"a": deep}}
    check_gbnf(json_grammar(deep))  # nesting past MAX_DEPTH: any JSON value
    spec = ToolSpec("wide", "Wide.", wide)
    check_gbnf(turn_grammar([Message("user", "fill the form")], (spec,), None))


def test_the_checker_catches_what_llama_cpp_rejects() -> None:
    with pytest.raises(AssertionError):
        check_gbnf('root ::= "a\\bb"\n')
    with pytest.raises(AssertionError):
        check_gbnf("root ::= x\nx ::= y\n")
    with pytest.raises(AssertionError):
        check_gbnf('root ::= "a"\nroot ::= "b"\n')
