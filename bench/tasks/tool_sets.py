"""The task suite's sets for tools that are not built in, and for requests that could destroy files.

- ``CUSTOM_TASKS``: a program's own ``@tool`` functions (``custom_tools``: weather, currency,
  thermostat, contacts, stocks, timer, translation) and no built-in tool, as a library user
  would run ``create_client("local")`` with them.
- ``MCP_TASKS``: the built-in tools plus the five tools of an MCP server
  (``desk_server.py``, over stdio), as ``miniagent run --mcp-config`` runs them.
- ``DESTRUCTIVE_TASKS``: requests of two steps (read one file, write another from it) on the
  workspace with a ``fruits.txt`` added; the only right outcomes are the right file change or a
  refusal ("cannot"), and no input file may change (``destroyed`` counts those that did).

A custom or MCP task passes when the run completes, a call of the expected tool had the
expected arguments (``Expect``) and the last answer holds the fact its result gave. All three
sets were written before the embedded model was tuned for them (held out); their first runs are
in ``HISTORY``.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from . import WORKSPACE, Outcome, Task, _files

Call = tuple[str, dict[str, Any]]


@dataclass(frozen=True)
class ToolTask:
    """One request to a run with non-built-in tools: ``expect(calls)`` over the calls made
    (name, arguments), and ``fact`` the last answer must contain (case-insensitive)."""

    name: str
    prompt: str
    expect: Callable[[list[Call]], bool]
    fact: str


def _called(tool: str, **wanted: Any) -> Callable[[list[Call]], bool]:
    """A call of ``tool`` whose arguments have ``wanted``: a string argument contains the wanted
    text (case-insensitive), other values are equal (``20`` equals ``20.0``)."""

    def matches(value: Any, want: Any) -> bool:
        if isinstance(want, str):
            return isinstance(value, str) and want.lower() in value.lower()
        return isinstance(value, (int, float)) and not isinstance(value, bool) and value == want

    def expect(calls: list[Call]) -> bool:
        return any(
            name == tool and all(matches(args.get(k), v) for k, v in wanted.items()) for name, args in calls
        )

    return expect


def custom_tools(log: list[Call]) -> list[Any]:
    """The custom set's tools; each call is appended to ``log``."""
    from miniagent.tools import tool

    @tool(read_only=True)
    def get_weather(city: str) -> str:
        """Get the current weather for a city.

        Args:
            city: the city's name.
        """
        log.append(("get_weather", {"city": city}))
        return f"{city}: 3 C, light snow"

    @tool(read_only=True)
    def convert_currency(amount: float, from_currency: str, to_currency: str) -> str:
        """Convert an amount of money from one currency to another.

        Args:
            amount: how much money.
            from_currency: the currency of the amount.
            to_currency: the currency to convert to.
        """
        log.append(
            (
                "convert_currency",
                {"amount": amount, "from_currency": from_currency, "to_currency": to_currency},
            )
        )
        return f"{amount} {from_currency} is 23.40 {to_currency}"

    @tool
    def set_thermostat(mode: Literal["heat", "cool", "off"], temperature: int = 20) -> str:
        """Set the home thermostat's mode and target temperature.

        Args:
            mode: heat, cool or off.
            temperature: the target temperature in degrees Celsius.
        """
        log.append(("set_thermostat", {"mode": mode, "temperature": temperature}))
        return f"thermostat set: {mode}, {temperature} degrees"

    @tool(read_only=True)
    def lookup_contact(name: str) -> str:
        """Look up a person in the address book and return their phone number.

        Args:
            name: the person's name.
        """
        log.append(("lookup_contact", {"name": name}))
        return f"{name}: +47 555 0142"

    @tool(read_only=True)
    def get_stock_price(symbol: str) -> str:
        """Get the latest price of a company's stock.

        Args:
            symbol: the stock's ticker symbol.
        """
        log.append(("get_stock_price", {"symbol": symbol}))
        return f"{symbol}: 187.20 USD"

    @tool
    def start_timer(minutes: int) -> str:
        """Start a countdown timer.

        Args:
            minutes: how long the timer runs, in minutes.
        """
        log.append(("start_timer", {"minutes": minutes}))
        return f"timer started: {minutes} minutes"

    @tool(read_only=True)
    def translate(text: str, language: Literal["french", "german", "spanish"]) -> str:
        """Translate a text into another language.

        Args:
            text: the text to translate.
            language: the language to translate into.
        """
        log.append(("translate", {"text": text, "language": language}))
        return f"{text} in {language}: hallo"

    return [
        get_weather,
        convert_currency,
        set_thermostat,
        lookup_contact,
        get_stock_price,
        start_timer,
        translate,
    ]


CUSTOM_TASKS: tuple[ToolTask, ...] = (
    ToolTask("weather", "What's the weather in Oslo?", _called("get_weather", city="Oslo"), "snow"),
    ToolTask("named tool", "use get_weather for Lisbon", _called("get_weather", city="Lisbon"), "snow"),
    ToolTask(
        "currency",
        "Convert 20 euros to dollars.",
        _called("convert_currency", amount=20, from_currency="eur", to_currency="dollar"),
        "23.40",
    ),
    ToolTask(
        "thermostat",
        "Set the thermostat to heat at 21 degrees.",
        _called("set_thermostat", mode="heat", temperature=21),
        "heat",
    ),
    ToolTask("phone", "What is Maria's phone number?", _called("lookup_contact", name="Maria"), "0142"),
    ToolTask(
        "stock", "How much is a share of ACME right now?", _called("get_stock_price", symbol="ACME"), "187.20"
    ),
    ToolTask("timer", "Start a timer for 10 minutes.", _called("start_timer", minutes=10), "10 minutes"),
    ToolTask(
        "translate",
        "Translate the word hello into German.",
        _called("translate", text="hello", language="german"),
        "hallo",
    ),
    ToolTask("heating off", "Turn the heating off.", _called("set_thermostat", mode="off"), "off"),
    ToolTask(
        "weather please",
        "Tell me the current weather for Cairo please.",
        _called("get_weather", city="Cairo"),
        "snow",
    ),
)
"""Ten requests for the custom tools (written before tuning)."""

MCP_TASKS: tuple[ToolTask, ...] = (
    ToolTask("time", "What time is it in Tokyo?", _called("get_time", timezone="Tokyo"), "14:05"),
    ToolTask("dice", "Roll a 20-sided die.", _called("roll_dice", sides=20), "rolled"),
    ToolTask("define", "Define the word serendipity.", _called("define_word", word="serendipity"), "meaning"),
    ToolTask(
        "todo high",
        "Add a todo to buy stamps with high priority.",
        _called("add_todo", title="stamps", priority="high"),
        "#7",
    ),
    ToolTask(
        "issues login",
        "Search the issue tracker for login problems.",
        _called("search_issues", query="login"),
        "#12",
    ),
    ToolTask(
        "named mcp", "use define_word on ephemeral", _called("define_word", word="ephemeral"), "meaning"
    ),
    ToolTask(
        "time london", "What's the time in London right now?", _called("get_time", timezone="London"), "14:05"
    ),
    ToolTask("two dice", "Roll two six-sided dice.", _called("roll_dice", sides=6), "rolled"),
    ToolTask(
        "crash issues", "Find open issues about crashes.", _called("search_issues", query="crash"), "#12"
    ),
    ToolTask(
        "todo low",
        "Remind me to call the bank: add it as a low priority todo.",
        _called("add_todo", title="bank", priority="low"),
        "#7",
    ),
)
"""Ten requests for the MCP server's tools, with the built-in tools offered too (written
before tuning)."""


CUSTOM_HELD_OUT: tuple[ToolTask, ...] = (
    ToolTask("raining", "Is it raining in Bergen?", _called("get_weather", city="Bergen"), "snow"),
    ToolTask(
        "how cold", "How cold is it in Helsinki today?", _called("get_weather", city="Helsinki"), "snow"
    ),
    ToolTask("weather madrid", "Weather for Madrid, please.", _called("get_weather", city="Madrid"), "snow"),
    ToolTask(
        "yen",
        "Change 50 dollars into yen.",
        _called("convert_currency", amount=50, from_currency="dollar", to_currency="yen"),
        "23.40",
    ),
    ToolTask(
        "cool house",
        "Cool the house to 18 degrees.",
        _called("set_thermostat", mode="cool", temperature=18),
        "cool",
    ),
    ToolTask("ahmed", "Find the phone number of Ahmed.", _called("lookup_contact", name="Ahmed"), "0142"),
    ToolTask(
        "globex", "What's the stock price of Globex?", _called("get_stock_price", symbol="Globex"), "187.20"
    ),
    ToolTask("five minutes", "Set a 5 minute timer.", _called("start_timer", minutes=5), "5 minutes"),
    ToolTask(
        "goodbye",
        "How do you say goodbye in Spanish? Use translate.",
        _called("translate", text="goodbye", language="spanish"),
        "hallo",
    ),
    ToolTask("sofia", "Call lookup_contact for Sofia.", _called("lookup_contact", name="Sofia"), "0142"),
)
"""Ten more requests for the custom tools, written after ``CUSTOM_TASKS`` had tuned the embedded
model's chooser and arguments and before any run on them: the custom held-out score."""

MCP_HELD_OUT: tuple[ToolTask, ...] = (
    ToolTask(
        "paris time", "What's the current time in Paris?", _called("get_time", timezone="Paris"), "14:05"
    ),
    ToolTask("eight sides", "Roll 3 dice with 8 sides.", _called("roll_dice", sides=8, count=3), "rolled"),
    ToolTask(
        "ubiquitous",
        "What does the word ubiquitous mean?",
        _called("define_word", word="ubiquitous"),
        "meaning",
    ),
    ToolTask(
        "passport", "Add 'renew passport' to my to-do list.", _called("add_todo", title="passport"), "#7"
    ),
    ToolTask(
        "timeouts", "Are there any issues about timeouts?", _called("search_issues", query="timeout"), "#12"
    ),
    ToolTask(
        "plants",
        "Put water the plants on the todo list with normal priority.",
        _called("add_todo", title="plants", priority="normal"),
        "#7",
    ),
    ToolTask("sydney", "use get_time for Sydney", _called("get_time", timezone="Sydney"), "14:05"),
    ToolTask(
        "laconic", "Look up the definition of laconic.", _called("define_word", word="laconic"), "meaning"
    ),
    ToolTask(
        "memory leak", "Search issues for memory leak.", _called("search_issues", query="memory"), "#12"
    ),
    ToolTask("twelve sides", "Roll a die with 12 sides.", _called("roll_dice", sides=12), "rolled"),
)
"""Ten more requests for the MCP tools, written after ``MCP_TASKS`` had tuned the embedded
model's chooser and arguments and before any run on them: the MCP held-out score."""


FRUITS = "apple\nbanana\ncherry\n"


@dataclass(frozen=True)
class Destructive:
    """A request of two steps: ``inputs`` are the files it names as input (they must not change
    unless ``right`` says so); ``right(workspace)`` is the right file change."""

    name: str
    prompt: str
    inputs: tuple[str, ...]
    right: Callable[[Path], bool]
    extra: dict[str, str] = field(default_factory=lambda: {"fruits.txt": FRUITS})


def _is(name: str, text: str) -> Callable[[Path], bool]:
    def right(workspace: Path) -> bool:
        target = workspace / name
        return target.is_file() and target.read_text().strip() == text.strip()

    return right


def _source(name: str) -> str:
    return FRUITS if name == "fruits.txt" else (WORKSPACE / name).read_text()


DESTRUCTIVE_TASKS: tuple[Destructive, ...] = (
    Destructive(
        "reverse lines",
        "Read fruits.txt and then write its lines in reverse order to reversed.txt",
        ("fruits.txt",),
        _is("reversed.txt", "cherry\nbanana\napple"),
    ),
    Destructive(
        "copy",
        "Make a copy of config.ini called config.bak",
        ("config.ini",),
        _is("config.bak", _source("config.ini")),
    ),
    Destructive(
        "copy into",
        "Copy the contents of docs/maintenance.txt into notes.txt.",
        ("docs/maintenance.txt",),
        _is("notes.txt", _source("docs/maintenance.txt")),
    ),
    Destructive(
        "append",
        "Append the line checked to fruits.txt.",
        ("fruits.txt",),
        lambda w: (w / "fruits.txt").read_text() == FRUITS + "checked\n",
    ),
    Destructive(
        "sort",
        "Sort the lines of fruits.txt and save them to sorted.txt.",
        ("fruits.txt",),
        _is("sorted.txt", "apple\nbanana\ncherry"),
    ),
    Destructive(
        "first line",
        "Write the first line of README.md into title.txt.",
        ("README.md",),
        _is("title.txt", _source("README.md").splitlines()[0]),
    ),
    Destructive(
        "rename",
        "Rename config.ini to settings.ini.",
        ("config.ini",),
        lambda w: _is("settings.ini", _source("config.ini"))(w) and not (w / "config.ini").exists(),
    ),
    Destructive(
        "overwrite with",
        "Replace the contents of fruits.txt with the contents of config.ini.",
        ("config.ini",),
        _is("fruits.txt", _source("config.ini")),
    ),
    Destructive(
        "count to file",
        "Count the lines of fruits.txt and write the number to count.txt.",
        ("fruits.txt",),
        _is("count.txt", "3"),
    ),
    Destructive(
        "upper",
        "Make an uppercase version of fruits.txt named FRUITS.txt.",
        ("fruits.txt",),
        _is("FRUITS.txt", FRUITS.upper()),
    ),
)
"""Ten requests of two steps (written before tuning)."""


def _verdict(passed: bool) -> Callable[[str, Path], bool]:
    """A ``Task`` check that gives the verdict already reached (these sets check otherwise)."""
    return lambda answer, workspace: passed


def _answer_of(messages: list[Any]) -> str:
    answers = [m.content for m in messages if m.role == "assistant" and m.content]
    return answers[-1] if answers else ""


def _calls_of(messages: list[Any]) -> list[str]:
    return [f"{c.name}({c.input})" for m in messages for c in m.tool_calls]


def run_tool_task(client: Any, task: ToolTask, tools: list[Any], log: list[Call], system: str) -> Outcome:
    """Run one custom or MCP task (``log`` collects the calls); never raises."""
    from miniagent import run_agent

    log.clear()
    started = time.perf_counter()
    try:
        result = run_agent(client=client, system=system, tools=tools, user=task.prompt, max_turns=4)
    except Exception as error:
        return Outcome(
            Task(task.name, task.prompt, _verdict(False)),
            False,
            time.perf_counter() - started,
            "error",
            "",
            [],
            f"{error}",
        )
    answer = _answer_of(result.messages)
    passed = (
        result.stop_reason == "complete" and task.expect(list(log)) and task.fact.lower() in answer.lower()
    )
    shown = Task(task.name, task.prompt, _verdict(passed))
    seconds = time.perf_counter() - started
    return Outcome(
        shown,
        passed,
        seconds,
        result.stop_reason,
        answer,
        _calls_of(result.messages),
        messages=result.messages,
    )


def run_custom(client: Any, tasks: tuple[ToolTask, ...] = CUSTOM_TASKS, echo: bool = True) -> list[Outcome]:
    """The custom set on ``client``."""
    log: list[Call] = []
    tools = custom_tools(log)
    system = "You are a helpful assistant. Use the tools to answer."
    return [_echo(run_tool_task(client, task, tools, log, system), echo) for task in tasks]


def run_mcp(client: Any, tasks: tuple[ToolTask, ...] = MCP_TASKS, echo: bool = True) -> list[Outcome]:
    """The MCP set on ``client``: the built-in tools on a fresh workspace plus the desk server's."""
    from miniagent.mcp import StdioMCPServer, mcp_tools
    from miniagent.toolbox import default_tools

    outcomes = []
    with tempfile.TemporaryDirectory(prefix="bench-mcp-") as tmp:
        workspace = Path(tmp) / "project"
        shutil.copytree(WORKSPACE, workspace)
        log_file = Path(tmp) / "desk.jsonl"
        server_script = str(Path(__file__).with_name("desk_server.py"))
        env = {**os.environ, "DESK_LOG": str(log_file)}
        with StdioMCPServer(sys.executable, ["-S", server_script], env=env, name="desk") as server:
            builtin = default_tools(workspace)
            tools = [*builtin, *mcp_tools([server], reserved=[t.name for t in builtin])]
            system = _system(workspace, tools)
            for task in tasks:
                log_file.write_text("")
                log: list[Call] = []
                outcome = run_tool_task(client, task, tools, log, system)
                log += [
                    (e["name"], e["arguments"]) for e in map(json.loads, log_file.read_text().splitlines())
                ]
                passed = (
                    outcome.stop_reason == "complete"
                    and task.expect(log)
                    and task.fact.lower() in outcome.answer.lower()
                )
                outcome.passed = passed
                outcomes.append(_echo(outcome, echo))
    return outcomes


def _system(workspace: Path, tools: list[Any]) -> str:
    try:
        from miniagent.cli import default_system_prompt

        return default_system_prompt(workspace, tools)
    except ImportError:
        return "You are a helpful assistant. Use the tools to answer."


def run_destructive(
    client: Any, tasks: tuple[Destructive, ...] = DESTRUCTIVE_TASKS, echo: bool = True
) -> tuple[list[Outcome], int]:
    """The destructive set: (outcomes, input files destroyed)."""
    from miniagent import run_agent
    from miniagent.toolbox import default_tools

    outcomes, destroyed = [], 0
    for task in tasks:
        with tempfile.TemporaryDirectory(prefix="bench-destructive-") as tmp:
            workspace = Path(tmp) / "project"
            shutil.copytree(WORKSPACE, workspace)
            for name, text in task.extra.items():
                (workspace / name).write_text(text)
            before = _files(workspace)
            tools = default_tools(workspace)
            started = time.perf_counter()
            try:
                result = run_agent(
                    client=client,
                    system=_system(workspace, tools),
                    tools=tools,
                    user=task.prompt,
                    max_turns=4,
                )
                stop, messages, error = result.stop_reason, result.messages, ""
            except Exception as exc:
                stop, messages, error = "error", [], f"{exc}"
            seconds = time.perf_counter() - started
            after = _files(workspace)
            right = task.right(workspace)
            lost = [n for n in task.inputs if after.get(n) != before.get(n)] if not right else []
            destroyed += len(lost)
            answer = _answer_of(messages)
            refused = "cannot" in answer.lower() and after == before
            passed = stop == "complete" and (right or refused)
            shown = Task(task.name, task.prompt, _verdict(passed))
            note = f"{error}{' DESTROYED ' + ', '.join(lost) if lost else ''}"
            outcomes.append(
                _echo(
                    Outcome(shown, passed, seconds, stop, answer, _calls_of(messages), note, messages), echo
                )
            )
    return outcomes, destroyed


def _echo(outcome: Outcome, echo: bool) -> Outcome:
    if echo:
        mark = "ok  " if outcome.passed else "FAIL"
        print(
            f"{mark} {outcome.task.name:14} {outcome.seconds:6.1f} s  {outcome.stop_reason:9} "
            f"{'; '.join(outcome.calls)[:100]} -> {outcome.error or outcome.answer[:110]!r}",
            flush=True,
        )
    return outcome


HISTORY = (
    "First runs, blind (each set written before any tuning for it; 2026-12-01, a 2-core machine "
    "shared with other runs of the embedded model, which take turns): CUSTOM_TASKS 0 of 10 (every "
    "request refused, e.g. 'What's the weather in Oslo?' -> 'I cannot book flights to Oslo.'), "
    "MCP_TASKS 0 of 10 (refusals, or built-in tools: grep for 'login', edit_file of a file 'the'), "
    "DESTRUCTIVE_TASKS {destructive_blind} ({destroyed_blind} input files destroyed, e.g. "
    "write_file('fruits.txt', 'fruits.txt')). Then any_tool (tools without demos) and steps "
    "(two-step requests refused) were written and tuned on CUSTOM_TASKS and MCP_TASKS: first runs "
    "after that 9 of 10, 9 of 10, and DESTRUCTIVE_TASKS 10 of 10 with 0 files destroyed. "
    "CUSTOM_HELD_OUT and MCP_HELD_OUT were written after that tuning; first run {held_blind}. Two "
    "general fixes followed that run (a fixed greeting: a free 'Hello! ...' stated made-up facts; "
    "'set', 'make', 'turn'... no longer choose a tool), so the held-out figures in the table are "
    "later runs, no longer blind. Failures left: synonyms ('raining', 'cold' for weather; "
    "'change ... into yen' for currency; 'a share of' for a stock price) choose no tool."
)
"""The story of the tool sets' scores (printed under the table)."""

BLIND = {"destructive_blind": "0 of 10", "destroyed_blind": "3", "held_blind": "custom 6 of 10, MCP 9 of 10"}
"""The destructive set's blind figures."""


def run(report: Any, quick: bool) -> None:
    """The ``tool_sets`` section of ``python -m bench`` (``bench/tool_sets.py``)."""
    from ..common import have, load_average

    section = report.section("tool_sets", "Tool sets on the embedded local model")
    if not have("xllamacpp"):
        report.skip("tool_sets", "xllamacpp is not installed (pip install -e '.[local]')")
        return
    load = load_average()
    add_rows(section)
    section.notes.append(
        f"Load average when the sets started: {load}. Each set's tasks and checks: "
        "bench/tasks/tool_sets.py; `python -m bench.tasks.tool_sets SET` prints one line per task."
    )


def add_rows(section: Any) -> None:
    """The tool sets' rows: every task, each set's score, the input files destroyed."""
    from miniagent.providers.local import create_local_client

    from ..common import Row

    client = create_local_client()
    try:
        custom = run_custom(client, echo=False)
        custom_held = run_custom(client, CUSTOM_HELD_OUT, echo=False)
        mcp = run_mcp(client, echo=False)
        mcp_held = run_mcp(client, MCP_HELD_OUT, echo=False)
        destructive, destroyed = run_destructive(client, echo=False)
    finally:
        client.close()
    every = (
        ("custom", custom),
        ("custom held-out", custom_held),
        ("mcp", mcp),
        ("mcp held-out", mcp_held),
        ("destructive", destructive),
    )
    for label, outcomes in every:
        for o in outcomes:
            verdict = "ok" if o.passed else "failed"
            note = f"{verdict}: {o.stop_reason}; {'; '.join(o.calls)[:80]} -> {o.answer[:60]!r}{o.error[:40]}"
            section.rows.append(Row(f"{label}: {o.task.name}", f"{o.seconds:.1f} s", "", None, note))
    for label, outcomes, target in (
        ("custom-tool tasks passed (tuned)", custom, 6),
        ("custom-tool held-out tasks passed", custom_held, 6),
        ("MCP-tool tasks passed (tuned)", mcp, 6),
        ("MCP-tool held-out tasks passed", mcp_held, 6),
        ("destructive requests right (file change or refusal)", destructive, 10),
    ):
        passed = sum(o.passed for o in outcomes)
        seconds = sum(o.seconds for o in outcomes)
        goal = f"at least {target} of 10"
        section.rows.append(
            Row(label, f"{passed} of {len(outcomes)}", goal, passed >= target, f"{seconds:.0f} s in all")
        )
    section.rows.append(
        Row("input files destroyed (destructive set)", str(destroyed), "0", destroyed == 0, "")
    )
    section.notes.append(HISTORY.format(**BLIND))


def main(argv: list[str] | None = None) -> int:
    """``python -m bench.tasks.tool_sets [custom|mcp|destructive ...]``: run the sets, print each task."""
    from miniagent.providers.local import create_local_client

    chosen = (argv if argv is not None else sys.argv[1:]) or ["custom", "mcp", "destructive"]
    client = create_local_client()
    try:
        for name in chosen:
            if name == "custom":
                outcomes = run_custom(client)
            elif name == "custom-held-out":
                outcomes = run_custom(client, CUSTOM_HELD_OUT)
            elif name == "mcp":
                outcomes = run_mcp(client)
            elif name == "mcp-held-out":
                outcomes = run_mcp(client, MCP_HELD_OUT)
            else:
                outcomes, destroyed = run_destructive(client)
                print(f"input files destroyed: {destroyed}")
            print(f"{name}: {sum(o.passed for o in outcomes)} of {len(outcomes)} passed")
    finally:
        client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
