"""A tuning set for the embedded model's built-in tools, written on 2026-12-02 (round 3).

Thirty requests of the kinds of ``HELD_OUT`` in other words, written to tune the demo chooser
and the argument grammar on: their first run is reported in ``HISTORY``, later runs are tuned
scores. The blind score is ``blind.BLIND_TASKS`` (written by someone who had not seen the code).
"""

from __future__ import annotations

from . import Task, _created, _line_count, _refused, _replaced, _says, _says_number, _word_count

DEV_TASKS: tuple[Task, ...] = (
    Task("dev cat", "cat config.ini for me", _says("Hilltop")),
    Task("dev view", "Can you display docs/maintenance.txt?", _says("March")),
    Task("dev contents", "What are the contents of data/readings.csv?", _says("06:00")),
    Task("dev what in", "What's in README.md?", _says("Weather Station")),
    Task("dev todo where", "Is there a TODO in station.py?", _says("missing sensors")),
    Task("dev todos", "Show me all TODOs.", _says("missing sensors")),
    Task("dev mention", "Which files mention Hilltop?", _says("config.ini")),
    Task("dev search word", "Search for the word battery.", _says("maintenance.txt")),
    Task("dev how many", "How many lines are there in data/readings.csv?", _says_number(7)),
    Task("dev line count", "Line count of README.md?", _says_number(_line_count("README.md"))),
    Task(
        "dev count please", "Please count the lines in config.ini.", _says_number(_line_count("config.ini"))
    ),
    Task("dev list here", "List the files in this project.", _says("station.py")),
    Task("dev what files", "What files are there?", _says("station.py")),
    Task("dev show folder", "Show me what's in the data directory.", _says("readings.csv")),
    Task("dev defined in", "Where's read_sensor defined?", _says("station.py")),
    Task("dev which defines", "Which file defines write_report?", _says("station.py")),
    Task("dev find function", "Find the function load_readings.", _says("station.py")),
    Task(
        "dev change to",
        "Change celsius to kelvin in config.ini.",
        _replaced("config.ini", "celsius", "kelvin"),
    ),
    Task(
        "dev swap",
        "In config.ini replace 15 with 60.",
        _replaced("config.ini", "15", "60"),
    ),
    Task(
        "dev update",
        "Update config.ini: replace Hilltop by Lakeside.",
        _replaced("config.ini", "Hilltop", "Lakeside"),
    ),
    Task(
        "dev write to",
        "Write the words see you soon to bye.txt.",
        _created("bye.txt", "see you soon"),
    ),
    Task(
        "dev new file",
        "Create a new file called plan.txt containing water the plants.",
        _created("plan.txt", "water the plants"),
    ),
    Task(
        "dev put",
        "Put the text lunch at one in lunch.txt.",
        _created("lunch.txt", "lunch at one"),
    ),
    Task("dev run pwd", "Run `pwd` and show me.", _says("/")),
    Task("dev execute", "Please execute `wc -l config.ini`.", _says_number(_line_count("config.ini"))),
    Task("dev words", "Run `wc -w station.py`.", _says_number(_word_count("station.py"))),
    Task("dev about", "What is README.md about?", _says("temperature", "sensor", "weather")),
    Task(
        "dev when",
        "When should the battery be replaced, according to docs/maintenance.txt?",
        _says("October"),
    ),
    Task("dev weather", "Will it rain tomorrow?", _refused),
    Task("dev joke", "Tell me a joke.", _refused),
)
"""Thirty tuning requests (module docstring)."""
