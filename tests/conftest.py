"""Shared fixtures: a real ``redis-server`` for the session-store and Celery tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.redis_server import redis_server


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """``redis://127.0.0.1:PORT/0`` of a server this test session started (stopped at its end).

    Skips, with the reason in the summary, only when ``redis-server`` is not installed (``.ci/run``
    installs the Debian package when it can).
    """
    with redis_server() as server:
        if server is None:
            pytest.skip("REDIS TESTS SKIPPED: redis-server is not installed (apt-get install redis-server)")
        yield server.url
