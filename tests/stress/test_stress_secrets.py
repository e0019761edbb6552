"""Secrets: an API key from the environment never reaches a session, a log line, an error text
or the CLI's ``--json`` output, also when the server echoes the request headers back.

The "remote" server is ``http://api.example.test`` reached through ``HTTP_PROXY`` pointing at a
raw server on 127.0.0.1, so the clients treat it as remote and really send the environment key
(a loopback base URL never gets it), while no traffic leaves the machine. The server answers with
error bodies that echo the ``Authorization`` / ``x-api-key`` header: HTTP 401, HTTP 500 (after
retries), an in-stream error event, a broken ``data:`` line, and a long message in which the key
straddles the error-text truncation point. Checked: the exception (text, repr, args, chained
causes), every log record at DEBUG, the session file, and the CLI's stdout/stderr with ``--json
--debug``. A leak is any 8-character piece of the key's random part.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from raw_server import RawServer, Request, anthropic_start, head, openai_delta, openai_text, reply

from miniagent import ProviderError, run_agent
from miniagent.providers import AnthropicClient, HTTPSettings, OpenAIChatClient, RetryPolicy

RANDOM_PART = "7f3a9c1e5b2d4f6a8c0e91d7"
KEY = f"sk-stress-{RANDOM_PART}"
REMOTE = "http://api.example.test"


def leaks(text: str) -> list[str]:
    return [RANDOM_PART[i : i + 8] for i in range(len(RANDOM_PART) - 7) if RANDOM_PART[i : i + 8] in text]


def echo_headers(request: Request) -> str:
    return json.dumps({k: v for k, v in request.headers.items()})


def error_echo(status: int) -> Callable[[socket.socket, Request, threading.Event], None]:
    def handler(conn: socket.socket, request: Request, release: threading.Event) -> None:
        body = json.dumps(
            {
                "error": {
                    "message": f"bad request; you sent {echo_headers(request)}",
                    "type": "invalid_request_error",
                }
            }
        )
        reply(body.encode(), status, "application/json")(conn, request, release)

    return handler


def stream_error_echo(conn: socket.socket, request: Request, release: threading.Event) -> None:
    error = {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": f"echo {echo_headers(request)}"},
    }
    body = b"event: error\ndata: " + json.dumps(error).encode() + b"\n\n"
    conn.sendall(head() + body)


def broken_data_echo(conn: socket.socket, request: Request, release: threading.Event) -> None:
    key = request.headers.get("x-api-key") or request.headers.get("authorization", "")
    conn.sendall(head() + f'data: {{"debug": "key {key}" broken\n\n'.encode())


def straddling_echo(pad: int) -> Callable[[socket.socket, Request, threading.Event], None]:
    """An error message in which the key crosses the 500-character cut of error texts."""

    def handler(conn: socket.socket, request: Request, release: threading.Event) -> None:
        key = request.headers.get("x-api-key") or request.headers.get("authorization", "").removeprefix(
            "Bearer "
        )
        body = json.dumps({"error": {"message": "x" * pad + f" the key {key} is not valid"}})
        reply(body.encode(), 400, "application/json")(conn, request, release)

    return handler


SCENARIOS = {
    "http-401": error_echo(401),
    "http-500-retried": error_echo(500),
    "stream-error-event": stream_error_echo,
    "broken-data-line": broken_data_echo,
    "cut-at-the-limit": straddling_echo(471),
    "cut-near-the-limit": straddling_echo(466),
}


@pytest.fixture
def proxy_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[RawServer], None]]:
    def use(server: RawServer) -> None:
        for name in ("HTTP_PROXY", "http_proxy"):
            monkeypatch.setenv(name, server.url)
        for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)

    yield use


def chain(error: BaseException | None) -> Iterator[BaseException]:
    """The exceptions a traceback shows: causes, and contexts unless suppressed (``from None``)."""
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        yield error
        error = error.__cause__ or (None if error.__suppress_context__ else error.__context__)


@pytest.mark.parametrize("scenario", list(SCENARIOS))
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_key_never_leaks_from_the_library(
    provider: str,
    scenario: str,
    tmp_path: Path,
    proxy_env: Callable[[RawServer], None],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    with RawServer(SCENARIOS[scenario]) as server:
        proxy_env(server)
        retry = RetryPolicy(max_retries=2, backoff_base=0.001, backoff_max=0.002)
        client = (
            OpenAIChatClient("m", base_url=REMOTE + "/v1", settings=HTTPSettings(retry=retry))
            if provider == "openai"
            else AnthropicClient("m", base_url=REMOTE, settings=HTTPSettings(retry=retry))
        )
        assert not leaks(repr(client))
        session = tmp_path / "s.jsonl"
        with pytest.raises(ProviderError) as raised:
            run_agent(client=client, system="s", tools=[], user="hi", max_turns=1, session_path=session)
        sent = server.requests[0].headers
        assert KEY in (sent.get("authorization", "") + sent.get("x-api-key", ""))  # the key was really sent
    texts = []
    for error in chain(raised.value):
        texts += [str(error), repr(error), repr(error.args), repr(vars(error))]
    for record in caplog.records:
        texts.append(record.getMessage())
    texts.append(caplog.text)
    texts.append(session.read_text())
    found = leaks("\n".join(texts))
    where = [t[:300] for t in texts if leaks(t)]
    assert not found, f"{scenario}: the key leaked ({found}) in {where}"


@pytest.mark.parametrize("scenario", ["http-401", "stream-error-event", "ok"])
@pytest.mark.parametrize("route", ["OPENAI_API_KEY-via-proxy", "MINIAGENT_API_KEY-direct"])
def test_key_never_leaks_from_the_cli(scenario: str, route: str, tmp_path: Path) -> None:
    def ok(conn: socket.socket, request: Request, release: threading.Event) -> None:
        conn.sendall(head() + openai_delta("fine ") + openai_text("answer"))

    handler = ok if scenario == "ok" else SCENARIOS[scenario]
    with RawServer(handler) as server:
        env = {k: v for k, v in os.environ.items() if not k.lower().endswith("proxy") and "API_KEY" not in k}
        env.update(HOME=str(tmp_path), XDG_CACHE_HOME=str(tmp_path / "cache"))
        if route.startswith("OPENAI"):  # the environment key, to a "remote" server behind a proxy
            env.update(HTTP_PROXY=server.url, http_proxy=server.url, OPENAI_API_KEY=KEY)
            base_url = REMOTE + "/v1"
        else:  # MINIAGENT_API_KEY is sent to any server, this loopback one included
            env.update(MINIAGENT_API_KEY=KEY)
            base_url = server.url + "/v1"
        session = tmp_path / "s.jsonl"
        workspace = tmp_path / "ws"
        workspace.mkdir()
        command = [
            sys.executable, "-m", "miniagent.cli", "run", "hi", "--provider", "openai",
            "--base-url", base_url, "--model", "m", "--session", str(session),
            "--workspace", str(workspace), "--json", "--debug",
        ]  # fmt: skip
        done = subprocess.run(
            command, env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL
        )
        assert server.requests, done.stderr
        assert KEY in server.requests[0].headers.get("authorization", "")
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert lines[-1]["exit_code"] == (0 if scenario == "ok" else 1), done.stderr
    found = leaks(done.stdout + done.stderr + (session.read_text() if session.exists() else ""))
    assert not found, f"the key leaked: {found}\n{done.stdout}\n{done.stderr}"


def test_anthropic_start_helper_is_valid_json() -> None:  # guards the fixtures used above
    for line in anthropic_start().decode().splitlines():
        if line.startswith("data: "):
            json.loads(line[6:])
