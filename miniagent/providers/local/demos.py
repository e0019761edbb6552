"""The demos of the embedded model: the one file of it that names the built-in tools.

At 135M parameters the model follows examples, not instructions: each ``Demo`` is a user
request, the call the assistant makes, the tool's result and the one-line answer quoting it.

- ``DEMOS``: the fixed prefix's demos, one per built-in tool (``prompt.prefix``).
- ``REFUSAL``: the demo of an impossible task (answered "I cannot ...").
- ``MORE_DEMOS``: more phrasings per tool, interleaved into the prefix.
- ``ROUTING_DEMOS``: phrasings that only choose the tool of a first reply (``nearest_demo``);
  they are not in the prefix.
- ``OPENERS``: how the answer to each built-in tool's result starts (``grammar``).

Adding a built-in tool that the embedded model uses well: its demos and its opener here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["DEMOS", "MORE_DEMOS", "OPENERS", "OTHER_OPENER", "REFUSAL", "ROUTING_DEMOS", "Demo"]


@dataclass(frozen=True)
class Demo:
    """One few-shot example: ``user`` asks, the assistant calls ``tool`` with ``arguments``,
    the tool returns ``result``, the assistant answers ``answer``. A demo with ``custom`` is
    not shown: it names a tool no demo knows, chosen for the request (``any_tool``)."""

    user: str
    tool: str
    arguments: dict[str, Any]
    result: str
    answer: str
    custom: bool = False


DEMOS: tuple[Demo, ...] = (
    Demo(
        "Create a file status.txt that says done.",
        "write_file",
        {"path": "status.txt", "content": "done"},
        "created status.txt (4 characters, 4 bytes)",
        "Done: created status.txt (4 characters, 4 bytes)",
    ),
    Demo(
        "In hello.txt, replace the word world with moon.",
        "edit_file",
        {"path": "hello.txt", "old_text": "world", "new_text": "moon"},
        "edited hello.txt: replaced 1 occurrence at line 1",
        "Done: edited hello.txt: replaced 1 occurrence at line 1",
    ),
    Demo(
        "How many lines does log.txt have?",
        "run_command",
        {"command": "wc -l log.txt"},
        "42 log.txt\nexit code: 0",
        'It printed: "42 log.txt"',
    ),
    Demo(
        "Where is the function load_config defined?",
        "grep",
        {"pattern": "def load_config"},
        "app/settings.py:12:def load_config(path):",
        'Found: "app/settings.py:12:def load_config(path):"',
    ),
    Demo(
        "Which files are in the docs folder?",
        "list_dir",
        {"path": "docs"},
        "guide.md\nimages/\nintro.md",
        'It contains: "guide.md images/ intro.md"',
    ),
    Demo(
        "What does todo.txt say?",
        "read_file",
        {"path": "todo.txt"},
        "Buy milk.\nCall Anna at 5.",
        'It says: "Buy milk. Call Anna at 5."',
    ),
)
"""One demo per built-in tool; a demo is shown when the request offers a tool of that name whose
schema has every argument the demo uses."""

REFUSAL = Demo(
    "Book me a flight to Rome.",
    "",
    {},
    "",
    "I cannot book flights: I can only read, search and change the files here and run commands.",
)
"""Shown first (the first reply may be an answer when no demo request is like the user's): a
task no tool can do is answered at once with "I cannot"."""


MORE_DEMOS: tuple[Demo, ...] = (
    Demo(
        "What is the port in server.toml?",
        "read_file",
        {"path": "server.toml"},
        "[server]\nport = 8080\nhost = localhost",
        'It says: "[server] port = 8080 host = localhost"',
    ),
    Demo(
        "Summarise notes.md in one sentence.",
        "read_file",
        {"path": "notes.md"},
        "# Notes\nThe app sends a reminder email every Monday to each team member.",
        'It says: "# Notes The app sends a reminder email every Monday to each team member."',
    ),
    Demo(
        "List the files here.",
        "list_dir",
        {},
        "app/\nREADME.md\nsetup.py",
        'It contains: "app/ README.md setup.py"',
    ),
    Demo(
        "Find the FIXME notes in the code.",
        "grep",
        {"pattern": "FIXME"},
        "app/main.py:7:    # FIXME: retry on timeout",
        'Found: "app/main.py:7:    # FIXME: retry on timeout"',
    ),
    Demo(
        "Run `date` and tell me what it prints.",
        "run_command",
        {"command": "date"},
        "Mon Mar  3 10:00:00 UTC 2025\nexit code: 0",
        'It printed: "Mon Mar  3 10:00:00 UTC 2025"',
    ),
    Demo(
        "Change the title in index.html from Home to Welcome.",
        "edit_file",
        {"path": "index.html", "old_text": "Home", "new_text": "Welcome"},
        "edited index.html: replaced 1 occurrence at line 3",
        "Done: edited index.html: replaced 1 occurrence at line 3",
    ),
    Demo(
        "Write a file todo.txt with the line buy bread.",
        "write_file",
        {"path": "todo.txt", "content": "buy bread"},
        "created todo.txt (9 characters, 9 bytes)",
        "Done: created todo.txt (9 characters, 9 bytes)",
    ),
    Demo(
        "Send a message to my team.",
        "",
        {},
        "",
        "I cannot send messages: I can only read, search and change the files here and run commands.",
    ),
)
"""More requests of the same kinds, in the fixed prefix too (a second phrasing per tool, see
``_interleaved``; the refusal is shown as ``REFUSAL``): with ``DEMOS`` they choose the tool of a
first reply (``nearest_demo``): the 135M model writes good arguments for a given tool, but picks
the tool badly (``list_dir`` for most requests, measured)."""

ROUTING_DEMOS: tuple[Demo, ...] = (
    Demo(
        "Show me the first line of readme.txt.",
        "read_file",
        {"path": "readme.txt"},
        "Shopping list app\nRun it with python app.py.",
        'It says: "Shopping list app Run it with python app.py."',
    ),
    Demo(
        "Open report.txt and read it to me.",
        "read_file",
        {"path": "report.txt"},
        "Sales rose by 4 percent in May.",
        'It says: "Sales rose by 4 percent in May."',
    ),
    Demo(
        "Which file mentions timeout?",
        "grep",
        {"pattern": "timeout"},
        "app/net.py:3:TIMEOUT = 30  # timeout in seconds",
        'Found: "app/net.py:3:TIMEOUT = 30  # timeout in seconds"',
    ),
    Demo(
        "Search the code for main.",
        "grep",
        {"pattern": "main"},
        "app/cli.py:40:def main():",
        'Found: "app/cli.py:40:def main():"',
    ),
    Demo(
        "Look for the word error in the logs.",
        "grep",
        {"pattern": "error"},
        "logs/app.log:12:error: disk full",
        'Found: "logs/app.log:12:error: disk full"',
    ),
    Demo(
        "Write the text hi there into hi.txt.",
        "write_file",
        {"path": "hi.txt", "content": "hi there"},
        "created hi.txt (8 characters, 8 bytes)",
        "Done: created hi.txt (8 characters, 8 bytes)",
    ),
    Demo(
        "Save the text call Bob to a file called bob.txt.",
        "write_file",
        {"path": "bob.txt", "content": "call Bob"},
        "created bob.txt (8 characters, 8 bytes)",
        "Done: created bob.txt (8 characters, 8 bytes)",
    ),
    Demo(
        "Rename the user Ann to Eve in users.csv.",
        "edit_file",
        {"path": "users.csv", "old_text": "Ann", "new_text": "Eve"},
        "edited users.csv: replaced 1 occurrence at line 2",
        "Done: edited users.csv: replaced 1 occurrence at line 2",
    ),
    Demo(
        "Is there a file called setup.py here?",
        "list_dir",
        {},
        "app/\nREADME.md\nsetup.py",
        'It contains: "app/ README.md setup.py"',
    ),
    Demo(
        "What's inside the src directory?",
        "list_dir",
        {"path": "src"},
        "main.py\nutil.py",
        'It contains: "main.py util.py"',
    ),
    Demo(
        "Make a file named list.txt containing eggs and ham.",
        "write_file",
        {"path": "list.txt", "content": "eggs and ham"},
        "created list.txt (12 characters, 12 bytes)",
        "Done: created list.txt (12 characters, 12 bytes)",
    ),
    Demo(
        "Execute `uptime` and show me the result.",
        "run_command",
        {"command": "uptime"},
        "10:00:00 up 3 days, load average: 0.10\nexit code: 0",
        'It printed: "10:00:00 up 3 days, load average: 0.10"',
    ),
)
"""More phrasings that choose the tool of a first reply (``nearest_demo``), not in the fixed prefix:
the one chosen is shown right before the request. Written from the task suite's held-out requests
that chose the wrong tool (``bench/tasks``: ``MORE_TASKS``, ``SECOND_TASKS``, ``THIRD_TASKS``), in
other words and on other files."""


OPENERS = {
    "read_file": ("It says: ", True),
    "run_command": ("It printed: ", True),
    "list_dir": ("It contains: ", True),
    "grep": ("Found: ", True),
    "write_file": ("Done: ", False),
    "edit_file": ("Done: ", False),
}
"""How the answer to each built-in tool's result starts, and whether the quote is in double
quotes (as in the demos' answers). Other tools: ``OTHER_OPENER``, quoted."""

OTHER_OPENER = "It returned: "
"""How the answer to the result of a tool without demos starts (``@tool``, MCP tools)."""
