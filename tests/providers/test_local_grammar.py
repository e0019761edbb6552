"""The embedded model's turn policy and grammars (``providers.local.grammar``), without a model.

What each reply may be after a user message, a tool result and a failed tool result; copied
arguments; quoted answers. The real model under these grammars is tested in
``test_local_model.py`` (``-m local_model``) and measured by ``python -m bench.tasks``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from miniagent.messages import Message, ToolCall
from miniagent.model import ToolSpec
from miniagent.providers.local import prompt as local_prompt
from miniagent.providers.local import quotes as local_quotes
from miniagent.providers.local.grammar import copy_words, turn_grammar


@pytest.fixture
def specs(tmp_path: Path) -> tuple[ToolSpec, ...]:
    from miniagent.toolbox import default_tools

    return tuple(ToolSpec(t.name, t.description, t.input_schema) for t in default_tools(tmp_path))


def _grammar(specs: tuple[ToolSpec, ...], *messages: Message, free: bool = False) -> str:
    demo = local_prompt.nearest_demo(local_prompt.last_request(messages), specs)
    return turn_grammar(messages, specs, demo, allow_answer_first=free)


def _rule(grammar: str, name: str) -> str:
    return next(line for line in grammar.splitlines() if line.startswith(f"{name} ::= "))


def test_copy_words_are_the_requests_words_without_outer_punctuation() -> None:
    words = copy_words('Create a file "greeting.txt" that says good morning.')
    assert words == ["Create", "a", "file", "greeting.txt", "that", "says", "good", "morning"]
    assert copy_words("Run `python3 --version` now!") == ["Run", "python3", "--version", "now"]
    assert copy_words('a\\b "c"d') == []  # a word needing JSON escapes is left out


def test_after_a_user_request_the_call_follows_the_nearest_demo(specs: tuple[ToolSpec, ...]) -> None:
    grammar = _grammar(specs, Message("user", "How many lines does data/readings.csv have?"))
    assert _rule(grammar, "root") == "root ::= call"  # a call, no answer
    assert '\\"run_command\\"' in grammar and "read_file" not in grammar  # the demo's tool only
    assert '"\\"wc -l data/readings.csv\\""' in grammar  # the count's command, whole
    assert "timeout" not in grammar  # only the demo's argument names
    # without a span the demo's call is a template: "def load_config" for "Where is the function
    # load_config defined?": def stays, the name is copied
    grammar = _grammar(specs, Message("user", "Where is the function main defined?"))
    assert '"\\"" "def" " " word ( " " word ){0,7} "\\""' in grammar


def test_a_demo_argument_copied_from_its_request_is_a_run_of_the_requests_words(
    specs: tuple[ToolSpec, ...],
) -> None:
    grammar = _grammar(specs, Message("user", "In config.ini, replace the word Hilltop with Valley."))
    assert '\\"edit_file\\"' in grammar and _rule(grammar, "root") == "root ::= call"
    assert _rule(grammar, "args2-old-text") == 'args2-old-text ::= "\\"Hilltop\\""'  # the spans, whole
    assert _rule(grammar, "args2-new-text") == 'args2-new-text ::= "\\"Valley\\""'
    # an edit without a replacement gets no edit demo (test_local_router); the grammar of a
    # demo's argument without a span is a run of words
    edit = next(d for d in local_prompt.DEMOS if d.tool == "edit_file")
    grammar = turn_grammar([Message("user", "In config.ini, replace Hilltop.")], specs, edit)
    for name, unit in (("old-text", "word"), ("new-text", "prose")):  # new text is never a file name
        run = f'{unit} ( " " {unit} ){{0,7}}'
        assert _rule(grammar, f"args2-{name}") == f'args2-{name} ::= "\\"" {run} "\\""'
    assert '"Hilltop"' in _rule(grammar, "word")
    assert "char" not in _rule(grammar, "word")  # never a free string


def test_a_request_no_demo_is_near_may_be_answered_with_i_cannot(specs: tuple[ToolSpec, ...]) -> None:
    grammar = _grammar(specs, Message("user", "Order a pizza for me."))
    assert _rule(grammar, "root") == "root ::= answer"  # no built-in tool is guessed
    assert _rule(grammar, "answer") == (
        'answer ::= "I cannot order a pizza for you with the tools I have."'
    )  # the refusal says what was asked, in the request's words (not "book flights")
    hello = _grammar(specs, Message("user", "Hello there!"))  # a greeting is fixed (a free one
    assert _rule(hello, "answer") == 'answer ::= "Hello! What can I do for you?"'  # made up facts)
    translate = _grammar(specs, Message("user", "Translate this poem into French."))
    assert _rule(translate, "root") == "root ::= answer"  # it once wrote a file "this", then grepped "this"
    freed = _grammar(specs, Message("user", "Order a pizza for me."), free=True)
    assert _rule(freed, "answer").startswith("answer ::= [^<")


def _after(result: str, *, tool: str = "read_file", error: bool = False) -> list[Message]:
    call = ToolCall("c1", tool, {"path": "notes.txt"})
    return [
        Message("user", "What does notes.txt say?"),
        Message("assistant", "", (call,)),
        Message("tool", result, tool_call_id="c1", is_error=error),
    ]


def test_a_short_result_is_answered_by_quoting_it_whole(specs: tuple[ToolSpec, ...]) -> None:
    grammar = _grammar(specs, *_after("Buy milk.\n\nCall Anna   at 5.\n"))
    assert grammar == 'root ::= ( "It says: " ) ( "\\"Buy milk. Call Anna at 5.\\"" )\n'
    done = _grammar(specs, *_after("created a.txt (1 characters, 1 bytes)", tool="write_file"))
    assert done == 'root ::= ( "Done: " ) ( "created a.txt (1 characters, 1 bytes)" )\n'
    other = _grammar(specs, *_after("42", tool="my_tool"))
    assert other == 'root ::= ( "It returned: " ) ( "\\"42\\"" )\n'  # a tool without demos


def test_a_long_result_is_answered_by_quoting_one_of_its_lines(specs: tuple[ToolSpec, ...]) -> None:
    lines = [f"line {i}: " + "x" * 30 for i in range(60)]
    grammar = _grammar(specs, *_after("\n".join(lines)))
    quotes = _rule(grammar, "root").split(") ( ", 1)[1]
    assert quotes.count(" | ") == local_quotes.QUOTE_LINES - 1  # the first 40 lines, one each
    assert '"\\"line 0: ' in quotes and "line 40:" not in quotes
    long_line = _grammar(specs, *_after("y" * 1000))
    assert "y" * local_quotes.QUOTE_CHARS + '\\""' in long_line
    assert "y" * (local_quotes.QUOTE_CHARS + 1) not in long_line
    assert long_line.endswith('" (the first 240 characters)"\n')


def test_a_quote_escapes_quotes_and_backslashes(specs: tuple[ToolSpec, ...]) -> None:
    grammar = _grammar(specs, *_after('say "hi" \\ bye'))
    assert '"\\"say \\"hi\\" \\\\ bye\\""' in grammar


def test_after_a_failed_call_the_answer_quotes_the_error(specs: tuple[ToolSpec, ...]) -> None:
    # another call after a failure was a guess: list_dir("to") after a refused write (measured)
    grammar = _grammar(specs, *_after("file not found: notes.txt", error=True))
    assert _rule(grammar, "root") == "root ::= answer"
    assert _rule(grammar, "answer") == 'answer ::= ( "It failed: " ) ( "\\"file not found: notes.txt\\"" )'


def test_without_tools_any_text(specs: tuple[ToolSpec, ...]) -> None:
    assert turn_grammar([Message("user", "hi")], (), None) == "root ::= [^\\x00]*\n"


def test_a_schema_with_enums_nested_objects_and_arrays_becomes_rules() -> None:
    spec = ToolSpec(
        "add",
        "Add.",
        {
            "type": "object",
            "properties": {
                "a": {"type": "integer"},
                "mode": {"enum": ["x", "y"]},
                "tags": {"type": "array", "items": {"type": "string"}},
                "opt": {"type": "object", "properties": {"deep": {"type": "boolean"}}},
            },
            "required": ["a"],
        },
    )
    grammar = _grammar((spec,), Message("user", "do it"))
    assert _rule(grammar, "root") == "root ::= call | answer"
    assert '"\\"mode\\""' in grammar and '"\\"x\\"" | "\\"y\\""' in grammar
    assert 'args0-tags ::= "[" ( copied ( ", " copied ){0,15} )? "]"' in grammar
    assert "boolean" in _rule(grammar, "args0-opt-r0f")
    assert _rule(grammar, "copied") == 'copied ::= "\\"" word ( " " word ){0,7} "\\""'


SCHEMA = {
    "type": "object",
    "properties": {"file": {"type": "string"}, "lines": {"type": "integer"}},
    "required": ["file", "lines"],
}


def test_with_an_output_schema_every_answer_is_json_of_it(specs: tuple[ToolSpec, ...]) -> None:
    from miniagent.output import OutputSchema

    def grammar(*messages: Message) -> str:
        demo = local_prompt.nearest_demo(local_prompt.last_request(messages), specs)
        return turn_grammar(messages, specs, demo, output_schema=SCHEMA)

    after_result = grammar(*_after("a\nb\n"))
    assert _rule(after_result, "root") == "root ::= json" and "call" not in after_result
    feedback = Message("user", OutputSchema(SCHEMA).feedback("answer: expected object"))
    retried = grammar(*_after("a\nb\n"), Message("assistant", "[]"), feedback)
    assert "root ::= json" in retried and "call" not in retried  # after the loop's feedback
    first = grammar(Message("user", "What does notes.txt say?"))
    assert _rule(first, "root") == "root ::= call"  # a call first, as without a schema
    failed = grammar(*_after("file not found", error=True))
    assert _rule(failed, "root") == "root ::= call | answer" and _rule(failed, "answer") == "answer ::= json"
    assert '"\\"file\\"" ": " string' in _rule(failed, "json-r0f")  # a free (bounded) string
    without_tools = turn_grammar([Message("user", "hi")], (), None, output_schema=SCHEMA)
    assert "root ::= json" in without_tools


@pytest.mark.parametrize(
    ("request_text", "tool"),
    [
        ("How many lines does data.csv have?", "run_command"),
        ("Order a pizza for me.", None),
        ("Show me config/app.yaml", "read_file"),  # names a file, no demo near: read it
        ("What is the first line of docs/maintenance.txt?", "read_file"),  # not `wc -l`
        ("Which file mentions celsius?", "grep"),
        ("Search the code for csv.", "grep"),
        ("Look for the word battery in the docs.", "grep"),  # not the edit demo's "word"
        ("Write hello world into hello.txt.", "write_file"),  # not the edit demo's "world"
        ("Save the text remember the milk to a file called note.txt.", "write_file"),
        ("Rename the station Hilltop to Summit in config.ini.", "edit_file"),
        ("Is there a file called station.py here?", "list_dir"),
        ("Execute `date +%Y` and show me the result.", "run_command"),
        ("What's inside the docs directory?", "list_dir"),
        ("Make a file named todo.txt containing buy milk.", "write_file"),
        ("Call my mother.", None),  # "call" is what a demo writes, not what it does
        ("hi", None),  # nor is "hi"
    ],
)
def test_the_nearest_demo_chooses_the_tool(
    specs: tuple[ToolSpec, ...], request_text: str, tool: str | None
) -> None:
    """Requests of the task suite (bench/tasks) that once chose the wrong tool; ``None``: no
    demo is near (an impossible task, a greeting)."""
    demo = local_prompt.nearest_demo(request_text, specs)
    assert (demo.tool if demo is not None else None) == tool


def test_a_full_stop_is_not_a_file_name(specs: tuple[ToolSpec, ...]) -> None:
    """ "folder." ends a sentence; it once counted as a path and was dropped from the request's
    words, so "List the files in the docs folder." chose the demo without a path."""
    demo = local_prompt.nearest_demo("List the files in the docs folder.", specs)
    assert demo is not None and demo.arguments == {"path": "docs"}


def test_an_acronyms_plural_may_be_copied_in_the_singular() -> None:
    """ "Find the TODOs" searched for "TODOs" and found nothing; "TODO" is there to copy now."""
    assert copy_words("Find the TODOs and URLs in docs") == [
        "Find",
        "the",
        "TODOs",
        "TODO",
        "and",
        "URLs",
        "URL",
        "in",
        "docs",
    ]


def test_only_a_result_that_fits_is_quoted_whole(specs: tuple[ToolSpec, ...]) -> None:
    """`seq 1 100` was answered "1 2 ... 40": the first 40 lines, quoted as if they were all."""
    grammar = _grammar(specs, *_after("\n".join(str(n) for n in range(1, 101)), tool="run_command"))
    quotes = _rule(grammar, "root").split(") ( ", 1)[1]
    assert '"\\"1 2 3' not in quotes  # no partial "whole"
    assert '"\\"1\\""' in quotes and '"\\"40\\""' in quotes and '"\\"41\\""' not in quotes
    assert quotes.endswith(' " (one line of 100)"')  # and it says it is one line of many


def test_a_commands_exit_line_is_not_glued_into_the_quote(specs: tuple[ToolSpec, ...]) -> None:
    """ "42 log.txt\\nexit code: 0" was quoted "42 log.txt exit code: 0": the status line is no
    output; a failed exit is said after the quote, and "(one line of N)" stays."""
    ok = _grammar(specs, *_after("42 log.txt\nexit code: 0", tool="run_command"))
    assert ok == 'root ::= ( "It printed: " ) ( "\\"42 log.txt\\"" )\n'
    failed = _grammar(specs, *_after("no such file\nexit code: 2", tool="run_command"))
    assert failed.endswith('( "\\"no such file\\"" ) " (exit code: 2)"\n')
    many = "\n".join(str(n) for n in range(1, 101)) + "\nexit code: 1"
    long = _grammar(specs, *_after(many, tool="run_command"))
    assert long.endswith('" (one line of 100; exit code: 1)"\n') and '"\\"exit code' not in long
    killed = _grammar(specs, *_after("partial\nkilled by signal SIGKILL", tool="run_command"))
    assert killed.endswith('" (killed by signal SIGKILL)"\n')


@pytest.mark.parametrize(
    ("request_text", "sentence"),
    [
        ("Order a pizza for me.", "I cannot order a pizza for you with the tools I have."),
        ("Call my mother.", "I cannot call your mother with the tools I have."),
        ("Please book a flight to Rome", "I cannot book a flight to Rome with the tools I have."),
        (
            "What's the weather in Oslo?",
            'I cannot answer that with the tools I have: "What\'s the weather in Oslo?"',
        ),
        ("I need a taxi.", 'I cannot answer that with the tools I have: "I need a taxi."'),
    ],
)
def test_a_refusal_says_what_was_asked(request_text: str, sentence: str) -> None:
    """ "What's the weather in Oslo?" was refused "I cannot book flights to Oslo." (the demo's
    words): the refusal is the request's own words now."""
    from miniagent.providers.local.steps import refusal

    assert refusal(request_text) == sentence


def test_a_json_answer_copies_its_strings_from_the_request_and_the_results(
    specs: tuple[ToolSpec, ...],
) -> None:
    """The README's --output-schema example exited 1: after "1 notes.txt" the free "file"
    string ran away (the model repeated itself); copied with numbers, it was "1"."""
    call = ToolCall("c1", "run_command", {"command": "wc -l notes.txt"})
    messages = [
        Message("user", "How many lines has notes.txt?"),
        Message("assistant", "", (call,)),
        Message("tool", "1 notes.txt\nexit code: 0", tool_call_id="c1"),
    ]
    grammar = turn_grammar(messages, specs, None, output_schema=SCHEMA)
    assert '"\\"file\\"" ": " copied' in _rule(grammar, "json-r0f")
    words = _rule(grammar, "word")
    assert '"notes.txt"' in words and '"1"' not in words and '"0"' not in words
    assert '"lines\\"" ": " integer' in grammar.replace('"\\"lines', '"lines')


def test_a_call_that_failed_twice_the_same_way_is_not_made_again(specs: tuple[ToolSpec, ...]) -> None:
    """ "Translate this poem into French." called grep("this" in "this") until max_turns."""
    call = {"pattern": "this", "path": "this"}
    messages = [Message("user", "Translate this poem into French.")]
    for n in (1, 2):
        messages += [
            Message("assistant", "", (ToolCall(f"c{n}", "grep", call),)),
            Message("tool", "not found: this", tool_call_id=f"c{n}", is_error=True),
        ]
        grammar = _grammar(specs, *messages)
        root = _rule(grammar, "root")
        assert root == "root ::= answer"  # no call after a failure, the first or the second
    assert _rule(grammar, "answer") == 'answer ::= ( "It failed: " ) ( "\\"not found: this\\"" )'
