"""Agent runs as Celery tasks: throughput of 200 short runs on 1 worker against 2 workers.

Each worker is a real ``celery worker`` (prefork, 2 processes) started as a subprocess against a
real ``redis-server`` (broker, results, ``RedisSession``s) and a loopback fake model that answers
every request after 50 ms. A run is one tool call and a final answer (two requests). The figure
is runs per second from the first submit to the last result; target: 2 workers >= 1.8x one.

Needs ``redis-server`` on PATH and the ``celery`` extra; skipped otherwise.
"""

from __future__ import annotations

import os
import time
import uuid

from .common import Report, Row, fmt_rate, fmt_x

RUNS = 200
DELAY = 0.05
TARGET = 1.8


def _throughput(app: object, task: object, spec: dict[str, object], runs: int) -> float:
    start = time.perf_counter()
    results = [task.delay(f"bench-{uuid.uuid4().hex}", "go", spec) for _ in range(runs)]  # type: ignore[attr-defined]
    for result in results:
        assert result.get(timeout=300)["stop_reason"] == "complete"
    return runs / (time.perf_counter() - start)


def run(report: Report, quick: bool) -> None:
    try:
        import celery  # noqa: F401
        import redis  # noqa: F401
    except ModuleNotFoundError:
        report.skip("celery_runs", "the celery extra is not installed")
        return
    from tests.redis_server import redis_server

    with redis_server() as server:
        if server is None:
            report.skip("celery_runs", "redis-server is not installed")
            return
        os.environ["MINIAGENT_TEST_REDIS"] = server.url
        from miniagent.celery import AgentSpec
        from tests.celery_kit import app as app_module
        from tests.celery_kit.model import StepModel
        from tests.celery_kit.workers import Worker, wait_ready

        section = report.section("celery_runs", "Runs as Celery tasks")
        runs = 60 if quick else RUNS
        with StepModel(steps=1, delay=DELAY) as model:
            spec = AgentSpec(
                provider="openai",
                model="fake",
                base_url=model.base_url,
                max_turns=3,
                tools="tests.celery_kit.tools:make_tools",
            ).to_dict()
            rates = {}
            for count in (1, 2):
                workers = [Worker(f"bench{count}-{i}", server.url) for i in range(count)]
                try:
                    wait_ready(app_module.app, workers)
                    _throughput(app_module.app, app_module.run, spec, 8)  # warm-up: imports, connections
                    rates[count] = _throughput(app_module.app, app_module.run, spec, runs)
                finally:
                    for worker in workers:
                        worker.stop()
                section.rows.append(
                    Row(
                        f"{runs} runs, {count} worker(s) x 2 processes, model 50 ms",
                        fmt_rate(rates[count], "runs/s"),
                    )
                )
        ratio = rates[2] / rates[1]
        section.rows.append(
            Row(
                "2 workers / 1 worker",
                fmt_x(ratio),
                f">= {TARGET}x",
                ratio >= TARGET,
                "same machine, same run",
            )
        )
