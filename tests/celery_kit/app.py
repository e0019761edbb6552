"""The Celery app the test workers load (``celery -A tests.celery_kit.app worker``).

Broker, result backend and sessions: the Redis of ``MINIAGENT_TEST_REDIS``. Unacked messages of a
dead worker come back after ``visibility_timeout`` (checked every second); results are pickled, so
library errors reach the caller whole.
"""

from __future__ import annotations

import os

from celery import Celery

from miniagent.celery import agent_task
from tests.celery_kit.tracer import FileTracer

URL = os.environ.get("MINIAGENT_TEST_REDIS", "redis://127.0.0.1:6379/0")
LEASE_SECONDS = 2.0

app = Celery("miniagent_tests", broker=URL, backend=URL)
app.conf.update(
    broker_transport_options={
        "visibility_timeout": 8,
        "unacked_restore_interval": 1,
        "unacked_restore_throttle": 1,
    },
    broker_connection_retry_on_startup=True,
    worker_prefetch_multiplier=1,
    task_serializer="json",
    result_serializer="pickle",
    accept_content=["json"],  # tasks arrive as JSON; only results are pickled
    result_accept_content=["json", "pickle"],
    result_expires=600,
    worker_hijack_root_logger=False,
)
run = agent_task(app, redis_url=URL, lease_seconds=LEASE_SECONDS)
traced = agent_task(
    app, redis_url=URL, lease_seconds=LEASE_SECONDS, name="miniagent.traced", tracer=FileTracer()
)
