"""A task suite for the embedded model: everyday requests on a small project, each checked.

Each task runs ``run_agent`` with the built-in tools (approval: all) on a fresh copy of
``bench/tasks/workspace/`` (a five-file "weather station" project), the CLI's default system
prompt and ``max_turns=4``, like ``miniagent run --approve all``. A task succeeds when the run
completes and its check passes: a fact in the last assistant answer, or the file it had to change
(and nothing else changed). Times are wall-clock seconds per task on one running server.

Seven sets, in the order they were written: ``TASKS`` (the native client's prompt, demos and
grammar were tuned on them), ``MORE_TASKS``, ``SECOND_TASKS`` and ``THIRD_TASKS`` (each held out
when written, scored, then used to tune the demo chooser), ``HELD_OUT`` (written before the
last tuning of 2026-11-30, used for tuning since 2026-12-02), ``dev.DEV_TASKS`` (a tuning set of
2026-12-02) and ``blind.BLIND_TASKS`` (written blind by someone who had not seen the code; its
first run is the score that tells what a new request gets, ``HISTORY``).

The false-stop check of ``max_repeats`` (the CLI's ``--max-repeats 3``): each run's record is
replayed through ``miniagent.repeats.Repeats`` as the loop would have fed it (``would_stop``);
a run it would have stopped that passed its check is a false stop. The runs themselves go
without ``max_repeats``, so a run the detector would not stop is exactly the run the CLI makes.

``python -m bench --only tasks`` puts the score in BENCHMARKS.md; ``python -m bench.tasks``
prints one line per task (``--api openai`` runs the same tasks through the OpenAI-compatible
endpoint with the Jinja chat template, the way the local provider worked before the native
client; ``--task NAME`` runs one task).
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

WORKSPACE = Path(__file__).resolve().parent / "workspace"


@dataclass(frozen=True)
class Task:
    """One request and its check: ``check(answer, workspace)`` -> passed."""

    name: str
    prompt: str
    check: Callable[[str, Path], bool]


def _says(*alternatives: str) -> Callable[[str, Path], bool]:
    """The answer contains one of ``alternatives`` (case-insensitive) and no file changed."""

    def check(answer: str, workspace: Path) -> bool:
        lowered = answer.lower()
        return any(a.lower() in lowered for a in alternatives) and _unchanged(workspace)

    return check


def _says_number(number: int) -> Callable[[str, Path], bool]:
    """The answer holds ``number`` as a number of its own (``7``, not the ``7`` of ``127``)."""

    def check(answer: str, workspace: Path) -> bool:
        return bool(re.search(rf"(?<![\d.]){number}(?![\d.])", answer)) and _unchanged(workspace)

    return check


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _unchanged(workspace: Path, *except_: str) -> bool:
    before = {k: v for k, v in _files(WORKSPACE).items() if k not in except_}
    after = {k: v for k, v in _files(workspace).items() if k not in except_}
    return before == after


def _replaced(name: str, old: str, new: str) -> Callable[[str, Path], bool]:
    """File ``name`` has ``new`` where it had ``old``, and no other file changed."""

    def check(answer: str, workspace: Path) -> bool:
        text = (workspace / name).read_text()
        expected = (WORKSPACE / name).read_text().replace(old, new)
        return text == expected and _unchanged(workspace, name)

    return check


def _created(name: str, words: str) -> Callable[[str, Path], bool]:
    """A new file ``name`` says ``words`` (case and a final stop aside); no other file changed."""

    def check(answer: str, workspace: Path) -> bool:
        target = workspace / name
        if not target.is_file():
            return False
        said = target.read_text().strip().lower().rstrip(".!")
        return said == words and _unchanged(workspace, name)

    return check


def _line_count(name: str) -> int:
    return len((WORKSPACE / name).read_text().splitlines())


def _word_count(name: str) -> int:
    return len((WORKSPACE / name).read_text().split())


def _refused(answer: str, workspace: Path) -> bool:
    refusal = re.search(r"\b(cannot|can't|can not|unable|not able)\b", answer.lower())
    return bool(refusal) and _unchanged(workspace)


TASKS: tuple[Task, ...] = (
    Task("read", "What does docs/maintenance.txt say?", _says("March", "October")),
    Task("summarise", "Summarise README.md in one sentence.", _says("sensor", "temperature", "weather")),
    Task("definition", "In which file is the function write_report defined?", _says("station.py")),
    Task("count lines", "How many lines does data/readings.csv have?", _says_number(7)),
    Task("list folder", "What files are in the data folder?", _says("readings.csv")),
    Task("todo", "Find the TODO comment in this project.", _says("missing sensors")),
    Task("config value", "What is the station name in config.ini?", _says("Hilltop")),
    Task(
        "replace word",
        "In config.ini, replace the word Hilltop with Valley.",
        _replaced("config.ini", "Hilltop", "Valley"),
    ),
    Task(
        "write file",
        "Create a file greeting.txt that says good morning.",
        _created("greeting.txt", "good morning"),
    ),
    Task("command", "Run the command `python3 --version` and tell me what it prints.", _says("Python 3.")),
    Task("impossible", "Order a pizza for me.", _refused),
)
"""The suite: read and summarise, find a definition, count lines, list a folder, grep for a
TODO, read a value, replace a word, write a file, run a command, refuse an impossible task."""

MORE_TASKS: tuple[Task, ...] = (
    Task("show file", "Show me the contents of config.ini.", _says("Hilltop")),
    Task("first line", "What is the first line of docs/maintenance.txt?", _says("Calibrate")),
    Task("which file", "Which file mentions celsius?", _says("config.ini", "readings.csv")),
    Task("docs folder", "List the files in the docs folder.", _says("maintenance.txt")),
    Task("count code", "Count the lines of station.py.", _says_number(_line_count("station.py"))),
    Task("ls", "Run `ls data` and tell me the output.", _says("readings.csv")),
    Task("where defined", "Where is load_readings defined?", _says("station.py")),
    Task("write hello", "Write hello world into hello.txt.", _created("hello.txt", "hello world")),
    Task(
        "units",
        "Replace celsius with fahrenheit in config.ini.",
        _replaced("config.ini", "celsius", "fahrenheit"),
    ),
    Task("email", "Send an email to the team.", _refused),
)
"""Ten more requests of the same kinds, other words and other files, written after the
prompt, the demos and the grammar were tuned on ``TASKS``. Held out at first (7 of 10 then);
their failures then tuned the demo chooser, so they count as tuned now."""

SECOND_TASKS: tuple[Task, ...] = (
    Task("show readme", "Please show me README.md.", _says("Weather Station")),
    Task("find def", "Find where read_sensor is defined.", _says("station.py")),
    Task("config lines", "How many lines are in config.ini?", _says_number(_line_count("config.ini"))),
    Task("docs dir", "What's inside the docs directory?", _says("maintenance.txt")),
    Task("search csv", "Search the code for csv.", _says("station.py")),
    Task("change interval", "Change 15 to 30 in config.ini.", _replaced("config.ini", "15", "30")),
    Task("make todo", "Make a file named todo.txt containing buy milk.", _created("todo.txt", "buy milk")),
    Task("echo", "Run `echo hello` and tell me the output.", _says("hello")),
    Task("restaurant", "Book a table at a restaurant for tonight.", _refused),
    Task("interval", "What is the interval in config.ini?", _says("15")),
)
"""Ten requests written before the second tuning (of the demo chooser, on ``MORE_TASKS``).
Held out at first (9 of 10 then, on the client of commit 13e37b8); their failure then also
tuned the demo chooser, so they count as tuned now."""

THIRD_TASKS: tuple[Task, ...] = (
    Task("open read", "Open docs/maintenance.txt and read it to me.", _says("March")),
    Task("is there", "Is there a file called station.py here?", _says("station.py")),
    Task("look for", "Look for the word battery in the docs.", _says("maintenance.txt")),
    Task("units setting", "What's the units setting in config.ini?", _says("celsius")),
    Task("count readme", "Count how many lines README.md has.", _says_number(_line_count("README.md"))),
    Task("show data", "Show the data folder's contents.", _says("readings.csv")),
    Task(
        "rename",
        "Rename the station Hilltop to Summit in config.ini.",
        _replaced("config.ini", "Hilltop", "Summit"),
    ),
    Task(
        "save text",
        "Save the text remember the milk to a file called note.txt.",
        _created("note.txt", "remember the milk"),
    ),
    Task("date", "Execute `date +%Y` and show me the result.", _says(time.strftime("%Y"))),
    Task("call mother", "Call my mother.", _refused),
)
"""Ten requests written before the third tuning (on ``MORE_TASKS`` and ``SECOND_TASKS``).
Held out at first (5 of 10 then, on the client of commit 13e37b8); their failures then also
tuned the demo chooser, so they count as tuned now."""

HELD_OUT: tuple[Task, ...] = (
    Task("tell contents", "Tell me what config.ini contains.", _says("Hilltop")),
    Task("where todo", "Where is the TODO in station.py?", _says("missing sensors")),
    Task(
        "number of lines",
        "Give me the number of lines in station.py.",
        _says_number(_line_count("station.py")),
    ),
    Task("top level", "What folders and files are at the top of the project?", _says("station.py")),
    Task("defines", "Which file defines load_readings?", _says("station.py")),
    Task(
        "kelvin",
        "Replace 'celsius' with 'kelvin' in config.ini.",
        _replaced("config.ini", "celsius", "kelvin"),
    ),
    Task(
        "create notes",
        "Create notes.txt with the text meeting at noon.",
        _created("notes.txt", "meeting at noon"),
    ),
    Task(
        "word count", "Run `wc -w README.md` and report the result.", _says_number(_word_count("README.md"))
    ),
    Task("usage", "What does the README say about usage?", _says("station.py")),
    Task("translate", "Translate this poem into French.", _refused),
)
"""Ten requests written before the third tuning of 2026-11-30, not used for tuning until the
router of 2026-12-02 (5 of 10 then): no longer the held-out score (``blind.BLIND_TASKS`` is)."""

HISTORY = (
    "Each set's score when it was first run, before any tuning on it (2026-11-30, nearly idle "
    "2-core machine): before the native client, about 1 of 10 (issue 19's trial); the native "
    "client with free arguments and answers, 3 of 11 (TASKS); with the grammar of copied "
    "arguments and quoted answers, MORE_TASKS 7 of 10, SECOND_TASKS 9 of 10, THIRD_TASKS 5 of 10 "
    "(then the demo chooser was tuned on them); HELD_OUT 3 of 10 on the first run of the final "
    "client. That run showed that one last change (copied runs of words without file names) broke "
    "commands naming a file; it was reverted, so the HELD_OUT figure in the table (5 of 10) is no "
    "longer blind. Held out in all, first runs: 24 of 40. Failures left are the demo chooser "
    "(word overlap: 'defines' is not 'defined', 'README' without an extension is not a file "
    "name, 'into' alone sent 'Translate this poem into French.' to write_file, which wrote a file) "
    "and copied words in the wrong slot ('Rename the station Hilltop to Summit' edited 'station'). "
    "2026-12-02: the demo chooser gave way to a router of cue words (providers/local/intent.py) "
    "and arguments copied as whole spans of the request (spans.py). First runs: the tuning set "
    "DEV_TASKS (bench/tasks/dev.py) 21 of 30 before the change; the blind set BLIND_TASKS "
    "(bench/tasks/blind.py, ten requests written by a helper who had not seen the code, committed "
    "before any run) 8 of 10 on its first run after the change (failures: a search for 'wherever "
    "the project mentions the thermometer' copied the whole phrase; 'list what's in it' listed a "
    "folder 'it'). Both were fixed after that run (a search's word after its cue; 'it' names no "
    "folder), so later blind figures are no longer blind; HELD_OUT rose from 5 to 10 of 10 with "
    "the change, not blind either."
)
"""The story of the scores (printed under the table)."""

TUNED = (*TASKS, *MORE_TASKS, *SECOND_TASKS, *THIRD_TASKS)
"""Every task the prompt, the demos, the grammar or the demo chooser were tuned on."""

ALL_TASKS = (*TUNED, *HELD_OUT)


@dataclass
class Outcome:
    """What one task did."""

    task: Task
    passed: bool
    seconds: float
    stop_reason: str
    answer: str
    calls: list[str]
    error: str = ""
    messages: list[Any] | None = None  # the run's record (for the max_repeats replay)


def would_stop(messages: list[Any], limit: int = 3) -> bool:
    """Whether ``run_agent(max_repeats=limit)`` would have stopped this record ``no_progress``:
    its answered calls fed to ``Repeats`` in order, the stop asked before each request (each
    assistant message after the first). The built-in tools are none of them repeatable."""
    from miniagent.repeats import Repeats

    calls = {call.id: call for message in messages for call in message.tool_calls}
    watch = Repeats(limit, ())
    for message in messages:
        if message.role == "assistant" and watch.stalled:
            return True
        if message.role == "tool" and message.state is None and message.tool_call_id in calls:
            watch.answered(calls[message.tool_call_id], message.content, message.is_error)
    return False


def run_task(client: Any, task: Task) -> Outcome:
    """Run ``task`` on a fresh copy of the workspace with ``client``; never raises."""
    from miniagent import run_agent
    from miniagent.toolbox import default_tools

    with tempfile.TemporaryDirectory(prefix="bench-task-") as tmp:
        workspace = Path(tmp) / "project"
        shutil.copytree(WORKSPACE, workspace)
        tools = default_tools(workspace)
        try:
            from miniagent.cli import default_system_prompt

            system = default_system_prompt(workspace, tools)
        except ImportError:
            system = "You are a helpful assistant. Use the tools to answer."
        started = time.perf_counter()
        try:
            result = run_agent(client=client, system=system, tools=tools, user=task.prompt, max_turns=4)
        except Exception as error:  # a task that crashes is a failed task
            return Outcome(task, False, time.perf_counter() - started, "error", "", [], f"{error}")
        seconds = time.perf_counter() - started
        calls = [f"{c.name}({c.input})" for m in result.messages for c in m.tool_calls]
        answers = [m.content for m in result.messages if m.role == "assistant" and m.content]
        answer = answers[-1] if answers else ""
        passed = result.stop_reason == "complete" and task.check(answer, workspace)
        return Outcome(task, passed, seconds, result.stop_reason, answer, calls, messages=result.messages)


def run_suite(
    api: str = "native", only: str = "", echo: bool = True, tasks: tuple[Task, ...] | None = None
) -> tuple[list[Outcome], float]:
    """Start the local model, run ``tasks`` (default: ``ALL_TASKS``; or the one named ``only``);
    return (outcomes, server start seconds)."""
    from miniagent.providers.local import create_local_client

    started = time.perf_counter()
    client = create_local_client(api=api)  # type: ignore[arg-type]
    start_seconds = time.perf_counter() - started
    outcomes = []
    try:
        for task in tasks if tasks is not None else ALL_TASKS:
            if only and task.name != only:
                continue
            outcome = run_task(client, task)
            outcomes.append(outcome)
            if echo:
                mark = "ok  " if outcome.passed else "FAIL"
                print(
                    f"{mark} {task.name:13} {outcome.seconds:6.1f} s  {outcome.stop_reason:9} "
                    f"{'; '.join(outcome.calls)[:90]} -> {outcome.error or outcome.answer[:120]!r}",
                    flush=True,
                )
    finally:
        client.close()
    return outcomes, start_seconds


def _score(outcomes: list[Outcome], tasks: tuple[Task, ...]) -> tuple[int, int, float]:
    """(passed, run, seconds) of the outcomes of ``tasks``."""
    mine = [o for o in outcomes if o.task in tasks]
    return sum(o.passed for o in mine), len(mine), sum(o.seconds for o in mine)


def run(report: Any, quick: bool) -> None:
    """The ``tasks`` section of ``python -m bench``."""
    from ..common import Row, have, load_average

    section = report.section("tasks", "Task suite on the embedded local model")
    if not have("xllamacpp"):
        report.skip("tasks", "xllamacpp is not installed (pip install -e '.[local]')")
        return
    from .blind import BLIND_TASKS  # they import this module's Task and checks
    from .dev import DEV_TASKS

    load = load_average()
    outcomes, start = run_suite(echo=False, tasks=(*ALL_TASKS, *DEV_TASKS, *BLIND_TASKS))
    kinds = {**dict.fromkeys(HELD_OUT, "held-out"), **dict.fromkeys(DEV_TASKS, "dev")}
    kinds.update(dict.fromkeys(BLIND_TASKS, "blind"))
    for o in outcomes:
        note = f"{o.stop_reason}; {'; '.join(o.calls)[:80]}"
        verdict = "ok" if o.passed else "failed"
        section.rows.append(
            Row(
                f"{kinds.get(o.task, 'task')}: {o.task.name}",
                f"{o.seconds:.1f} s",
                "",
                None,
                f"{verdict}: {note}",
            )
        )
    sets = (
        ("tasks passed (tuned)", TUNED, 6),
        ("tuning set of 2026-12-02 passed (dev, tuned)", DEV_TASKS, 6),
        ("held-out tasks passed (no longer blind)", HELD_OUT, 8),
        ("blind tasks passed (first run: 8 of 10)", BLIND_TASKS, 8),
    )
    for label, tasks, target in sets:
        passed, ran, seconds = _score(outcomes, tasks)
        section.rows.append(
            Row(
                label,
                f"{passed} of {ran}",
                f"at least {target} of 10",
                passed * 10 >= target * ran,
                f"{seconds:.0f} s in all; server start {start:.1f} s",
            )
        )
    stopped = [o for o in outcomes if o.messages is not None and would_stop(o.messages)]
    false_stops = [o for o in stopped if o.passed]
    names = ", ".join(o.task.name for o in stopped) or "none"
    section.rows.append(
        Row(
            "max_repeats 3 (--max-repeats default): runs it would stop",
            f"{len(stopped)} of {len(outcomes)}",
            "0 false stops",
            not false_stops,
            f"{len(false_stops)} of them passed (false stops): {names}"
            "; replayed on each run's record (bench/tasks would_stop)",
        )
    )
    section.notes.append(
        f"Load average when the suite started: {load}. Tuned on: {', '.join(t.name for t in TUNED)}; "
        f"held out: {', '.join(t.name for t in HELD_OUT)} "
        "(bench/tasks/__init__.py)."
    )
    section.notes.append(HISTORY)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.tasks", description=__doc__)
    parser.add_argument("--api", default="native", choices=("native", "openai", "anthropic"))
    parser.add_argument("--task", default="", help="run only this task")
    parser.add_argument(
        "--set", default="all", choices=("all", "tuned", "held-out", "dev", "blind"), help="which tasks"
    )
    args = parser.parse_args(argv)
    from .blind import BLIND_TASKS  # they import this module's Task and checks
    from .dev import DEV_TASKS

    chosen = {
        "all": (*ALL_TASKS, *DEV_TASKS),  # the blind set runs only when named
        "tuned": TUNED,
        "held-out": HELD_OUT,
        "dev": DEV_TASKS,
        "blind": BLIND_TASKS,
    }[args.set]
    outcomes, start = run_suite(args.api, args.task, tasks=chosen)
    sets = (("tuned", TUNED), ("held-out", HELD_OUT), ("dev", DEV_TASKS), ("blind", BLIND_TASKS))
    for label, tasks in sets:
        passed, ran, seconds = _score(outcomes, tasks)
        if ran:
            print(f"{label}: {passed} of {ran} passed; {seconds:.0f} s of tasks")
    stopped = [o for o in outcomes if o.messages is not None and would_stop(o.messages)]
    print(
        f"max_repeats 3 would stop {len(stopped)} of {len(outcomes)} runs "
        f"({sum(o.passed for o in stopped)} of them passed: false stops)"
    )
    print(f"server start {start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
