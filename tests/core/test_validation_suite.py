"""The official JSON-Schema-Test-Suite (draft 2020-12) against ``check_value``.

Every case of the files under ``tests/json_schema_suite/`` (see its README) is one parametrized
test. A group whose schema uses a keyword ``check_value`` does not support is skipped with that
keyword named (``UNSUPPORTED``); nothing else is left out, and a test below keeps the number of
cases that run from shrinking unnoticed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from miniagent.validation import check_value

SUITE = Path(__file__).parents[1] / "json_schema_suite" / "draft2020-12"
DIALECT = "https://json-schema.org/draft/2020-12/schema"

UNSUPPORTED = {
    "$anchor": "plain-name fragments ($ref: '#name') are not resolved",
    "$dynamicRef": "dynamic references are not resolved",
    "$dynamicAnchor": "dynamic references are not resolved",
    "$id below the root": "base URI changes inside a document are not followed",
    "remote $ref": "only references inside the schema itself (#, #/json/pointer) are followed",
    "$schema of another dialect": "only the 2020-12 vocabulary is known",
    "dependencies": "the draft 4-7 keyword (2020-12 split it into dependentRequired/dependentSchemas)",
}


def _walk(node: Any, depth: int = 0) -> Iterator[tuple[str, Any, int]]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield key, value, depth
            yield from _walk(value, depth + 1)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value, depth + 1)


def unsupported_keywords(schema: Any) -> list[str]:
    """The ``UNSUPPORTED`` names ``schema`` uses (the keys of that table)."""
    found = set()
    for key, value, depth in _walk(schema):
        if key in ("$anchor", "$dynamicRef", "$dynamicAnchor", "dependencies"):
            found.add(key)
        elif key == "$id" and depth > 0:
            found.add("$id below the root")
        elif key == "$ref" and isinstance(value, str) and not value.startswith("#"):
            found.add("remote $ref")
        elif key == "$schema" and value != DIALECT:
            found.add("$schema of another dialect")
    return sorted(found)


def _cases() -> Iterator[Any]:
    for path in sorted(SUITE.rglob("*.json")):
        name = path.relative_to(SUITE).as_posix()
        for group in json.loads(path.read_text(encoding="utf-8")):
            missing = unsupported_keywords(group["schema"])
            marks = [pytest.mark.skip(reason=f"unsupported: {', '.join(missing)}")] if missing else []
            for case in group["tests"]:
                yield pytest.param(
                    group["schema"],
                    case["data"],
                    case["valid"],
                    id=f"{name}: {group['description']}: {case['description']}",
                    marks=marks,
                )


CASES = list(_cases())


@pytest.mark.parametrize(("schema", "data", "valid"), CASES)
def test_suite_case(schema: Any, data: Any, valid: bool) -> None:
    problem = check_value(schema, data)
    assert (problem is None) == valid, problem


def test_the_suite_runs_nearly_all_its_cases() -> None:
    skipped = [case for case in CASES if case.marks]
    assert len(CASES) > 1300
    assert len(skipped) < 60, [case.id for case in skipped]
    reasons = {mark.kwargs["reason"] for case in skipped for mark in case.marks}
    named = {part for reason in reasons for part in reason.removeprefix("unsupported: ").split(", ")}
    assert named <= set(UNSUPPORTED)
