"""The embedded model with tools no built-in demo knows, and requests of two steps (no model).

``any_tool``: the chooser (``prompt.nearest_demo`` with ``@tool`` / MCP tools) and the
arguments narrowed to what a request gives (enums as choices, numbers as numbers, things as
the request's capitalised words). ``steps``: a request that would write a file from another
file's content is refused in one sentence before any call, so no input file is written over.
The real model on these is measured by ``python -m bench.tasks.tool_sets``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal

import pytest

from miniagent.messages import Message
from miniagent.model import ToolSpec
from miniagent.providers.local import prompt as local_prompt
from miniagent.providers.local.any_tool import call_spec
from miniagent.providers.local.grammar import copy_words, turn_grammar
from miniagent.providers.local.steps import two_step_refusal
from miniagent.tools import tool


def _weather_tools() -> list[ToolSpec]:
    @tool
    def get_weather(city: str) -> str:
        """Get the current weather for a city.

        Args:
            city: the city's name.
        """
        return city

    @tool
    def set_thermostat(mode: Literal["heat", "cool", "off"], temperature: int = 20) -> str:
        """Set the home thermostat's mode and target temperature.

        Args:
            mode: heat, cool or off.
            temperature: degrees Celsius.
        """
        return mode

    @tool
    def roll_dice(sides: int, count: int = 1) -> str:
        """Roll dice and return the numbers rolled.

        Args:
            sides: sides of each die.
            count: how many dice.
        """
        return ""

    @tool
    def start_timer(minutes: int) -> str:
        """Start a countdown timer.

        Args:
            minutes: how long the timer runs, in minutes.
        """
        return ""

    chosen = (get_weather, set_thermostat, roll_dice, start_timer)
    return [ToolSpec(t.name, t.description, t.input_schema) for t in chosen]


@pytest.fixture
def builtin(tmp_path: Path) -> list[ToolSpec]:
    from miniagent.toolbox import default_tools

    return [ToolSpec(t.name, t.description, t.input_schema) for t in default_tools(tmp_path)]


def _call_of(grammar: str) -> str:
    """The only call a grammar allows whose every choice is one literal (no free words)."""
    rules = dict(line.split(" ::= ", 1) for line in grammar.splitlines() if " ::= " in line)

    def expand(body: str) -> str:
        parts = re.findall(r'"(?:[^"\\]|\\.)*"|[\w-]+', body)
        out = ""
        for part in parts:
            if part.startswith('"'):
                out += json.loads(part)
            else:
                assert " | " not in rules[part], f"rule {part} is a choice: {rules[part]}"
                out += expand(rules[part])
        return out

    return expand(rules["root"])


@pytest.mark.parametrize(
    ("request_text", "call"),
    [
        ("What's the weather in Oslo?", {"name": "get_weather", "arguments": {"city": "Oslo"}}),
        ("use get_weather for Lisbon", {"name": "get_weather", "arguments": {"city": "Lisbon"}}),
        ("Turn the heating off.", {"name": "set_thermostat", "arguments": {"mode": "off"}}),
        (
            "Set the thermostat to heat at 21 degrees.",
            {"name": "set_thermostat", "arguments": {"mode": "heat", "temperature": 21}},
        ),
        ("Roll two six-sided dice.", {"name": "roll_dice", "arguments": {"sides": 6, "count": 2}}),
        # "set" chose set_thermostat (a tie with start_timer): a verb that says nothing
        ("Set a 5 minute timer.", {"name": "start_timer", "arguments": {"minutes": 5}}),
    ],
)
def test_a_tool_without_demos_is_chosen_and_its_arguments_come_from_the_request(
    builtin: list[ToolSpec], request_text: str, call: dict[str, Any]
) -> None:
    """ "What's the weather in Oslo?" with get_weather was answered "I cannot book flights to
    Oslo.": the tool was never called, named or not, with or without the built-in tools."""
    for tools in (_weather_tools(), [*builtin, *_weather_tools()]):
        messages = [Message("user", request_text)]
        demo = local_prompt.nearest_demo(request_text, tools)
        assert demo is not None and demo.custom and demo.tool == call["name"]
        grammar = turn_grammar(messages, tools, demo)
        assert _call_of(grammar) == f"<tool_call>\n{json.dumps(call)}\n</tool_call>"
        fixed, _rest = local_prompt.render("", messages, tools, demo)
        assert call["name"] in fixed  # listed in the system turn


def test_a_string_that_is_no_thing_is_copied_from_the_requests_own_words() -> None:
    spec = ToolSpec(
        "search_issues",
        "Search the issue tracker.",
        {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
    )
    request = "Search the issue tracker for login problems."
    plan = call_spec(spec, request, copy_words(request))
    assert plan.words == ("login", "problems")  # no verb, stop word or word of the tool's


def test_requests_of_two_steps_are_refused_before_any_call(builtin: list[ToolSpec]) -> None:
    """ "Read fruits.txt and then write its lines in reverse order to reversed.txt" wrote the
    text "fruits.txt" over fruits.txt; "Make a copy of config.ini called config.bak" wrote
    "config.bak"."""
    cases = {
        "Read fruits.txt and then write its lines in reverse order to reversed.txt": "fruits.txt",
        "Make a copy of config.ini called config.bak": "config.ini",
        "Append the line checked to fruits.txt.": "fruits.txt",
        "Replace the contents of fruits.txt with the contents of config.ini.": "config.ini read first",
    }
    for request, source in cases.items():
        demo = local_prompt.nearest_demo(request, builtin)
        grammar = turn_grammar([Message("user", request)], builtin, demo)
        answer = _call_of(grammar)
        assert answer.startswith("I cannot do that in one step: it needs ") and source in answer
        assert "<tool_call>" not in grammar


@pytest.mark.parametrize(
    "request_text",
    [
        "Create a file greeting.txt that says good morning.",
        "In config.ini, replace the word Hilltop with Valley.",
        "Rename the station Hilltop to Summit in config.ini.",
        "Save the text remember the milk to a file called note.txt.",
        "What does docs/maintenance.txt say?",
        "Which file mentions celsius?",
    ],
)
def test_requests_of_one_step_are_not_refused(builtin: list[ToolSpec], request_text: str) -> None:
    assert two_step_refusal(request_text, local_prompt.nearest_demo(request_text, builtin)) is None


def test_content_copied_into_a_file_is_never_a_file_name(builtin: list[ToolSpec]) -> None:
    request = "Create a file greeting.txt that says good morning."
    grammar = turn_grammar([Message("user", request)], builtin, local_prompt.nearest_demo(request, builtin))
    rules = dict(line.split(" ::= ", 1) for line in grammar.splitlines() if " ::= " in line)
    content = next(body for name, body in rules.items() if name.endswith("-content"))
    assert content == '"\\"good morning\\""'  # the request's span, whole
    unspanned = "Create a file greeting.txt"  # no text given: no write ("Create Create Create")
    assert local_prompt.nearest_demo(unspanned, builtin) is None
    write = next(d for d in local_prompt.DEMOS if d.tool == "write_file")  # a demo's template:
    grammar = turn_grammar([Message("user", unspanned)], builtin, write)  # copied, never the name
    rules = dict(line.split(" ::= ", 1) for line in grammar.splitlines() if " ::= " in line)
    content = next(body for name, body in rules.items() if name.endswith("-content"))
    assert "prose" in content and "greeting.txt" not in rules["prose"]


@pytest.mark.parametrize(
    "request_text",
    [
        # Found by a new user: both edited the word in fruits.txt into the text "fruits.txt" (exit 0).
        "Write the word banana to fruits.txt",
        "Change banana in fruits.txt",
        "In config.ini, replace the word Hilltop with Valley.",
    ],
)
def test_an_edit_never_writes_a_file_name_as_the_new_text(builtin: list[ToolSpec], request_text: str) -> None:
    demo = local_prompt.nearest_demo(request_text, builtin)
    grammar = turn_grammar([Message("user", request_text)], builtin, demo)
    rules = dict(line.split(" ::= ", 1) for line in grammar.splitlines() if " ::= " in line)
    for name, body in rules.items():
        if name.endswith(("-content", "-new-text", "-new_text")):
            assert " file " not in f" {body} " and ("prose" in body or body.startswith('"\\"')), (name, body)
            assert ".txt" not in body and ".ini" not in body
    assert all(not word.endswith((".txt", ".ini")) for word in rules.get("prose", "").split(" | "))


def test_a_piped_text_is_quoted_and_never_read_as_the_request(builtin: list[ToolSpec]) -> None:
    # Found by a new user: "summarise this" with piped notes naming config.txt and backup.txt was
    # refused as a two-step request, and a short piped text made the model read a file "this".
    from miniagent.providers.local.prompt import last_request

    notes = "Meeting notes: we will copy config.txt to backup.txt on Friday."
    piped = f"summarise this\n\n<stdin>\n{notes}\n</stdin>"
    messages = [Message("user", piped)]
    assert last_request(messages) == "summarise this"
    grammar = turn_grammar(messages, builtin, local_prompt.nearest_demo(last_request(messages), builtin))
    assert "I cannot do that in one step" not in grammar and "<tool_call>" not in grammar
    assert "It says: " in grammar and "Meeting notes" in grammar


def test_the_one_string_left_takes_the_words_left_whole() -> None:
    # "Add a todo to buy stamps with high priority." was add_todo(title="buy"): the words left
    # stand side by side, so they are the title whole
    spec = ToolSpec(
        "add_todo",
        "Add an item to the to-do list.",
        {
            "type": "object",
            "properties": {
                "title": {"type": "string", "description": "What to do."},
                "priority": {"type": "string", "enum": ["low", "normal", "high"]},
            },
            "required": ["title"],
        },
    )
    request = "Add a todo to buy stamps with high priority."
    plan = call_spec(spec, request, copy_words(request))
    assert plan.spec.input_schema["properties"]["title"]["enum"] == ["buy stamps"]
