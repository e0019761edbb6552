"""Shared fixtures: a real ``redis-server`` for the session-store and Celery tests; Ctrl-C as
the signal tests need it."""

from __future__ import annotations

import signal
from collections.abc import Iterator

import pytest

from tests.redis_server import redis_server

# A suite started in the background by a shell without job control (``pytest &`` in a script)
# inherits SIGINT ignored, and so would every CLI child it starts: Python keeps an ignored SIGINT
# ignored, so the Ctrl-C tests' children would never see their signal. A Python handler is reset
# to the default on exec, so the children get Ctrl-C as a user's terminal gives it.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


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
