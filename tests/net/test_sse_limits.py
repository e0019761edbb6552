"""The SSE reader's memory is bounded (issue 13 kind 3): one line, and one event's data, are capped.

A server that sends a line that never ends (or an event that never closes) gets a
``ProviderError`` (kind ``"sse_too_large"``) once the cap is passed, instead of growing the
client's memory without limit; ``stream_timeout`` is not needed for it. The peak memory of the
real case is measured by ``python -m bench`` (section ``streams``).
"""

from __future__ import annotations

import pytest
from providers_server import ProviderServer, Reply, request, run

from miniagent import ProviderError
from miniagent.net.sse import MAX_EVENT_BYTES, SSEDecoder
from miniagent.providers import HTTPSettings, OpenAIChatClient, RetryPolicy

pytestmark = pytest.mark.timeout(60)


def test_a_line_that_never_ends_is_refused_past_the_cap() -> None:
    decoder = SSEDecoder(max_size=1000)
    decoder.feed(b"data: " + b"x" * 900)
    with pytest.raises(ProviderError, match="one line longer than 1000 bytes") as info:
        decoder.feed(b"x" * 200)
    assert info.value.kind == "sse_too_large" and not info.value.retryable


def test_an_event_that_never_closes_is_refused_past_the_cap() -> None:
    decoder = SSEDecoder(max_size=1000)
    for _ in range(9):
        assert decoder.feed(b"data: " + b"y" * 100 + b"\n") == []
    with pytest.raises(ProviderError, match="the data of one event longer than 1000"):
        decoder.feed(b"data: " + b"y" * 100 + b"\n")


def test_lines_and_events_up_to_the_cap_pass() -> None:
    decoder = SSEDecoder(max_size=1000)
    events = decoder.feed(b"data: " + b"z" * 990 + b"\n\n")
    events += decoder.feed(b"data: " + b"z" * 400 + b"\ndata: " + b"z" * 400 + b"\n\n")
    assert [len(e.data) for e in events] == [990, 801]
    # many events, each under the cap, never add up
    for _ in range(50):
        assert len(decoder.feed(b"data: " + b"w" * 500 + b"\n\n")) == 1


def test_the_client_stops_a_line_that_never_ends() -> None:
    piece = b"x" * (1024 * 1024)
    chunks = [b"data: "] + [piece] * (MAX_EVENT_BYTES // len(piece) + 2)
    settings = HTTPSettings(retry=RetryPolicy(max_retries=0))
    with ProviderServer(Reply(chunks, hang=True)) as server:
        client = OpenAIChatClient("m", f"{server.url}/v1", settings=settings)
        with pytest.raises(ProviderError, match="OpenAI: the event stream sent one line longer") as info:
            run(client.stream(request()))
        client.close()
    assert info.value.kind == "sse_too_large"
