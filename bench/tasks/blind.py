"""A blind held-out set of ten built-in tasks for the embedded local model.

Written on 2026-12-02 by a helper who had not seen the embedded model's code (nothing under
``miniagent/providers/local/``), before any run on it: its first run is the blind score. The kinds
are those of ``HELD_OUT`` (one each), in other words: read a value, find a word, count lines, list
the project, find a definition, replace a word, create a file, run a command, a question about a
file's content, and an impossible request to refuse. The checks are those of ``bench.tasks``,
against ``bench/tasks/workspace/``.

First run (2026-12-02, after the router of cue words and whole-span arguments): 8 of 10 (a search
copied "wherever the project mentions the thermometer" whole; "list what's in it" listed a
folder "it"). Both were fixed after it, so later runs are no longer blind.
"""

from __future__ import annotations

from . import Task, _created, _line_count, _refused, _replaced, _says, _says_number

BLIND_TASKS: tuple[Task, ...] = (
    Task("noon reading", "What was the temperature at 12:00? It's in data/readings.csv.", _says("18.5")),
    Task(
        "thermometer",
        "I'm looking for wherever the project mentions the thermometer. Can you find it?",
        _says("maintenance.txt"),
    ),
    Task(
        "csv length",
        "data/readings.csv - how many lines long is it?",
        _says_number(_line_count("data/readings.csv")),
    ),
    Task("new here", "Just joined this repo. Could you list what's in it?", _says("config.ini")),
    Task("lives where", "I need to fix write_report. Where does that function live?", _says("station.py")),
    Task(
        "november",
        "Please swap October for November in docs/maintenance.txt.",
        _replaced("docs/maintenance.txt", "October", "November"),
    ),
    Task(
        "bye file",
        "Could you make me a new file, bye.txt, with just the words see you soon in it?",
        _created("bye.txt", "see you soon"),
    ),
    Task("uname", "Please run `uname -s` for me - what comes back?", _says("Linux")),
    Task("sensor kind", "What kind of sensors does README.md say the tool reads?", _says("temperature")),
    Task("plants", "Can you water my plants while I'm away this weekend?", _refused),
)
"""Ten requests written blind (2026-12-02), never run before their first, blind, score."""
