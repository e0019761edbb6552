"""A pending call runs at most once and no decision is lost when the process is killed with
SIGKILL at any step between the decision and the execution, on every store (``bench/defer.py``:
a forked child approves one call, denies another and goes on, and kills itself with SIGKILL
before or after each store append, before or after the tool's effect; recovery then goes on).

The random-delay kills (hundreds per store) are in ``tests/stress/test_stress_defer.py`` and in
``python -m bench --only defer``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.defer import Kit, Tally, every_step, kits

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(params=["JSONLSession", "SQLiteSession", "RedisSession"])
def kit(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Kit]:
    url = request.getfixturevalue("redis_url") if request.param == "RedisSession" else None
    yield next(k for k in kits(str(tmp_path), url) if k.name == request.param)


def test_a_kill_at_every_step_runs_the_approved_call_at_most_once_and_loses_no_decision(
    kit: Kit, tmp_path: Path
) -> None:
    tally: Tally = every_step(kit, str(tmp_path))
    print(f"\n[defer kill -9, {kit.name}, every step] {tally.line()}")
    assert tally.kills >= 14  # every append (before, after), the tool's effect, the acknowledgements
    assert tally.double_executions == 0 and tally.lost_decisions == 0, tally.problems
    assert tally.problems == []
    assert tally.may_have_run >= 2  # killed between the started note and the result: reported so
