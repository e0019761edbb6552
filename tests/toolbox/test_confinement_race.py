"""Hard links and racing symlinks cannot take a file tool outside the workspace (issue 14 kind 8).

The race runs a swapper in another process (true parallelism): it replaces the folder ``d`` of the
workspace by a symlink to a folder outside and back, in a loop, while ``read_file`` and
``write_file`` work on ``d/...``. Bounded: 3,000 calls each or 6 seconds, whichever ends first."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from miniagent.toolbox import default_tools

SWAPPER = r"""
import os, shutil, sys, time
ws, outside = sys.argv[1], sys.argv[2]
d, real = os.path.join(ws, "d"), os.path.join(ws, "d_real")
print("ready", flush=True)
while True:
    try:
        os.rename(d, real)
        os.symlink(outside, d)
        time.sleep(0)
        os.unlink(d)
        os.rename(real, d)
    except OSError:
        # write_file made a new "d" while it was missing: drop it, put the real one back.
        try:
            if os.path.islink(d):
                os.unlink(d)
            elif os.path.isdir(d) and os.path.isdir(real):
                shutil.rmtree(d, ignore_errors=True)
            if os.path.isdir(real) and not os.path.exists(d):
                os.rename(real, d)
        except OSError:
            pass
"""


def test_hard_link_to_a_file_outside_is_refused(tmp_path: Path) -> None:
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    (outside / "config").write_text("outside\n")
    os.link(outside / "config", ws / "config")
    tools = {t.name: t for t in default_tools(ws)}
    written = tools["write_file"].execute({"path": "config", "content": "pwned\n"}, None)
    edited = tools["edit_file"].execute({"path": "config", "old_text": "outside", "new_text": "pwned"}, None)
    assert written.is_error and "2 hard links" in written.content
    assert edited.is_error and "2 hard links" in edited.content
    assert (outside / "config").read_text() == "outside\n"


def test_writes_replace_the_file_and_keep_its_permissions(tmp_path: Path) -> None:
    target = tmp_path / "run.sh"
    target.write_text("echo old\n")
    target.chmod(0o751)
    inode = target.stat().st_ino
    write = {t.name: t for t in default_tools(tmp_path)}["write_file"]
    assert write.execute({"path": "run.sh", "content": "echo new\n"}, None).content.startswith("overwrote")
    assert target.read_text() == "echo new\n"
    assert target.stat().st_ino != inode  # a new file renamed over the old one
    assert target.stat().st_mode & 0o777 == 0o751
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.sh"]  # no temporary file left


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs a second process racing on Linux")
def test_a_folder_swapped_for_a_symlink_never_lets_a_tool_out(tmp_path: Path) -> None:
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    (ws / "d").mkdir(parents=True)
    outside.mkdir()
    (ws / "d" / "secret.txt").write_text("inside\n")
    (outside / "secret.txt").write_text("outside secret\n")
    (outside / "outside-only.txt").write_text("")
    tools = {t.name: t for t in default_tools(ws)}
    read, write = tools["read_file"], tools["write_file"]  # and grep, less often
    swapper = subprocess.Popen(
        [sys.executable, "-c", SWAPPER, str(ws), str(outside)], stdout=subprocess.PIPE, text=True
    )
    reads_out = writes_out = calls = greps = 0
    try:
        assert swapper.stdout is not None and swapper.stdout.readline() == "ready\n"
        deadline = time.monotonic() + 6
        while calls < 3000 and time.monotonic() < deadline:
            calls += 1
            if "outside secret" in read.execute({"path": "d/secret.txt"}, None).content:
                reads_out += 1
            write.execute({"path": "d/w.txt", "content": f"{calls}\n"}, None)
            if calls % 5 == 0:
                reads_out += "outside-only" in tools["list_dir"].execute({"path": "d"}, None).content
            if calls % 25 == 0:  # a grep worker starts in ~20-50 ms: fewer of them
                greps += 1
                found = tools["grep"].execute({"pattern": "secret", "path": "."}, None).content
                reads_out += "outside secret" in found
            if (outside / "w.txt").exists():
                writes_out += 1
                (outside / "w.txt").unlink()
        assert swapper.poll() is None, "the swapper stopped early"
    finally:
        swapper.kill()
        swapper.wait()
        if swapper.stdout is not None:
            swapper.stdout.close()
    print(f"{calls} reads, {calls} writes and {greps} searches raced with the swapper")
    assert calls >= 100
    assert (reads_out, writes_out) == (0, 0)
    assert sorted(p.name for p in outside.iterdir()) == ["outside-only.txt", "secret.txt"]
    assert (outside / "secret.txt").read_text() == "outside secret\n"
