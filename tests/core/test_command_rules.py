"""Command rules (``approval.command_rules``, ``policy_for(..., allow_commands=, deny_commands=)``):
rule words, wrappers, deny rules, the read-only set with workspace paths, and the policies' answers.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from miniagent import Approval, Tool, ToolCall, run_agent
from miniagent.approval import READ_ONLY_COMMANDS, CommandRules, command_rules, policy_for, read_only
from miniagent.testing import ScriptedClient
from miniagent.toolbox import Workspace, default_tools


def run(command: str) -> ToolCall:
    return ToolCall("c1", "run_command", {"command": command})


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("a = 1\n")
    (root / "notes.txt").write_text("hello\n")
    (tmp_path / "outside.txt").write_text("secret\n")
    os.symlink(tmp_path / "outside.txt", root / "link-out")
    return root


def judge(rules: CommandRules, command: str) -> str:
    return rules.judge(command).kind


# --- rule words -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "kind"),
    [
        ("git status", "allowed"),
        ("git  'status'", "allowed"),
        ("git status --porcelain", "unmatched"),  # no trailing *: exactly these words
        ("git -c core.pager=sh status", "unmatched"),
        ("git --no-pager status", "unmatched"),
        ("git diff", "allowed"),  # a last * matches no words too
        ("git diff -- src/a.py", "allowed"),
        ("git difftool -x sh", "unmatched"),
        ("git diffx", "unmatched"),
        ("git diff --stat=80", "allowed"),
        ("pytest -q -k 'a or b'", "allowed"),
    ],
)
def test_each_rule_word_matches_one_word_and_a_last_star_the_rest(command: str, kind: str) -> None:
    rules = CommandRules(["git status", "git diff *", "pytest *"])
    assert judge(rules, command) == kind


def test_a_star_inside_a_word_is_a_glob_on_that_word_only() -> None:
    rules = CommandRules(["git diff --stat=*", "make test-*"])
    assert judge(rules, "git diff --stat=80") == "allowed"
    assert judge(rules, "git diff --stat=80 x") == "unmatched"
    assert judge(rules, "make test-unit") == "allowed"
    assert judge(rules, "make test-") == "allowed"
    assert judge(rules, "make install") == "unmatched"


def test_a_star_never_stands_for_a_guarded_option_but_a_rule_may_name_it() -> None:
    rules = CommandRules(["git diff *", "git -* diff", "find *", "sort *"])
    for command in (
        "git diff --output=x",
        "git diff --ext-diff",
        "git -c diff.external=x diff",
        "find . -exec rm {} ;",
        "find . -delete",
        "sort -o out in",
    ):
        assert judge(rules, command) == "unmatched", command
    assert judge(CommandRules(["git diff --output=diff.txt"]), "git diff --output=diff.txt") == "allowed"


def test_pytest_options_that_write_or_upload_elsewhere_are_guarded() -> None:
    rules = CommandRules(["pytest *"])
    for command in (
        "pytest --log-file=/root/.bashrc",
        "pytest --basetemp=/root",
        "pytest --debug=/tmp/x",
        "pytest --junitxml=/etc/x",
        "pytest --pastebin=all",
        "pytest -o cache_dir=/root",
    ):
        assert judge(rules, command) == "unmatched", command
    assert judge(rules, "pytest -q -x --lf tests") == "allowed"


def test_a_line_too_long_to_read_is_refused() -> None:
    verdict = CommandRules(["echo *"]).judge("echo " + "a" * 100_000)
    assert verdict.kind == "unreadable" and "more than the rules read" in verdict.reason


def test_a_star_never_stands_for_a_word_only_known_at_run_time() -> None:
    rules = CommandRules(["pytest *", "echo $HOME"])
    assert judge(rules, "pytest $HOME") == "unmatched"
    assert judge(rules, "pytest ~") == "unmatched"
    assert judge(rules, 'pytest "$(id)"') == "unmatched"
    assert judge(rules, "echo $HOME") == "allowed"  # a rule may say so, literally


def test_assignments_and_redirections_need_a_rule_that_has_them() -> None:
    rules = CommandRules(["make *", "FAST=1 pytest *", "ls > listing.txt"])
    assert judge(rules, "CC=evil make") == "unmatched"
    assert judge(rules, "FAST=1 pytest -q") == "allowed"
    assert judge(rules, "FAST=2 pytest -q") == "unmatched"
    assert judge(rules, "make > out.txt") == "unmatched"
    assert judge(rules, "ls > listing.txt") == "allowed"
    assert judge(rules, "ls >> listing.txt") == "unmatched"
    for harmless in ("make 2>&1", "make >/dev/null 2>&1", "make >&2", "make 3>&-", "make </dev/null"):
        assert judge(rules, harmless) == "allowed", harmless


def test_a_program_path_counts_only_when_it_is_the_file_path_finds(workspace: Path) -> None:
    rules = CommandRules(["ls *"])
    found = shutil.which("ls")
    assert found is not None
    assert judge(rules, f"{os.path.realpath(found)} -l") == "allowed"
    fake = workspace / "ls"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    assert judge(rules, f"{fake} -l") == "unmatched"
    assert judge(rules, "./ls -l") == "unmatched"


def test_a_program_found_through_path_inside_the_workspace_is_refused(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (workspace / "bin").mkdir()
    tool = workspace / "bin" / "mytool"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{workspace / 'bin'}:{os.environ['PATH']}")
    verdict = CommandRules(["mytool *"], workspace=Workspace(workspace)).judge("mytool")
    assert verdict.kind == "unmatched" and "found through PATH inside the workspace" in verdict.reason


def test_pathname_patterns_are_expanded_in_the_workspace_before_matching(workspace: Path) -> None:
    (workspace / "--output=pwned").write_text("")
    rules = CommandRules(["git diff *", "cat src/a.py"], workspace=Workspace(workspace))
    assert judge(rules, "git diff src/*.py") == "allowed"
    assert judge(rules, "cat src/*.py") == "allowed"  # the one match is the rule's word
    assert judge(rules, "git diff *") == "unmatched"  # a file name that is a guarded option
    assert judge(rules, "git diff nothing*here") == "allowed"  # no match: the pattern itself


# --- wrappers -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "kind"),
    [
        ("timeout 60 pytest -q", "allowed"),
        ("timeout -s KILL 5 pytest", "allowed"),
        ("nice -n 5 pytest", "allowed"),
        ("nohup pytest", "allowed"),
        ("command pytest", "allowed"),
        ("exec pytest", "allowed"),
        ("env pytest -q", "allowed"),
        ("env -i pytest", "allowed"),
        ("env A=1 pytest", "unmatched"),  # an assignment again
        ("env -S 'pytest -q'", "unmatched"),
        ("env --chdir=/ pytest", "unmatched"),
        ("time -p pytest", "allowed"),
        ("time -o /etc/x pytest", "unmatched"),
        ("sh -c 'pytest -q && git status'", "allowed"),
        ("bash -ec 'pytest'", "allowed"),
        ("sh -c -x 'rm -rf ~'", "unmatched"),
        ("sh -c 'pytest; rm -rf ~'", "unmatched"),
        ("bash -l -c pytest", "unmatched"),
        ('sh -c "$CMD"', "unmatched"),
        ("eval pytest -q", "allowed"),
        ("eval 'pytest; rm x'", "unmatched"),
        ("xargs pytest", "unmatched"),  # xargs adds words only known at run time
        ("timeout 5 sh -c 'env nice pytest'", "allowed"),
    ],
)
def test_wrappers_are_read_through_to_the_command_they_run(command: str, kind: str) -> None:
    assert judge(CommandRules(["pytest *", "git status"]), command) == kind


def test_a_rule_may_allow_a_wrapper_itself() -> None:
    assert judge(CommandRules(["xargs -0 wc -l"]), "xargs -0 wc -l") == "allowed"


# --- deny rules -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "rm -rf x",
        "sudo rm -rf x",
        "timeout 1 rm x",
        "sh -c 'rm x'",
        "echo x | xargs rm",
        "find . -exec rm {} ;",
        "$X -rf /",
        "env -S 'rm x'",
        "git -C . push origin main",
        "git push",
        "cat <<EOF\nrm\nEOF",
    ],
)
def test_deny_rules_hold_under_approve_all(tools: list[Tool], command: str) -> None:
    policy = policy_for("all", tools, deny_commands=["rm *", "git push *"])
    approval = policy(run(command))
    assert not approval.approved and approval.reason.startswith("refused: ")
    assert not policy.will_ask(run(command))


@pytest.fixture
def tools(tmp_path: Path) -> list[Tool]:
    return default_tools(tmp_path)


def test_deny_rules_leave_the_rest_to_the_mode(tools: list[Tool]) -> None:
    policy = policy_for("all", tools, deny_commands=["rm *"])
    for command in ("echo $HOME", "git status; ls", "printf '%s' rmdir"):
        assert policy(run(command)).approved, command


def test_deny_beats_allow() -> None:
    rules = CommandRules(["git *"], ["git push *"])
    assert judge(rules, "git log") == "allowed"
    assert judge(rules, "git push origin") == "denied"


def test_bad_rules_are_refused_when_made() -> None:
    for rule in ("", "a; b", "$(x) y", "'a"):
        with pytest.raises(ValueError, match="rule"):
            CommandRules([rule])
    with pytest.raises(ValueError, match="deny rule"):
        CommandRules([], ["A=1 make"])
    with pytest.raises(TypeError):
        CommandRules([42])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="give the workspace"):
        CommandRules(list(READ_ONLY_COMMANDS))


# --- the read-only set ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "admitted"),
    [
        ("ls", True),
        ("ls -la src", True),
        ("cat notes.txt | wc -l", True),
        ("wc -l < notes.txt", True),
        ("head -n 5 notes.txt && tail -3 notes.txt", True),
        ("grep -rn hello .", True),
        ("grep -e hello -i notes.txt", True),
        ("grep --include=*.py -rl a .", True),
        ("find . -name '*.py' -type f", True),
        ("find src -newer notes.txt -print", True),
        ("sort notes.txt | uniq -c | sort -rn | head", True),
        ("cut -d: -f1 notes.txt", True),
        ("diff -u notes.txt src/a.py", True),
        ("cat src/*.py", True),
        ("du -sh .; pwd; echo done", True),
        ("cat /etc/passwd", False),
        ("cat ../outside.txt", False),
        ("cat link-out", False),
        ("cat *", False),  # the pattern names link-out
        ("cat ~/.ssh/id_rsa", False),
        ("cat $HOME/.bashrc", False),
        ("ls /", False),
        ("wc -l < /etc/passwd", False),
        ("grep -f /etc/passwd x", False),
        ("grep -R hello .", False),
        ("find / -name x", False),
        ("find . -newer /etc/passwd", False),
        ("find . -delete", False),
        ("find . -exec cat {} +", False),
        ("find -L .", False),
        ("sort -o notes.txt notes.txt", False),
        ("sort --compress-program=sh notes.txt", False),
        ("uniq notes.txt out.txt", False),
        ("wc --files0-from=/etc/x", False),
        ("tail -f notes.txt", False),
        ("diff -r src .", False),  # diff -r follows a symbolic link in a folder out
        ("echo hi > out.txt", False),
        ("cd / && cat etc/passwd", False),
        ("cd src && cat a.py", False),
        ("LC_ALL=C sort notes.txt", False),
        ("rm notes.txt", False),
    ],
)
def test_the_read_only_set_reads_only_inside_the_workspace(
    workspace: Path, command: str, admitted: bool
) -> None:
    policy = command_rules(READ_ONLY_COMMANDS, workspace=Workspace(workspace))
    approval = policy(run(command))
    assert approval.approved is admitted, approval.reason


def test_a_read_only_refusal_gives_the_confinement_reason(workspace: Path) -> None:
    policy = command_rules(READ_ONLY_COMMANDS, workspace=Workspace(workspace))
    reason = policy(run("cat ../outside.txt")).reason
    assert "resolves outside the workspace" in reason and "use paths inside the workspace" in reason
    assert "sort -o is not among the options allowed for sort" in policy(run("sort -o x y")).reason


# --- the policies ---------------------------------------------------------------------------------


def test_command_rules_refuses_other_tools_unless_told_otherwise(tools: list[Tool]) -> None:
    policy = command_rules(["ls"])
    assert not policy(ToolCall("c", "write_file", {"path": "x", "content": ""})).approved
    assert policy(run("ls")).approved
    assert not policy(ToolCall("c", "run_command", {"command": 3})).approved
    with_read = command_rules(["ls"], otherwise=read_only(tools))
    assert with_read(ToolCall("c", "read_file", {"path": "x"})).approved
    assert not with_read(run("ls -l")).approved  # not admitted: refused, never passed on
    assert not with_read.will_ask(run("ls -l"))


def test_read_only_mode_runs_the_read_only_set_and_says_why_the_rest_is_refused(
    tools: list[Tool], workspace: Path
) -> None:
    policy = policy_for("read-only", tools, why="read-only tools were chosen", workspace=Workspace(workspace))
    assert policy(run("wc -l notes.txt")).approved
    refused = policy(run("rm notes.txt"))
    assert not refused.approved
    assert "'rm notes.txt' is not among the allowed commands (ls, cat, wc" in refused.reason
    assert "read-only tools were chosen" in refused.reason
    assert not policy_for("read-only", tools)(run("ls")).approved  # no workspace: as before


def test_ask_mode_asks_only_about_lines_the_rules_do_not_decide(tools: list[Tool], workspace: Path) -> None:
    policy = policy_for("ask", tools, allow_commands=["git status"], deny_commands=["rm *"])
    assert not policy.will_ask(run("git status"))
    assert not policy.will_ask(run("rm -rf x"))
    assert policy.will_ask(run("make"))
    assert not policy(run("rm -rf x")).approved


def test_allowed_commands_run_in_a_run(workspace: Path) -> None:
    tools = default_tools(workspace)
    policy = policy_for("read-only", tools, workspace=Workspace(workspace))
    client = ScriptedClient(
        [[run("wc -l notes.txt"), ToolCall("c2", "run_command", {"command": "touch x"})], ["done"]]
    )
    result = run_agent(client=client, system="", tools=tools, user="go", max_turns=3, before_tool_call=policy)
    answers = [m for m in result.messages if m.role == "tool"]
    assert answers[0].content.startswith("1 notes.txt") and not answers[0].is_error
    assert answers[1].is_error and answers[1].content.startswith("refused: 'touch x'")
    assert not (workspace / "x").exists()
    assert policy(run("ls")) == Approval(True)
