"""The ``workspace`` sandbox (``miniagent.process.sandbox``) with real commands on this kernel:
escape probes that must all fail, what stays allowed, and ``SandboxUnavailable`` where the kernel
cannot confine (never a silent fallback).

Every probe runs ``/bin/sh -c`` through ``run_command`` with ``sandbox="workspace"`` and a fake
``HOME`` under ``tmp_path`` (its ``.bashrc`` and ``.ssh/id_rsa`` are the targets), then checks the
effect on disk, on a listening socket or in ``/proc`` -- not only the command's exit status.
"""

from __future__ import annotations

import os
import pickle
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from miniagent import SandboxUnavailable, Tool
from miniagent.process import _confine, sandbox
from miniagent.process.children import contained
from miniagent.process.sandbox import Sandbox, hidden_paths, landlock_abi
from miniagent.toolbox import default_tools

pytestmark = pytest.mark.skipif(landlock_abi() < 4, reason="needs Landlock ABI 4 or later")

SECRET = "-----BEGIN OPENSSH PRIVATE KEY----- probe"


class Box:
    """A workspace, a fake home with secrets, and a sandboxed ``run_command``."""

    def __init__(self, tmp_path: Path) -> None:
        self.workspace = tmp_path / "ws"
        self.home = tmp_path / "home"
        self.outside = tmp_path / "outside.txt"
        self.workspace.mkdir()
        (self.home / ".ssh").mkdir(parents=True)
        (self.home / ".ssh" / "id_rsa").write_text(SECRET)
        self.bashrc = self.home / ".bashrc"
        self.bashrc.write_text("# rc\n")
        self.outside.write_text("outside\n")
        env = {"HOME": str(self.home), "PATH": os.environ["PATH"], "LC_ALL": "C"}
        tools = default_tools(self.workspace, sandbox="workspace", command_env=env)
        self.tool: Tool = next(t for t in tools if t.name == "run_command")
        self.grep: Tool = next(t for t in tools if t.name == "grep")

    def run(self, command: str) -> str:
        return self.tool.execute({"command": command, "timeout": 20}, None).content

    def untouched(self) -> bool:
        return self.bashrc.read_text() == "# rc\n" and self.outside.read_text() == "outside\n"


@pytest.fixture
def box(tmp_path: Path) -> Box:
    return Box(tmp_path)


# --- escape probes: 0 succeed -----------------------------------------------------------------------


def test_writing_to_bashrc_fails(box: Box) -> None:
    output = box.run("echo pwned >> ~/.bashrc; printf pwned > $HOME/.bashrc; cp /dev/null ~/.bashrc")
    assert box.untouched(), output
    assert "Permission denied" in output


def test_a_symbolic_link_out_leads_nowhere(box: Box) -> None:
    output = box.run(
        f"ln -s {box.bashrc} link && echo pwned >> link; ln -s {box.home} dir && echo x > dir/new"
    )
    assert box.untouched() and not (box.home / "new").exists(), output
    assert (box.workspace / "link").is_symlink()  # making the link is fine; writing through it is not


def test_a_hard_link_out_cannot_be_made(box: Box) -> None:
    output = box.run(f"ln {box.bashrc} hard; echo pwned >> hard; ln {box.home}/.ssh/id_rsa key; cat key")
    assert box.untouched(), output
    assert (
        not (box.workspace / "hard").exists()
        or (box.workspace / "hard").stat().st_ino != box.bashrc.stat().st_ino
    )
    assert SECRET not in output


def test_dot_dot_and_absolute_paths_out_fail(box: Box) -> None:
    output = box.run(
        f"echo pwned > ../outside.txt; echo pwned > {box.outside}; mkdir ../made; rm {box.outside}"
    )
    assert box.untouched() and not (box.outside.parent / "made").exists(), output


def test_proc_self_root_tricks_fail(box: Box) -> None:
    output = box.run(
        f"echo pwned >> /proc/self/root{box.bashrc}; echo pwned >> /proc/1/root{box.bashrc}; "
        f"cat /proc/self/root{box.home}/.ssh/id_rsa; cd /proc/self/cwd/.. && echo pwned > outside.txt"
    )
    assert box.untouched(), output
    assert SECRET not in output


def test_secret_folders_cannot_be_read(box: Box) -> None:
    output = box.run("cat ~/.ssh/id_rsa; cp ~/.ssh/id_rsa .; tar cf - ~/.ssh 2>&1 | head -c 300; ls ~/.ssh")
    assert SECRET not in output and not (box.workspace / "id_rsa").exists()
    assert "id_rsa" in output  # the names can be listed (documented): the contents cannot be read
    grep = box.grep.execute({"pattern": "PRIVATE", "path": "."}, None)
    assert SECRET not in grep.content


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.setblocking(False)
    yield server
    server.close()


def _no_connection(server: socket.socket) -> bool:
    try:
        connection, _ = server.accept()
    except BlockingIOError:
        return True
    connection.close()
    return False


def test_a_loopback_tcp_connect_fails(box: Box, listener: socket.socket) -> None:
    port = listener.getsockname()[1]
    script = (
        "import socket\n"
        "for attempt in ('connect', 'fastopen', 'bind'):\n"
        "    try:\n"
        "        s = socket.socket()\n"
        f"        if attempt == 'connect': s.connect(('127.0.0.1', {port}))\n"
        f"        elif attempt == 'fastopen': s.sendto(b'x', socket.MSG_FASTOPEN, ('127.0.0.1', {port}))\n"
        "        else: s.bind(('127.0.0.1', 0)); s.listen()\n"
        "        print(attempt, 'WORKED')\n"
        "    except OSError as e:\n"
        "        print(attempt, 'refused', e.errno)\n"
    )
    (box.workspace / "probe.py").write_text(script)
    output = box.run(f"{sys.executable} -I -S probe.py; exec 3<>/dev/tcp/127.0.0.1/{port}; echo done")
    assert "WORKED" not in output, output
    assert output.count("refused 13") == 3
    assert _no_connection(listener)


def test_udp_and_other_sockets_fail(box: Box) -> None:
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver.bind(("127.0.0.1", 0))
    receiver.setblocking(False)
    port = receiver.getsockname()[1]
    script = (
        "import socket\n"
        f"for family, kind in ((2, 2), (10, 2), (2, 3), (16, 3), (17, 3)):\n"
        "    try:\n"
        "        s = socket.socket(family, kind)\n"
        f"        s.sendto(b'x', ('127.0.0.1', {port}))\n"
        "        print('WORKED', family, kind)\n"
        "    except OSError as e:\n"
        "        print('refused', e.errno)\n"
        "socket.socket(socket.AF_UNIX); print('unix sockets work')\n"
    )
    (box.workspace / "udp.py").write_text(script)
    try:
        output = box.run(f"{sys.executable} -I -S udp.py")
        with pytest.raises(BlockingIOError):
            receiver.recv(10)
    finally:
        receiver.close()
    assert "WORKED" not in output and output.count("refused 13") == 5 and "unix sockets work" in output


def _alive_with(marker: str) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                cmdline = Path(f"/proc/{name}/cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmdline:
                found.append(int(name))
    return found


def test_a_daemon_does_not_outlive_the_command(box: Box) -> None:
    marker = f"miniagent-probe-{uuid.uuid4().hex}"
    daemon = f"sleep 30; echo pwned >> {box.bashrc} # {marker}"
    output = box.run(f"setsid sh -c '{daemon}' > /dev/null 2>&1 & (nohup sh -c '{daemon}' &) ; echo started")
    assert "started" in output
    assert _alive_with(marker) == []  # stopped by the reaper before run_command returned
    assert box.untouched()


def test_the_sandbox_cannot_signal_or_inspect_processes_outside_it(box: Box) -> None:
    output = box.run(f"kill -0 {os.getpid()} && echo SIGNALLED; cat /proc/{os.getpid()}/environ && echo READ")
    assert "SIGNALLED" not in output and "READ" not in output


def test_privileges_are_gone(box: Box) -> None:
    output = box.run(
        "grep -E '^Cap(Eff|Prm|Bnd|Amb)' /proc/self/status; grep NoNewPrivs /proc/self/status; "
        "mknod blockdev b 8 0 && echo MADE; mount -t tmpfs none . && echo MOUNTED"
    )
    assert output.count("0000000000000000") == 4 and "NoNewPrivs:\t1" in output
    assert "MADE" not in output and "MOUNTED" not in output


def test_the_session_keyring_is_out_of_reach(box: Box) -> None:
    number = {"x86_64": 250, "aarch64": 219}[os.uname().machine]  # keyctl
    script = (
        "import ctypes\n"
        "libc, n = ctypes.CDLL(None, use_errno=True), ctypes.c_long\n"
        f"result = libc.syscall(n({number}), n(0), n(-3), n(0))  # KEYCTL_GET_KEYRING_ID, the session's\n"
        "print('keyctl', result, ctypes.get_errno())\n"
    )
    (box.workspace / "keys.py").write_text(script)
    assert "keyctl -1 13" in box.run(f"{sys.executable} -I -S keys.py")


def test_writes_outside_the_private_temporary_folder_fail(box: Box) -> None:
    stray = Path("/tmp") / f"miniagent-probe-{uuid.uuid4().hex}"
    output = box.run(
        f"echo x > {stray}; echo x > /dev/shm/{stray.name}; echo ok > $TMPDIR/t && cat $TMPDIR/t"
    )
    assert not stray.exists() and not Path("/dev/shm", stray.name).exists()
    assert "ok" in output


def test_a_secret_folder_made_after_the_first_command_is_hidden_from_the_next(box: Box) -> None:
    box.run("true")  # the ruleset is built now, without ~/.aws
    (box.home / ".aws").mkdir()
    (box.home / ".aws" / "credentials").write_text(SECRET)
    assert SECRET not in box.run("cat ~/.aws/credentials")


# --- what stays allowed -------------------------------------------------------------------------------


def test_the_workspace_and_the_private_temporary_folder_are_writable(box: Box) -> None:
    output = box.run(
        "mkdir -p a/b && echo hi > a/b/f && mv a/b/f a/g && cat a/g && rm -r a && "
        "echo $TMPDIR && test -d $TMPDIR && echo t > $TMPDIR/x && ls $TMPDIR && echo > /dev/null && "
        "head -c 4 /dev/urandom | wc -c && python3 -c 'print(1 + 1)' && git --version > /dev/null; echo end"
    )
    assert "hi" in output and "x" in output and "4" in output and "2" in output and "end" in output, output
    temp = output.split("\n")[1]
    assert temp.startswith("/") and "miniagent-sandbox-" in temp and Path(temp).is_dir()


def test_a_file_made_after_the_first_command_in_a_split_folder_is_readable(box: Box) -> None:
    box.run("true")  # the home folder is split around .ssh: its entries are in the ruleset
    (box.home / "notes.txt").write_text("new notes\n")
    assert "new notes" in box.run("cat ~/notes.txt")


def test_reads_elsewhere_still_work(box: Box) -> None:
    output = box.run("cat /etc/hostname > /dev/null && echo read-etc; ls / > /dev/null && echo listed")
    assert "read-etc" in output and "listed" in output


# --- where the kernel cannot confine ------------------------------------------------------------------


@pytest.mark.parametrize(("abi", "said"), [(0, "no Landlock"), (3, r"ABI 3\) cannot refuse network")])
def test_no_or_an_old_landlock_raises_sandbox_unavailable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, abi: int, said: str
) -> None:
    monkeypatch.setattr(_confine, "landlock_abi", lambda: abi)
    with pytest.raises(SandboxUnavailable, match=said):
        default_tools(tmp_path, sandbox="workspace")
    assert default_tools(tmp_path)  # without the sandbox nothing is needed


def test_a_kernel_that_refuses_the_test_child_raises_sandbox_unavailable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sandbox, "_probe", lambda: "seccomp filter: [Errno 22] Invalid argument")
    with pytest.raises(SandboxUnavailable, match="refused to confine a test process: seccomp filter"):
        default_tools(tmp_path, sandbox="workspace")


def test_a_workspace_holding_a_secret_folder_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / ".ssh").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(SandboxUnavailable, match=r"holds .*\.ssh"):
        default_tools(tmp_path, sandbox="workspace")
    with pytest.raises(SandboxUnavailable, match="lies inside"):
        Sandbox(tmp_path / ".ssh")
    assert str((tmp_path / ".ssh").resolve()) in hidden_paths()


def test_an_unknown_sandbox_name_is_a_value_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown sandbox 'strict'"):
        default_tools(tmp_path, sandbox="strict")


def test_a_child_that_cannot_confine_itself_never_runs_the_command(tmp_path: Path) -> None:
    argv = contained(["/bin/sh", "-c", f"touch {tmp_path / 'ran'}"], 0.5, {"write": [str(tmp_path)]})
    argv[argv.index("--sandbox-write")] = "--sandbox-bogus"
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    assert done.returncode == 126
    assert done.stderr.startswith("miniagent: the sandbox could not confine the command:")
    assert not (tmp_path / "ran").exists()


def test_sandbox_unavailable_pickles_to_an_equal_error() -> None:
    error = SandboxUnavailable("the kernel has no Landlock")
    assert pickle.loads(pickle.dumps(error)) == error
