"""A failing disk: appends that raise, with nothing lost and a clean resume.

- ``EFBIG``: a child (``disk_child.py``) runs with ``RLIMIT_FSIZE`` at a seeded random size and
  ``SIGXFSZ`` ignored, so one session line is cut by the limit and the next write fails. The
  original ``OSError`` (errno ``EFBIG``) must reach the caller of ``run_agent``; the file keeps only
  whole lines (the partial line is rolled back); every message reported committed is in it; a later
  run without the limit resumes with every call answered. 12 limits in CI, 60 with
  ``MINIAGENT_STRESS_FULL=1``.
- ``ENOSPC``: the same against a tiny tmpfs, when this machine lets the test mount one (root with
  ``CAP_SYS_ADMIN``; skipped otherwise), and ``append_session`` refusing the device ``/dev/full``.
- A read-only session file or folder: the original ``PermissionError``, nothing changed (as root,
  which ignores file permissions, the run happens in a child that drops to uid 65534).
"""

from __future__ import annotations

import errno
import json
import os
import random
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from stress_support import HERE, PYTHON, digest, jsonl_lines_ok, scale, unanswered_calls

from miniagent import Message, SessionError, append_session, load_session, run_agent
from miniagent.testing import ScriptedClient

CHILD = HERE / "disk_child.py"


def run_child(session: Path, limit: int, seed: int, prefix: str) -> tuple[int, list[str], dict[str, object]]:
    proc = subprocess.run(
        [PYTHON, str(CHILD), str(session), str(limit), str(seed), prefix],
        capture_output=True,
        text=True,
        cwd=HERE,
        timeout=120,
    )
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert lines, proc.stderr
    commits = [line["commit"] for line in lines if "commit" in line]
    return proc.returncode, commits, lines[-1]


def check_whole_lines_and_commits(session: Path, before: list[Message], commits: list[str]) -> list[Message]:
    assert jsonl_lines_ok(session), "the file must hold whole lines only"
    messages = load_session(session)
    assert messages[: len(before)] == before
    assert [digest(m) for m in messages[len(before) :]] == commits, "a reported commit is missing"
    return messages


def resume(session: Path) -> None:
    client = ScriptedClient([["resumed"]])
    result = run_agent(client=client, system="s", tools=[], user="again", max_turns=1, session_path=session)
    assert result.stop_reason == "complete"
    assert unanswered_calls(client.requests[0].messages) == []
    assert jsonl_lines_ok(session)
    assert load_session(session) == result.messages


def test_file_size_limit_efbig(tmp_path: Path) -> None:
    rng = random.Random(7)
    trials = scale(12, 60)
    for number in range(trials):
        session = tmp_path / f"s{number}.jsonl"
        before: list[Message] = []
        if number % 3 == 2:  # an existing session that the limited run continues
            code, commits, last = run_child(session, 0, number, "pre")
            assert code == 0 and last == {"stop": "complete"}
            before = load_session(session)
        size = session.stat().st_size if session.exists() else 0
        limit = size + rng.choice((10, rng.randint(100, 5_000), rng.randint(5_000, 300_000)))
        code, commits, last = run_child(session, limit, number, "lim")
        assert code == 3, last
        assert last["error"] == "OSError" and last["errno"] == errno.EFBIG, last
        assert session.stat().st_size <= limit
        check_whole_lines_and_commits(session, before, commits)
        resume(session)
        code, _, last = run_child(session, 0, number, "after")  # a later run without the limit
        assert code == 0 and last == {"stop": "complete"}, last
        assert unanswered_calls(load_session(session)) == []
    print(f"\n[disk] {trials} EFBIG trials: the original OSError every time, whole lines only, resumed")


@pytest.fixture
def tiny_tmpfs(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "tiny"
    mount.mkdir()
    if not shutil.which("mount") or os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)], capture_output=True, check=False
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def test_full_tmpfs_enospc(tiny_tmpfs: Path) -> None:
    session = tiny_tmpfs / "s.jsonl"
    (tiny_tmpfs / "filler").write_bytes(b"x" * rng_size())  # leave a random amount of room
    code, commits, last = run_child(session, 0, 1, "full")
    assert code == 3, last
    assert last["errno"] == errno.ENOSPC, last
    check_whole_lines_and_commits(session, [], commits)
    (tiny_tmpfs / "filler").unlink()  # space again: the next run resumes
    resume(session)
    print(f"\n[disk] ENOSPC on a 256 KB tmpfs after {len(commits)} commits; resumed cleanly")


def rng_size() -> int:
    return random.Random(3).randint(20_000, 120_000)


def test_dev_full_is_refused_as_no_regular_file() -> None:
    """``/dev/full`` is a device: refused before any write (ENOSPC itself: the tmpfs test above)."""
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    with pytest.raises(SessionError, match="not a regular file"):
        append_session("/dev/full", Message("user", "hello"))


READ_ONLY_CHILD = """
import json, os, sys
from miniagent import run_agent
from miniagent.testing import ScriptedClient
if os.geteuid() == 0:  # root ignores file permissions: drop to nobody (after the imports)
    os.setgroups([])
    os.setgid(65534)
    os.setuid(65534)
try:
    client = ScriptedClient([["x"]])
    run_agent(client=client, system="", tools=[], user="u", max_turns=1, session_path=sys.argv[1])
except Exception as error:
    print(json.dumps({"error": type(error).__name__, "errno": getattr(error, "errno", None)}))
else:
    print(json.dumps({"error": None}))
"""


@pytest.mark.parametrize("what", ["read-only-file", "read-only-folder"])
def test_read_only_session(what: str) -> None:
    """A session the process may not write: the original ``PermissionError`` reaches the caller
    and nothing changes. As root (which ignores permissions) the run happens in a child process
    that drops to uid/gid 65534 once its imports are done."""
    folder = Path(tempfile.mkdtemp(prefix="miniagent-ro-"))
    try:
        folder.chmod(0o777)
        session = folder / "s.jsonl"
        if what == "read-only-file":
            append_session(session, Message("user", "hi"))
            session.chmod(0o444)
        else:
            session = folder / "sub" / "s.jsonl"
            folder.chmod(0o555)
        before = session.read_bytes() if session.exists() else None
        done = subprocess.run(
            [PYTHON, "-c", READ_ONLY_CHILD, str(session)],
            capture_output=True,
            text=True,
            timeout=60,
            cwd="/",
        )
        result = json.loads(done.stdout.strip().splitlines()[-1])
        assert result == {"error": "PermissionError", "errno": errno.EACCES}, done.stderr
        assert (session.read_bytes() if session.exists() else None) == before
        if before is not None:
            assert load_session(session) == [Message("user", "hi")]
    finally:
        folder.chmod(0o755)
        shutil.rmtree(folder)
