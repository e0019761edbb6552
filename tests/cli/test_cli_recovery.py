"""Getting out of trouble with the CLI (issue "The first hour" items 4 and 5): a session that a
refused prompt would poison can be repaired with ``miniagent session pop``, the error says so; an
HTML error page is one readable line; an explicit ``--approve read-only`` is not called
non-interactive."""

from __future__ import annotations

from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from miniagent import load_session
from tests.cli_helpers import FakeOpenAI, json_lines, model_args, run_cli, text_turn, tool_turn
from tests.providers_server import LoopbackServer

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder


def test_a_refused_first_request_names_the_way_out_and_session_pop_takes_it(
    tmp_path: Path, workspace: Path
) -> None:
    session = tmp_path / "s.jsonl"
    refused = ("status", 400, "the request exceeds the available context size")
    with FakeOpenAI([text_turn("Hello."), refused, text_turn("Fine again.")]) as server:
        args = ["run", "--session", str(session), *model_args(server, workspace)]
        assert run_cli([*args, "hi"], tmp_path).returncode == 0
        failed = run_cli([*args, "x" * 5000], tmp_path)
        assert failed.returncode == 1
        assert f"miniagent session pop {session}" in failed.stderr and "--context-max-chars" in failed.stderr
        assert failed.stderr.count("\n") == 1
        popped = run_cli(["session", "pop", str(session)], tmp_path)
        assert popped.returncode == 0, popped.stderr
        assert "removed 1 message" in popped.stderr
        assert [m.content for m in load_session(session)] == ["hi", "Hello."]
        again = run_cli([*args, "and now?"], tmp_path)
    assert again.returncode == 0 and again.stdout == "Fine again.\n"
    assert [m["content"] for m in server.requests[2]["messages"][1:]] == ["hi", "Hello.", "and now?"]


def test_session_pop_removes_the_whole_last_exchange_and_refuses_what_it_cannot(tmp_path: Path) -> None:
    session = tmp_path / "s.jsonl"
    session.write_text(
        '{"role":"user","content":"one"}\n{"role":"assistant","content":"1"}\n'
        '{"role":"user","content":"two"}\n{"role":"assistant","content":"2"}\n'
    )
    assert run_cli(["session", "pop", str(session)], tmp_path).returncode == 0
    assert [m.content for m in load_session(session)] == ["one", "1"]
    corrupt = tmp_path / "bad.jsonl"
    corrupt.write_bytes(b'{"role":"user","content":"one"}\nnot json\n{"role":"user","content":"x"}\n')
    before = corrupt.read_bytes()
    done = run_cli(["session", "pop", str(corrupt)], tmp_path)
    assert done.returncode == 1 and corrupt.read_bytes() == before
    assert done.stderr.startswith("miniagent: error: session ") and "Traceback" not in done.stderr
    missing = run_cli(["session", "pop", str(tmp_path / "none.jsonl")], tmp_path)
    assert missing.returncode == 1 and "no such session file" in missing.stderr


def test_an_html_error_page_is_one_readable_line(tmp_path: Path, workspace: Path) -> None:
    page = (
        b"<html>\r\n<head><title>404 Not Found</title><style>body { color: red }</style></head>\r\n"
        b"<body>\r\n<center><h1>404 Not Found</h1></center>\r\n"
        b"<hr><center>nginx/1.18.0</center>\r\n</body>\r\n</html>"
    )

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(404)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)

    with LoopbackServer(Handler) as server:
        args = [
            "run",
            "--provider",
            "openai",
            "--base-url",
            server.url + "/v1",
            "--workspace",
            str(workspace),
        ]
        done = run_cli([*args, "hi"], tmp_path)
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and "404 Not Found" in done.stderr
    assert "<" not in done.stderr and "color" not in done.stderr


@pytest.mark.parametrize(
    ("approve", "said"), [([], "non-interactive"), (["--approve", "read-only"], "were chosen")]
)
def test_the_read_only_refusal_says_why(
    tmp_path: Path, workspace: Path, approve: list[str], said: str
) -> None:
    turns = [tool_turn("write_file", {"path": "x", "content": "x"}), text_turn("ok")]
    with FakeOpenAI(turns) as server:
        done = run_cli(["run", "--json", *approve, *model_args(server, workspace), "write"], tmp_path)
    assert done.returncode == 0, done.stderr
    refusal = next(line for line in json_lines(done.stdout) if line.get("role") == "tool")["content"]
    assert said in refusal
