"""The embedded model's router (``providers.local.intent``) and spans (``providers.local.spans``),
without a model: which built-in tool a request gets, and the arguments read from its words.

Each row is a request that went wrong before (bench/tasks: held-out and tuning sets of
2026-12-02, measured on the real model), grouped by the kind of fault. The real model under
these choices is measured by ``python -m bench.tasks``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from miniagent.messages import Message, ToolCall
from miniagent.model import ToolSpec
from miniagent.providers.local import prompt as local_prompt
from miniagent.providers.local.grammar import turn_grammar
from miniagent.providers.local.intent import cue_words
from miniagent.providers.local.spans import call_spans, edit_pairs, folder, searched_word, write_content
from miniagent.providers.local.steps import TWO_TASKS


@pytest.fixture
def specs(tmp_path: Path) -> tuple[ToolSpec, ...]:
    from miniagent.toolbox import default_tools

    return tuple(ToolSpec(t.name, t.description, t.input_schema) for t in default_tools(tmp_path))


ROUTES = [
    # inflections and synonyms say the same as the demos' words ("defines" is "defined")
    ("Which file defines load_readings?", "grep", {}),
    ("Show me what's in the data directory.", "list_dir", {"path": ["data"]}),
    # a word a demo has by chance decides nothing ("Is there a file called setup.py here?")
    ("Is there a TODO in station.py?", "grep", {"pattern": ["TODO"]}),
    ("Search for the word battery.", "grep", {"pattern": ["(?i)battery"]}),
    (
        "Write the words see you soon to bye.txt.",
        "write_file",
        {"content": ["see you soon"], "path": ["bye.txt"]},
    ),
    # an identifier's parts are never cues ("write_report" is not a write)
    ("Which file defines write_report?", "grep", {}),
    # a file tool only for a request that names a file ("Show me all TODOs" read a file "TODOs")
    ("Show me all TODOs.", "grep", {"pattern": ["TODO"]}),
    # the project itself is listed without a path (was list_dir("project"))
    ("What folders and files are at the top of the project?", "list_dir", {}),
    # a count of words is wc -w, not the demo's wc -l
    ("how many words are in README.md", "run_command", {"command": ["wc -w README.md"]}),
    ("Line count of README.md?", "run_command", {"command": ["wc -l README.md"]}),
    # spans copied whole (the model stopped "meeting at noon" after "meeting")
    (
        "Create notes.txt with the text meeting at noon.",
        "write_file",
        {"content": ["meeting at noon"], "path": ["notes.txt"]},
    ),
    (
        "Put the text lunch at one in lunch.txt.",
        "write_file",
        {"content": ["lunch at one"], "path": ["lunch.txt"]},
    ),
    (
        "Change celsius to kelvin in config.ini.",
        "edit_file",
        {"old_text": ["celsius"], "new_text": ["kelvin"]},
    ),
    # the blind set's first run (bench/tasks/blind.py): a search for the words of the request,
    # a listing of a folder "it"
    (
        "I'm looking for wherever the project mentions the thermometer. Can you find it?",
        "grep",
        {"pattern": ["(?i)thermometer"]},
    ),
    ("Just joined this repo. Could you list what's in it?", "list_dir", {}),
    ("Which file mentions celsius?", "grep", {"pattern": ["(?i)celsius"]}),
    ("Look for the word battery in the docs.", "grep", {"pattern": ["(?i)battery"]}),
    (
        "Update config.ini: replace Hilltop by Lakeside.",
        "edit_file",
        {"old_text": ["Hilltop"], "new_text": ["Lakeside"]},
    ),
]


@pytest.mark.parametrize(("request_text", "tool", "spans"), ROUTES)
def test_a_request_gets_the_tool_it_asks_for_and_its_own_words_as_arguments(
    specs: tuple[ToolSpec, ...], request_text: str, tool: str, spans: dict[str, list[str]]
) -> None:
    demo = local_prompt.nearest_demo(request_text, specs)
    assert demo is not None and demo.tool == tool
    assert call_spans(tool, request_text) == spans


@pytest.mark.parametrize(
    "request_text",
    [
        "Translate this poem into French.",  # wrote a file "this", then grepped "this"
        "delete config.ini",  # read it: no tool deletes
        "Tell me a joke.",
        "Will it rain tomorrow?",
    ],
)
def test_a_request_no_built_in_tool_does_is_refused_and_nothing_is_guessed(
    specs: tuple[ToolSpec, ...], request_text: str
) -> None:
    assert local_prompt.nearest_demo(request_text, specs) is None
    grammar = turn_grammar([Message("user", request_text)], specs, None)
    root = next(line for line in grammar.splitlines() if line.startswith("root ::= "))
    assert root == "root ::= answer" and '"I cannot ' in grammar


def test_the_content_of_a_write_is_never_a_cue() -> None:
    assert "see" not in cue_words("Write the words see you soon to bye.txt.")
    assert cue_words("Which file defines write_report?") == ["which", "file", "define"]


def test_spans_keep_what_the_user_wrote() -> None:
    assert write_content("Write 'hello there' to x.txt") == ["hello there"]  # quoted text whole
    assert write_content("please make a file hello.txt with hello in it") == ["hello"]
    assert write_content("Save the text remember the milk to a file called note.txt.") == [
        "remember the milk"
    ]
    # a thing named after its kind: the name first ("the station Hilltop")
    assert edit_pairs("Rename the station Hilltop to Summit in config.ini.")[0] == ("Hilltop", "Summit")
    assert edit_pairs("Change the title in index.html from Home to Welcome.") == [("Home", "Welcome")]
    assert edit_pairs("in config.ini change interval_minutes = 15 to interval_minutes = 5") == [
        ("interval_minutes = 15", "interval_minutes = 5")
    ]  # was old "15": "interval_minutes = interval_minutes = 5"
    assert edit_pairs("set the interval to 30 in config.ini") == []  # a value, not a replacement
    assert folder("List the files here.") == "" and folder("What's inside the src directory?") == "src"
    assert folder("What files are there?") is None


def test_a_file_named_without_its_extension_is_read_and_the_tools_suggestion_taken(
    specs: tuple[ToolSpec, ...],
) -> None:
    # "What does the README say about usage?" grepped for "README" (README.md was meant)
    request = "What does the README say about usage?"
    demo = local_prompt.nearest_demo(request, specs)
    assert demo is not None and demo.tool == "read_file"
    call = ToolCall("c1", "read_file", {"path": "README"})
    messages = [
        Message("user", request),
        Message("assistant", "", (call,)),
        Message("tool", "file not found: README (did you mean README.md?)", tool_call_id="c1", is_error=True),
    ]
    grammar = turn_grammar(messages, specs, demo)
    assert "root ::= call" in grammar and '"\\"README.md\\""' in grammar and "It failed" not in grammar


@pytest.mark.parametrize(
    "request_text",
    ["Send config.ini to Bob.", "Translate README.md into French.", "Fix the bug in station.py"],
)
def test_a_file_named_with_a_verb_no_tool_does_is_refused_not_read(
    specs: tuple[ToolSpec, ...], request_text: str
) -> None:
    assert local_prompt.nearest_demo(request_text, specs) is None


def test_a_long_result_is_quoted_from_the_lines_the_question_is_about(specs: tuple[ToolSpec, ...]) -> None:
    code = "\n".join(
        ['"""Collect sensor readings."""', "", "import csv", "", *(f"x{i} = {i}" for i in range(40))]
    )
    call = ToolCall("c1", "read_file", {"path": "station.py"})
    messages = [
        Message("user", "What does station.py import?"),
        Message("assistant", "", (call,)),
        Message("tool", code, tool_call_id="c1"),
    ]
    grammar = turn_grammar(messages, specs, None)
    assert '"\\"import csv\\""' in grammar and "x1 = 1" not in grammar  # was any of 43 lines
    messages[0] = Message("user", "Summarise station.py.")  # no line shares a word: all lines offered
    assert "x1 = 1" in turn_grammar(messages, specs, None)


@pytest.mark.parametrize(
    "request_text",
    [
        "What's new in README.md?",  # "new" chose write_file: README.md overwritten with its words
        "What does make do in the Makefile?",  # "make" is a write's verb, the question is not one
        "What type of sensors does README.md say the tool reads?",
        "Show me how to replace Hilltop with Valley in config.ini",  # its first verb shows
        "What if I change celsius to kelvin in config.ini?",
    ],
)
def test_a_question_is_never_answered_by_a_write(specs: tuple[ToolSpec, ...], request_text: str) -> None:
    demo = local_prompt.nearest_demo(request_text, specs)
    assert demo is None or demo.tool not in ("write_file", "edit_file")


@pytest.mark.parametrize(
    ("request_text", "tool"),
    [
        ("Could you make me a new file, bye.txt, with just the words see you soon in it?", "write_file"),
        ("I want to replace Hilltop with Valley in config.ini", "edit_file"),
        ("Please swap October for November in docs/maintenance.txt.", "edit_file"),
    ],
)
def test_a_polite_request_to_change_a_file_is_one(
    specs: tuple[ToolSpec, ...], request_text: str, tool: str
) -> None:
    demo = local_prompt.nearest_demo(request_text, specs)
    assert demo is not None and demo.tool == tool


def test_a_write_goes_only_to_the_file_named_as_its_target(specs: tuple[ToolSpec, ...]) -> None:
    # "Write me a summary of README.md" chose write_file with README.md as its path: README.md
    # is what to read (after "of"), no target
    assert local_prompt.nearest_demo("Write me a summary of README.md", specs) is None
    assert call_spans("write_file", "Write hello world into hello.txt.")["path"] == ["hello.txt"]
    notes = call_spans("write_file", "Create notes.txt with the text meeting at noon.")
    assert notes["path"] == ["notes.txt"]


@pytest.mark.parametrize(
    "request_text",
    [
        "Update the version in setup.py to 2.0",  # replaced the word "version": 2.0="1.0"
        "Replace line 3 of notes.txt with hi",  # replaced the first "3" of the file
        "In notes.txt change it to hello",
        "Change the first line of notes.txt to hello",
        "Replace the contents of notes.txt with hello",  # read it, as if done
    ],
)
def test_a_change_that_names_no_text_to_replace_is_refused(
    specs: tuple[ToolSpec, ...], request_text: str
) -> None:
    assert edit_pairs(request_text) == []
    assert local_prompt.nearest_demo(request_text, specs) is None


ADD_TODO = ToolSpec(
    "add_todo",
    "Add an item to the to-do list.",
    {
        "type": "object",
        "properties": {"title": {"type": "string"}, "priority": {"type": "string", "enum": ["low", "high"]}},
        "required": ["title"],
    },
)


def test_a_tool_no_demo_knows_takes_a_request_only_when_nearer_than_the_routers_tool(
    specs: tuple[ToolSpec, ...],
) -> None:
    tools = [*specs, ADD_TODO]
    # beside an MCP add_todo, a search for a TODO comment took add_todo ("todo" in its name)
    search = local_prompt.nearest_demo("Find the TODO comment in this project.", tools)
    assert search is not None and search.tool == "grep"
    added = local_prompt.nearest_demo("Add a todo: buy stamps, high priority.", tools)
    assert added is not None and added.custom and added.tool == "add_todo"
    named = local_prompt.nearest_demo("use add_todo to find the TODO", tools)
    assert named is not None and named.tool == "add_todo"  # a tool the request names wins


@pytest.mark.parametrize(
    "request_text",
    [
        # found by a new user, each written over an existing file (exit 0, "Done:")
        "Create recipes.txt",  # "Create Create Create"
        "Save shopping.txt",  # "Save"
        "write to todo.md",  # "write to to to to to to to"
        "Write a file called shopping.txt",  # "file called"
        "Create a new file called ideas.txt",  # "new file"
    ],
)
def test_a_write_without_its_text_is_never_made(specs: tuple[ToolSpec, ...], request_text: str) -> None:
    assert write_content(request_text) == []
    assert local_prompt.nearest_demo(request_text, specs) is None


def test_a_quoted_file_name_with_spaces_is_one_file(specs: tuple[ToolSpec, ...]) -> None:
    # found by a new user: 'Create a file called "meal plan.txt" that says soup on monday'
    # wrote over plan.txt
    request = 'Create a file called "meal plan.txt" that says soup on monday'
    assert call_spans("write_file", request) == {"content": ["soup on monday"], "path": ["meal plan.txt"]}
    demo = local_prompt.nearest_demo("Read 'my notes/party plan.txt'", specs)
    assert demo is not None and demo.tool == "read_file"
    grammar = turn_grammar([Message("user", "Read 'my notes/party plan.txt'")], specs, demo)
    assert 'file ::= "my notes/party plan.txt"' in grammar


@pytest.mark.parametrize(
    "request_text",
    [
        # found by a new user: each listed the folder and answered with the listing
        "Email the shopping list to my sister",
        "Empty the file shopping.txt",
        "Send config.ini to Bob.",
    ],
)
def test_a_command_no_tool_knows_is_refused(specs: tuple[ToolSpec, ...], request_text: str) -> None:
    assert local_prompt.nearest_demo(request_text, specs) is None


@pytest.mark.parametrize(
    "request_text",
    [
        # found by a new user: the edit was made and answered "Done:", the count never came
        "Replace milk with oat milk in shopping.txt and tell me how many lines it has",
        "First read todo.md, then replace whisk with spatula in it",  # only read
    ],
)
def test_a_request_of_two_tasks_is_refused_before_any_call(
    specs: tuple[ToolSpec, ...], request_text: str
) -> None:
    demo = local_prompt.nearest_demo(request_text, specs)
    grammar = turn_grammar([Message("user", request_text)], specs, demo)
    assert grammar == f'root ::= "{TWO_TASKS}"\n'


@pytest.mark.parametrize(
    "request_text",
    [
        "Run `ls data` and tell me the output.",  # the answer is no second task
        "Open docs/maintenance.txt and read it to me.",
        "Find the TODO and FIXME comments",
    ],
)
def test_one_task_said_in_two_clauses_is_one(specs: tuple[ToolSpec, ...], request_text: str) -> None:
    demo = local_prompt.nearest_demo(request_text, specs)
    grammar = turn_grammar([Message("user", request_text)], specs, demo)
    assert "<tool_call>" in grammar


def test_small_things_a_new_user_met(specs: tuple[ToolSpec, ...]) -> None:
    assert folder("List the folder my notes") is None  # was list_dir("the")
    assert folder('List the folder "my notes"') == "my notes"
    counted = call_spans("run_command", "how many lines does recipes.txt and shopping.txt have")
    assert counted == {"command": ["wc -l recipes.txt shopping.txt"]}  # was one of them
    assert call_spans("run_command", "How many lines does 'party plan.txt' have?") == {
        "command": ["wc -l 'party plan.txt'"]
    }
    # a search finds the word in any case ("lentil" missed "Lentil curry")
    assert call_spans("grep", "Search for the word lentil in the project") == {"pattern": ["(?i)lentil"]}
    call = ToolCall("c1", "grep", {"pattern": "crème"})
    messages = [
        Message("user", "Search for the word crème"),
        Message("assistant", "", (call,)),
        Message("tool", "no matches for 'crème'", tool_call_id="c1"),
    ]
    assert turn_grammar(messages, specs, None).startswith('root ::= ( "Nothing found: " )')  # was "Found:"


@pytest.mark.parametrize(
    "request_text",
    [
        # found by a second new user under --approve all: each ran or changed what it asked about
        "What would `rm notes.txt` do?",  # notes.txt deleted
        "Is `rm -rf src` a good idea?",  # src/ deleted
        "What does `echo reset > config.ini` do?",  # config.ini became "reset"
        "Please do not run `rm app.py`",  # app.py deleted
        "Don't replace Helo with Hello in app.py",  # the edit made
        'Tell me how to change Monday to Sunday in "meal plan.txt"',  # the edit made
        "Write a summary of notes.txt to notes.txt",  # notes.txt became "summary of"
        "Write a short note to notes.txt",  # "short note" over notes.txt
        "Write the version number to version.txt",
        "Save the output of `ls` to listing.txt",  # "output of ls"
    ],
)
def test_nothing_is_run_or_changed_that_the_request_only_asks_about(
    specs: tuple[ToolSpec, ...], request_text: str
) -> None:
    demo = local_prompt.nearest_demo(request_text, specs)
    assert demo is None or demo.tool not in ("write_file", "edit_file", "run_command"), demo


def test_a_command_asked_about_that_only_reads_is_run(specs: tuple[ToolSpec, ...]) -> None:
    demo = local_prompt.nearest_demo("what does `ls` say?", specs)
    assert demo is not None and demo.tool == "run_command"


def test_more_kinds_a_second_new_user_met(specs: tuple[ToolSpec, ...]) -> None:
    # a quoted file name in an edit: new_text was 'rice in "meal plan.txt'
    assert edit_pairs('Replace pasta with rice in "meal plan.txt"') == [("pasta", "rice")]
    assert local_prompt.nearest_demo("Replace 1.2.3 with 2.0.0 everywhere", specs) is None  # no files
    look = local_prompt.nearest_demo("Could you perhaps take a look at config.ini?", specs)
    assert look is not None and look.tool == "read_file"  # was a search for "config.ini"
    count = local_prompt.nearest_demo("How many files are in src?", specs)
    assert count is not None and count.tool == "list_dir"  # was wc -l src
    change = "Change 8080 to 9090 in config.ini and then tell me the new port"  # the port never came
    assert turn_grammar([Message("user", change)], specs, local_prompt.nearest_demo(change, specs)) == (
        f'root ::= "{TWO_TASKS}"\n'
    )
    # a failed edit is not made again on the file its error suggests ("APP.PY" edited app.py)
    call = ToolCall("c1", "edit_file", {"path": "APP.PY", "old_text": "Helo", "new_text": "Hello"})
    messages = [
        Message("user", "Replace Helo with Hello in APP.PY"),
        Message("assistant", "", (call,)),
        Message("tool", "file not found: APP.PY (did you mean app.py?)", tool_call_id="c1", is_error=True),
    ]
    grammar = turn_grammar(messages, specs, None)
    assert "root ::= answer" in grammar and "<tool_call>" not in grammar


def test_an_apostrophe_inside_a_word_quotes_nothing() -> None:
    # spans read "Write what's up ... Bob's" as the quoted text "s up ... Bob" (split_words did
    # not): one definition of a quoted text now serves both
    assert searched_word("Search for Bob's car in Ann's notes") == ["Bob's"]  # was "s car in Ann"
    assert "s up" not in " ".join(write_content("Write what's up with Bob's plan to notes.txt"))
    assert write_content("Write 'hello there' to x.txt") == ["hello there"]
    assert write_content("Write \u201chello there\u201d to x.txt") == ["hello there"]
