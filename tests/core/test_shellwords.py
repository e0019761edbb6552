"""The reader of POSIX sh command lines (``miniagent.shellwords``): what each simple command's
words are after quote removal, which words are only known when the line runs, and what is refused.

The expected readings were checked against ``/bin/sh`` (dash) where a test says so: the words dash
passes to a program are printed one per line by ``printf '%s\\n'``.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest

from miniagent.shellwords import MAX_DEPTH, ShellSyntaxError, SimpleCommand, parse


def words(command: SimpleCommand) -> list[str | None]:
    return [w.value for w in command.words]


def test_operators_split_a_line_into_its_simple_commands() -> None:
    line = "a 1; b 2 && c || d | e & f\ng"
    assert [words(c) for c in parse(line)] == [["a", "1"], ["b", "2"], ["c"], ["d"], ["e"], ["f"], ["g"]]


def test_quotes_and_backslashes_are_removed_as_the_shell_removes_them() -> None:
    [command] = parse("""printf %s 'a b' "c\\"d" e\\ f g''h "\\$x" '\\n' x\\\ny""")
    assert words(command) == ["printf", "%s", "a b", 'c"d', "e f", "gh", "$x", "\\n", "xy"]


@pytest.mark.skipif(shutil.which("dash") is None and not shutil.which("sh"), reason="needs /bin/sh")
def test_the_words_are_those_dash_passes() -> None:
    line = """printf '%s\\n' 'a b' "c\\"d" e\\ f g''h "\\$x" '\\n' x\\\ny "" $"""
    done = subprocess.run(["/bin/sh", "-c", line], capture_output=True, text=True, check=True)
    [command] = parse(line)
    assert done.stdout.split("\n")[:-1] == words(command)[2:]


def test_substitutions_are_read_and_their_commands_returned_first() -> None:
    commands = parse('echo "$(git status; rm -rf x)" `id -u` $(a $(b))')
    assert [words(c) for c in commands[:-1]] == [
        ["git", "status"],
        ["rm", "-rf", "x"],
        ["id", "-u"],
        ["b"],
        ["a", None],
    ]
    echo = commands[-1]
    assert words(echo) == ["echo", None, None, None]
    assert echo.words[1].expands.startswith("$(") and echo.words[2].expands == "`id -u`"


@pytest.mark.parametrize(
    ("line", "expands"),
    [
        ("echo $HOME", "$HOME"),
        ("echo ${HOME}", "${HOME}"),
        ("echo $1", "$1"),
        ("echo ~/x", "~"),
        ("echo a{b,c}", "{...}"),
    ],
)
def test_words_only_known_at_run_time_have_no_value(line: str, expands: str) -> None:
    word = parse(line)[0].words[1]
    assert word.value is None and word.expands.startswith(expands)


def test_a_dollar_that_starts_nothing_and_a_quoted_tilde_are_literal() -> None:
    assert words(parse("echo $ a$ '~' \\~ x~")[0]) == ["echo", "$", "a$", "~", "~", "x~"]


def test_pathname_patterns_keep_their_quoted_characters_escaped() -> None:
    word = parse("ls 'a*'b*?")[0].words[1]
    assert word.value is None and word.expands == "" and word.pattern == "a[*]b*?"
    assert parse("ls '*.py'")[0].words[1].value == "*.py"  # quoted: no pattern


def test_assignments_redirections_and_io_numbers() -> None:
    [command] = parse("A=1 B='x y' make -j4 >out 2>&1 <in 3>>log 4<&- x=not-an-assignment")
    assert [a.text for a in command.assignments] == ["A=1", "B='x y'"]
    assert words(command) == ["make", "-j4", "x=not-an-assignment"]
    assert [(r.fd, r.op, r.target.value) for r in command.redirects] == [
        (None, ">", "out"),
        (2, ">&", "1"),
        (None, "<", "in"),
        (3, ">>", "log"),
        (4, "<&", "-"),
    ]


def test_ampersand_greater_reads_as_dash_reads_it() -> None:
    background, redirection = parse("x &>y")
    assert words(background) == ["x"] and not background.redirects
    assert redirection.words == () and redirection.redirects[0].target.value == "y"


def test_comments_newlines_and_line_continuations() -> None:
    assert [words(c) for c in parse("a # b; c\nd#e \\\n f\n\n")] == [["a"], ["d#e", "f"]]
    assert [words(c) for c in parse("a &&\n\n b |\n c")] == [["a"], ["b"], ["c"]]
    assert parse("") == [] and parse("  \n # only a comment") == []


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ("echo 'x", "single quote"),
        ('echo "x', "double quote"),
        ("echo $(x", "$( is never closed"),
        ("echo `x", "backtick"),
        ("a &&", "ends with '&&'"),
        ("a | ", "ends with '|'"),
        ("; a", "without a command"),
        ("a ;; b", "';;'"),
        ("a && && b", "without a command"),
        ("a |& b", "'|&'"),
        ("(a; b)", "subshells"),
        ("{ a; b; }", "compound command"),
        ("if a; then b; fi", "compound command"),
        ("for x in a; do b; done", "compound command"),
        ("f() { a; }", "subshells ( ... ) and functions"),
        ("cat <<EOF\nx\nEOF", "here-documents"),
        ("cat <<<x", "here-documents"),
        ("diff <(a) b", "process substitution"),
        ("echo $((1+2))", "arithmetic"),
        ("echo ${x:-$(rm -rf ~)}", "${NAME}"),
        ("echo $'\\x72m'", "quoting differs"),
        ('echo $"x"', "quoting differs"),
        ("echo x 10>f", "above 9"),
        ("echo x >", "without a file name"),
        ("echo x\\", "backslash"),
        ("echo [[ x ]]", None),
    ],
)
def test_what_cannot_be_read_with_certainty_is_refused_with_a_reason(line: str, said: str | None) -> None:
    if said is None:  # not refused: [[ is only reserved as the first word
        assert words(parse(line)[0]) == ["echo", None, "x", "]]"]
        return
    with pytest.raises(ShellSyntaxError, match=None) as caught:
        parse(line)
    assert str(caught.value).startswith("cannot read the command: ") and said in str(caught.value)


def test_nesting_is_bounded() -> None:
    deep = "echo " + "$(echo " * (MAX_DEPTH + 1) + "x" + ")" * (MAX_DEPTH + 1)
    with pytest.raises(ShellSyntaxError, match="nested"):
        parse(deep)
    assert len(parse("echo " + "$(echo " * MAX_DEPTH + "x" + ")" * MAX_DEPTH)) == MAX_DEPTH + 1


def test_each_command_keeps_its_source_text() -> None:
    assert [c.text for c in parse("git  status ;  ls -l|wc")] == ["git  status", "ls -l", "wc"]
