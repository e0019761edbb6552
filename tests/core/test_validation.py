"""The JSON Schema check (``miniagent.validation``): ECMA-262 patterns, exact multiples,
unevaluated keywords, numbers of any size, deep values and schemas, and checks that a cancel or
a deadline ends (issues "Wire fidelity 3" kind 4 and "Hostile and unlucky input, round 3" kinds
1-3). Each example of the issues is a case here; the official test suite is in
``test_validation_suite.py``, the comparison with ``jsonschema`` in ``test_tools.py``."""

from __future__ import annotations

import sys
import threading
from typing import Any

import jsonschema
import pytest

from miniagent import Tool, ToolCall, ToolResult, run_agent
from miniagent._validation import bounded_search
from miniagent._validation.ecma_regex import PatternError, translate
from miniagent.agent import ABORTED_BEFORE_EXECUTION
from miniagent.testing import ScriptedClient
from miniagent.validation import check_value, schema_problem

BACKTRACKING = r"^([A-Za-z0-9]+\s?)+$"
HOPELESS = "a" * 36 + "!"  # 2**36 ways to split the letters before the "!" fails the match


class CancelAfter:
    """A cancel event that is set once it has been asked ``polls`` times (no timing involved)."""

    def __init__(self, polls: int) -> None:
        self.polls = polls
        self.asked = 0

    def is_set(self) -> bool:
        self.asked += 1
        return self.asked > self.polls


# --- pattern is ECMA-262 ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "text", "matches"),
    [
        ("^[a-z]+$", "report\n", False),  # Python's $ also matches before a final newline
        ("^[a-z]+$", "report", True),
        ("^abc$", "abc\n", False),
        (r"^\d+$", "\u0664\u0662", False),  # Arabic-Indic digits: \d is [0-9]
        (r"^\D$", "\u0664", True),
        (r"^\w+$", "caf\u00e9", False),  # \w is [A-Za-z0-9_]
        (r"^\W$", "\u00e9", True),
        (r"^\s$", "\u00a0", True),  # ECMA white space: NBSP, BOM, line and paragraph separators
        (r"^\s$", "\ufeff", True),
        (r"^\s$", "\u2029", True),
        (r"^\s$", "\x1c", False),  # Python's \s takes the ASCII file separator, ECMA's does not
        (r"^\S$", "\x1c", True),
        (r"^[^\s]$", "\u00a0", False),
        (r"^[\S\d]$", " ", False),
        (r"^[^\S\d]$", " ", True),
        (r"^[^\S\d]$", "1", False),
        (r"x\b", "x\u00e9", True),  # \b between x and a non-ASCII letter: ECMA \w is ASCII
        ("^.$", "\r", False),  # . stops at every line terminator
        ("^.$", "\u2028", False),
        ("^.$", "\u00e9", True),
        (r"^\cJ$", "\n", True),
        (r"^\u{1F600}$", "\U0001f600", True),
        (r"^\uD83D\uDE00$", "\U0001f600", True),  # a surrogate pair is one code point
        (r"^\p{Lu}\p{Ll}+$", "\u00c9cole", True),
        (r"^\P{L}+$", "123", True),
        (r"^\p{digit}+$", "\u09ea\u09e8", True),
        ("^a{,2}$", "a{,2}", True),  # not a quantifier in ECMA-262; re reads {0,2}
        ("^a{,2}$", "aa", False),
        ("^[]$", "", False),  # [] matches nothing, [^] anything
        ("^[^]$", "\n", True),
        (r"^(?<y>\d)\k<y>$", "11", True),
        ("^\U0001f432*$", "\U0001f432\U0001f432", True),
    ],
)
def test_patterns_match_as_ecma_262(pattern: str, text: str, matches: bool) -> None:
    problem = check_value({"pattern": pattern}, text)
    assert (problem is None) == matches, problem


@pytest.mark.parametrize(
    "pattern",
    [
        "(?i)abc",  # inline flags
        "(?P<name>a)",  # Python's named group
        "(?#comment)",
        "(?>atomic)",
        "a*+",  # possessive
        r"\Z",  # letters that are no ECMA escape
        r"\a",
        "(?<=a+)b",  # a lookbehind re cannot run (variable width)
        r"\p{Script=Greek}",  # property data the standard library lacks
        "[",
        "(",
        "a)",
        "[z-a]",
        r"\2(a)",
    ],
)
def test_a_pattern_that_cannot_run_is_a_schema_problem_and_never_a_crash(pattern: str) -> None:
    with pytest.raises(PatternError):
        translate(pattern)
    problem = schema_problem({"type": "string", "pattern": pattern})
    assert problem is not None and problem.startswith("schema.pattern: ")
    assert "ECMA-262" in problem
    assert check_value({"pattern": pattern}, "text") is None  # not checked, as the docstring says
    names = schema_problem({"patternProperties": {pattern: {}}})
    assert names is not None and names.startswith("schema.patternProperties: ")
    assert check_value({"patternProperties": {pattern: False}}, {"x": 1}) is None


def test_a_pattern_that_is_not_a_string_is_a_schema_problem() -> None:
    assert schema_problem({"pattern": 3}) == "schema.pattern must be a string"
    assert check_value({"pattern": 3}, "x") is None


def test_pattern_properties_and_additional_properties_use_the_same_dialect() -> None:
    schema = {"patternProperties": {r"^\d+$": {"type": "integer"}}, "additionalProperties": False}
    assert check_value(schema, {"12": 1}) is None
    assert check_value(schema, {"12\n": 1}) == "input: unknown property '12\\n' (allowed: none)"
    assert check_value(schema, {"\u0661": 1}) is not None


# --- multipleOf: exact decimal arithmetic, numbers of any size --------------------------------------


@pytest.mark.parametrize(
    ("divisor", "value", "valid"),
    [
        (0.01, 0.07, True),  # 0.07 / 0.01 == 7.000000000000001 in binary floating point
        (0.01, 19.99, True),
        (0.01, 0.071, False),
        (0.1, 0.3, True),
        (0.01, 10**400, True),  # OverflowError in the check before
        (0.01, 10**400 + 1, True),
        (3, 10**400, False),
        (7, 7 * 10**400, True),
        (0.123456789, 1e308, False),
        (1e-8, 12391239123, True),
        (1.5, 4.5, True),
        (1e-300, 3e-300, True),
        (2, 10.0, True),
    ],
)
def test_multiple_of_is_exact_for_numbers_as_written(divisor: Any, value: Any, valid: bool) -> None:
    problem = check_value({"multipleOf": divisor}, value)
    assert (problem is None) == valid, problem


def test_a_huge_number_in_a_tool_call_gets_a_result_not_a_crash() -> None:
    calls: list[dict[str, Any]] = []

    def pay(arguments: dict[str, Any], cancel: threading.Event | None) -> ToolResult:
        calls.append(arguments)
        return ToolResult("paid")

    schema = {
        "type": "object",
        "properties": {"amount": {"type": "number", "multipleOf": 0.01, "maximum": 1000}},
    }
    client = ScriptedClient([[ToolCall("c1", "pay", {"amount": 10**400})], ["done"]])
    tools = [Tool("pay", "", schema, pay)]
    result = run_agent(client=client, system="", tools=tools, user="pay", max_turns=3)
    assert result.stop_reason == "complete"
    assert calls == []
    answer = result.messages[2]
    assert answer.is_error
    assert answer.content.startswith("invalid input for pay: input.amount: 1000000000")
    assert answer.content.endswith("is greater than the maximum 1000")


def test_bounds_compare_huge_numbers_exactly() -> None:
    assert check_value({"maximum": 1e308}, 10**400) is not None
    assert check_value({"minimum": 1e308}, 10**400) is None
    assert check_value({"exclusiveMaximum": 10**400}, 1e308) is None
    assert check_value({"type": "integer"}, 10**400) is None


# --- unevaluatedProperties / unevaluatedItems ------------------------------------------------------


def test_unevaluated_properties_false_refuses_an_undeclared_key() -> None:
    schema = {"type": "object", "properties": {"name": {"type": "string"}}, "unevaluatedProperties": False}
    assert check_value(schema, {"name": "a"}) is None
    assert check_value(schema, {"name": "a", "extra": 1}) == (
        "input: unknown property 'extra' (no keyword of the schema allows it)"
    )


_ALL_OF = {"allOf": [{"properties": {"a": {}}}], "unevaluatedProperties": False}
_ANY_OF = {
    "anyOf": [{"properties": {"a": {"type": "string"}}}, {"properties": {"b": {}}}],
    "unevaluatedProperties": False,
}
_IF_THEN = {
    "if": {"required": ["kind"]},
    "then": {"properties": {"kind": {}, "size": {}}},
    "else": {"properties": {"name": {}}},
    "unevaluatedProperties": False,
}
_REF = {
    "$defs": {"base": {"properties": {"id": {}}}},
    "$ref": "#/$defs/base",
    "properties": {"name": {}},
    "unevaluatedProperties": False,
}
_PATTERNS = {"patternProperties": {"^x-": {}}, "unevaluatedProperties": {"type": "integer"}}
_DEPENDENT = {
    "properties": {"a": {}},
    "dependentSchemas": {"a": {"properties": {"b": {}}}},
    "unevaluatedProperties": False,
}
_CONTAINS = {"contains": {"type": "string"}, "unevaluatedItems": {"type": "integer"}}


@pytest.mark.parametrize(
    ("schema", "value", "valid"),
    [
        (_ALL_OF, {"a": 1}, True),
        (_ALL_OF, {"a": 1, "b": 1}, False),
        (_ANY_OF, {"a": 1, "b": 1}, False),  # the first branch fails for "a": its annotation does not count
        (_ANY_OF, {"a": "s", "b": 1}, True),
        (_IF_THEN, {"kind": 1, "size": 2}, True),
        (_IF_THEN, {"name": 1, "size": 2}, False),
        (_REF, {"id": 1, "name": 2}, True),
        (_REF, {"id": 1, "other": 2}, False),
        (_PATTERNS, {"x-a": "s", "b": 1}, True),
        (_PATTERNS, {"b": "s"}, False),
        (_DEPENDENT, {"a": 1, "b": 1}, True),
        (_DEPENDENT, {"b": 1}, False),
        ({"prefixItems": [{}], "unevaluatedItems": False}, [1], True),
        ({"prefixItems": [{}], "unevaluatedItems": False}, [1, 2], False),
        ({"allOf": [{"prefixItems": [{}, {}]}], "unevaluatedItems": False}, [1, 2], True),
        (_CONTAINS, ["a", 1, "b"], True),
        (_CONTAINS, ["a", None], False),
        ({"items": {}, "unevaluatedItems": False}, [1, 2, 3], True),
    ],
)
def test_unevaluated_keywords_see_every_in_place_applicator(schema: Any, value: Any, valid: bool) -> None:
    problem = check_value(schema, value)
    assert (problem is None) == valid, problem
    assert jsonschema.Draft202012Validator(schema).is_valid(value) == valid


# --- uniqueItems ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("items", "pair"),
    [
        ([1, True, 1.0], (0, 2)),
        ([0, False], None),
        ([{"a": 1, "b": [1, {"c": None}]}, {"b": [1.0, {"c": None}], "a": 1}], (0, 1)),
        ([[1, 2], [2, 1]], None),
        (["1", 1], None),
        ([None, None], (0, 1)),
        ([{"a": True}, {"a": 1}], None),
        ([10**400, 10**400], (0, 1)),
    ],
)
def test_unique_items_uses_json_equality(items: list[Any], pair: tuple[int, int] | None) -> None:
    problem = check_value({"uniqueItems": True}, items)
    if pair is None:
        assert problem is None
    else:
        assert problem == f"input: items {pair[0]} and {pair[1]} are equal; items must be unique"


def test_unique_items_over_twenty_thousand_items_finds_the_late_duplicate() -> None:
    items: list[Any] = [[i, {"n": str(i)}] for i in range(20_000)]
    assert check_value({"uniqueItems": True}, items) is None
    items.append([123, {"n": "123"}])
    assert check_value({"uniqueItems": True}, items) == (
        "input: items 123 and 20000 are equal; items must be unique"
    )


# --- checks that a cancel or a deadline ends -------------------------------------------------------


def test_a_backtracking_pattern_is_stopped_by_the_timeout() -> None:
    schema = {"type": "string", "pattern": BACKTRACKING}
    assert check_value(schema, "abc def ghi") is None
    assert check_value(schema, HOPELESS, timeout=0.3) == (
        "input: the check took longer than 0.3 s and was stopped"
    )


def test_a_backtracking_pattern_is_stopped_by_the_cancel_event_while_it_runs() -> None:
    cancel = CancelAfter(polls=3)  # the child polls every 20 ms; the pattern would need minutes
    problem = check_value({"pattern": BACKTRACKING}, HOPELESS, cancel=cancel)  # type: ignore[arg-type]
    assert problem == "input: the check was cancelled"
    assert cancel.asked > 3


def test_the_search_child_finishes_a_slow_pattern_whose_answer_is_known() -> None:
    # 20 letters: 2**20 ways, more than the in-process bound, well within the time limit
    problem = check_value({"pattern": BACKTRACKING}, "a" * 20 + "!")
    assert problem == "input: \"aaaaaaaaaaaaaaaaaaaa!\" does not match the pattern '^([A-Za-z0-9]+\\\\s?)+$'"
    assert check_value({"pattern": BACKTRACKING}, "ab cd " * 10) is None
    assert bounded_search._IDLE, "the child is kept for the next search"


def test_a_cancel_reaches_a_long_check_of_a_large_value() -> None:
    cancel = CancelAfter(polls=2)
    value = {"rows": [{"id": i, "tags": ["a", "b"]} for i in range(50_000)]}
    schema = {
        "type": "object",
        "properties": {"rows": {"type": "array", "items": {"type": "object", "properties": {"id": {}}}}},
    }
    assert check_value(schema, value) is None
    assert check_value(schema, value, cancel=cancel) == "input: the check was cancelled"  # type: ignore[arg-type]


class SetDuringTheCheck(threading.Event):
    """A cancel event that becomes set when the check first looks at it (``stop_reason``): the
    run is cancelled while a check runs, at no particular time."""

    def is_set(self) -> bool:
        if sys._getframe(1).f_code.co_name == "stop_reason":
            self.set()
        return super().is_set()


def test_the_loop_aborts_when_the_input_check_saw_the_cancel() -> None:
    ran: list[str] = []
    schema = {"type": "object", "properties": {"name": {"type": "string", "pattern": BACKTRACKING}}}
    tool = Tool("name", "", schema, lambda arguments, c: ran.append("ran") or ToolResult("x"))
    client = ScriptedClient([[ToolCall("c1", "name", {"name": HOPELESS})], ["never"]])
    result = run_agent(
        client=client, system="", tools=[tool], user="u", max_turns=3, cancel=SetDuringTheCheck()
    )
    assert result.stop_reason == "aborted"
    assert ran == []
    assert [m.role for m in result.messages] == ["user", "assistant", "tool"]
    assert result.messages[-1].content == ABORTED_BEFORE_EXECUTION


def test_the_loop_aborts_when_the_output_check_saw_the_cancel() -> None:
    schema = {"type": "object", "properties": {"name": {"type": "string", "pattern": BACKTRACKING}}}
    client = ScriptedClient([['{"name": "' + HOPELESS + '"}']])
    cancel = SetDuringTheCheck()
    result = run_agent(
        client=client, system="", tools=[], user="u", max_turns=3, output_schema=schema, cancel=cancel
    )
    assert result.stop_reason == "aborted"
    assert [m.role for m in result.messages] == ["user", "assistant"]  # no feedback written


# --- depth: values and schemas deeper than the stack ------------------------------------------------


def _nested_list(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


RECURSIVE = {"$defs": {"node": {"type": "array", "items": {"$ref": "#/$defs/node"}}}, "$ref": "#/$defs/node"}


def test_a_value_deeper_than_the_stack_is_a_problem_not_a_recursion_error() -> None:
    problem = check_value(RECURSIVE, _nested_list(5000))
    assert problem == "input: the value or the schema nests too deeply to check"


def test_a_schema_deeper_than_the_stack_is_a_problem_not_a_recursion_error() -> None:
    schema: dict[str, Any] = {}
    for _ in range(5000):
        schema = {"not": schema}
    assert check_value(schema, 1) == "input: the value or the schema nests too deeply to check"
    assert schema_problem(schema) == "schema nests too deeply to check"
    assert check_value({"$ref": "#"}, 1) == "input: the value or the schema nests too deeply to check"


def test_the_verdict_does_not_depend_on_the_callers_stack_depth() -> None:
    value = _nested_list(150)  # valid: checking it takes about 600 frames
    assert check_value(RECURSIVE, value) is None

    def deep(levels: int) -> str | None:
        if levels:
            return deep(levels - 1)
        return check_value(RECURSIVE, value)

    assert deep(sys.getrecursionlimit() - 150) is None  # reran on a fresh thread's stack


ORPHAN_SCRIPT = f"""
import glob, os, threading, time
from miniagent.validation import check_value

search = threading.Thread(
    target=check_value, args=({{"pattern": {BACKTRACKING!r}}}, {HOPELESS!r}), kwargs={{"timeout": None}}
)
search.start()
while True:  # the search child, started by the thread above
    children = [c for path in glob.glob("/proc/self/task/*/children") for c in open(path).read().split()]
    if children:
        print(children[0], flush=True)
        break
    time.sleep(0.01)
search.join()
"""


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_the_search_child_ends_with_its_parent_killed_mid_search() -> None:
    import os
    import signal
    import subprocess
    import time

    parent = subprocess.Popen([sys.executable, "-c", ORPHAN_SCRIPT], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        assert _running(child)
        os.kill(parent.pid, signal.SIGKILL)  # no chance to stop the child: it must notice alone
        parent.wait()
        deadline = time.monotonic() + 10
        while _running(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _running(child)
    finally:
        parent.kill()
