"""Approval that waits under random ``kill -9`` (``bench/defer.py``): a child that approves a
pending call, denies another and goes on is killed with SIGKILL after a random delay, then
recovery goes on; on every store, and through the CLI. Counts: 70 kills per store in CI, 200 with
``MINIAGENT_STRESS_FULL=1``; CLI: 3 kills, 10 in full. ``pytest -s`` prints the tallies: double
executions and lost decisions must be 0."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from stress_support import scale

from bench.defer import Tally, cli_trials, kits, random_kills

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]


@pytest.mark.parametrize("store", ["JSONLSession", "SQLiteSession", "RedisSession"])
def test_random_kills_never_run_a_call_twice_nor_lose_a_decision(
    store: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = request.getfixturevalue("redis_url") if store == "RedisSession" else None
    kit = next(k for k in kits(str(tmp_path), url) if k.name == store)
    tally: Tally = random_kills(kit, str(tmp_path), scale(70, 200), random.Random(store))
    print(f"\n[defer kill -9, {store}, random delays] {tally.line()} reached={dict(tally.reached)}")
    assert tally.double_executions == 0 and tally.lost_decisions == 0, tally.problems
    assert tally.problems == []


def test_random_kills_of_the_cli_never_run_a_call_twice_nor_lose_a_decision(tmp_path: Path) -> None:
    tally = cli_trials(scale(3, 10), random.Random(7), str(tmp_path))
    print(f"\n[defer kill -9, CLI] {tally.line()}")
    assert tally.double_executions == 0 and tally.lost_decisions == 0, tally.problems
    assert tally.problems == []
