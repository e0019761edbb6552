"""``run_agent(session=store)``: an open ``SessionStore`` serves many runs; no ``fcntl`` needed
for an in-memory run."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from miniagent import (
    JSONLSession,
    Message,
    SessionError,
    SessionStore,
    ToolCall,
    load_session,
    run_agent,
)
from miniagent.testing import ScriptedClient


def _run(store: SessionStore, user: str, reply: str) -> list[Message]:
    result = run_agent(
        client=ScriptedClient([[reply]]), system="s", tools=[], user=user, max_turns=1, session=store
    )
    assert result.stop_reason == "complete"
    return result.messages


def test_jsonl_session_is_a_session_store(tmp_path: Path) -> None:
    assert isinstance(JSONLSession(tmp_path / "s.jsonl"), SessionStore)


def test_runs_on_one_open_store_continue_the_history_and_leave_it_open(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    with JSONLSession(path) as store:
        first = _run(store, "one", "1")
        # The store is still open and locked after the run: another writer is refused.
        with pytest.raises(SessionError, match="in use"), JSONLSession(path) as other:
            other.load()
        second = _run(store, "two", "2")
    expected = [Message("user", "one"), Message("assistant", "1")]
    expected += [Message("user", "two"), Message("assistant", "2")]
    assert first == expected[:2]
    assert second == expected
    assert load_session(path) == expected
    with JSONLSession(path) as again:  # closed by the with block, not by the runs
        assert again.load() == expected


def test_a_second_run_does_not_read_the_file_again(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    moved = tmp_path / "moved.jsonl"
    with JSONLSession(path) as store:
        _run(store, "one", "1")
        path.rename(moved)  # the path is gone; the open store still writes to its own file
        second = _run(store, "two", "2")
    assert len(second) == 4
    assert not path.exists()
    assert load_session(moved) == second


def test_a_store_resumes_a_file_written_before(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    call = ToolCall("c1", "missing", {})
    path.write_text('{"role":"user","content":"old"}\n')
    with JSONLSession(path) as store:
        store.append(Message("assistant", "", (call,)))
        messages = _run(store, "new", "done")
    assert [m.role for m in messages] == ["user", "assistant", "tool", "user", "assistant"]
    assert messages[2].is_error  # resume repair answered the call left without a result
    assert load_session(path) == messages


def test_session_and_session_path_together_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    with JSONLSession(path) as store:
        for extra in ({"session_path": path}, {"session_fsync": True}):
            with pytest.raises(ValueError, match="either session= or session_path="):
                run_agent(
                    client=ScriptedClient([["x"]]),
                    system="s",
                    tools=[],
                    user="u",
                    max_turns=1,
                    session=store,
                    **extra,  # type: ignore[arg-type]
                )
    assert not path.exists()


def test_a_path_passed_as_session_is_a_clear_type_error(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="session_path="):
        run_agent(
            client=ScriptedClient([["x"]]),
            system="s",
            tools=[],
            user="u",
            max_turns=1,
            session=tmp_path / "s.jsonl",  # type: ignore[arg-type]
        )


def test_without_fcntl_import_and_an_in_memory_run_work_and_a_file_session_is_refused(
    tmp_path: Path,
) -> None:
    """Windows has no ``fcntl``: simulated by blocking its import before miniagent loads."""
    code = textwrap.dedent(
        """
        import sys
        sys.modules["fcntl"] = None  # any `import fcntl` now raises ImportError
        import miniagent
        from miniagent import JSONLSession, SessionError, run_agent
        from miniagent.testing import ScriptedClient
        result = run_agent(client=ScriptedClient([["hi"]]), system="s", tools=[], user="u", max_turns=1)
        assert result.stop_reason == "complete", result
        try:
            with JSONLSession(sys.argv[1]) as store:
                store.append(miniagent.Message("user", "u"))
        except SessionError as error:
            print("refused:", error)
        """
    )
    path = tmp_path / "s.jsonl"
    command = [sys.executable, "-c", code, str(path)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert "refused:" in done.stdout and "fcntl" in done.stdout
    assert not path.exists()  # refused before anything was created
