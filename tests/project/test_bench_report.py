"""``python -m bench --only X`` rewrites only the sections it ran (bench/__main__.py)."""

from __future__ import annotations

from bench.__main__ import merge_sections
from bench.common import Report, Row

EXISTING = """# Benchmarks

## Targets

3 of 4 targets met.

## Reading these numbers

Medians.

## Start-up

| measure | value | target | | note |
|---|---|---|---|---|
| import | 31 ms | <= 15 ms | MISSED |  |

## Task suite on the embedded local model

| measure | value | target | | note |
|---|---|---|---|---|
| tasks passed | 3 of 11 | at least 6 of 10 | MISSED |  |

Old note.

## Memory

| measure | value | target | | note |
|---|---|---|---|---|
| peak | 98 MB |  |  |  |
"""


def test_only_the_sections_that_ran_are_replaced_and_new_ones_appended() -> None:
    report = Report(False)
    tasks = report.section("tasks", "Task suite on the embedded local model")
    tasks.rows.append(Row("tasks passed", "11 of 11", "at least 6 of 10", True, ""))
    tasks.notes.append("New note.")
    report.section("extra", "A new section").rows.append(Row("x", "1", "", None, ""))

    merged = merge_sections(EXISTING, report, "python -m bench --only tasks,extra")

    assert "| import | 31 ms | <= 15 ms | MISSED |  |" in merged  # untouched sections stay
    assert merged.index("## Start-up") < merged.index("## Task suite") < merged.index("## Memory")
    assert "3 of 11" not in merged and "Old note." not in merged
    assert "| tasks passed | 11 of 11 | at least 6 of 10 | met |  |\n\nNew note.\n\n## Memory" in merged
    assert merged.rstrip().endswith("| x | 1 |  |  |  |")
    assert "by `python -m bench --only tasks,extra`" in merged.split("## Reading these numbers")[0]
    assert "1 of 1 targets met there." in merged
