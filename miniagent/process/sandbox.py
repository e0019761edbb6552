"""The ``workspace`` sandbox of child processes: what a confined command may touch, on Linux.

A command run under ``Sandbox(workspace)`` is confined by the kernel (Landlock, a seccomp filter
and an empty capability set: ``_confine``), applied in the child process itself (the reaper,
before it starts the program) with the ruleset the sandbox built, so the program and everything
it starts stay confined; nothing can lift it.

Policy ``workspace``:

- **Writes** only inside the workspace folder and the sandbox's private temporary folder
  (``TMPDIR``, ``TMP`` and ``TEMP`` name it; made for the first command, shared by the sandbox's
  later commands -- as ``/tmp`` is between commands -- and removed by ``Sandbox.close``, when
  the sandbox is collected or when the process exits), plus the harmless devices of ``DEVICES``
  (``/dev/null``...). Nowhere else: not ``~/.bashrc``, not
  through a symbolic link or ``/proc/self/root`` (the kernel checks the file reached, not the
  path spelled), not by a hard link to a file outside (refused by Landlock's ``REFER`` rule),
  not ``/dev/shm``. Device files cannot be made.
- **No network**: ``socket()`` of any family but ``AF_UNIX`` fails (seccomp: no UDP, raw, packet
  or Internet socket), and TCP connect and bind are refused by Landlock (ABI >= 4) beneath it.
  The seccomp layer is needed: Landlock governs TCP ``connect``/``bind`` only, and a TCP Fast
  Open ``sendto(MSG_FASTOPEN)`` connects without either.
- **Reads** everywhere except ``hidden_paths()``: the secret folders and files of
  ``SECRET_PATHS`` under the home folder (``~/.ssh``, ``~/.aws``, ``~/.gnupg``,
  ``~/.config/gcloud``, ...), ``SYSTEM_SECRETS`` (``/etc/shadow``...) and ``/dev`` (raw disks,
  memory) but ``DEVICES``. Names inside a hidden folder can be listed (``ls ~/.ssh``), never
  their contents read: Landlock grants whole trees, so listing ``~`` needs the listing right
  on ``/``. The environment of processes outside the sandbox (``/proc/PID/environ``) cannot be
  read (Landlock's ptrace scope), nor can they be signalled (ABI >= 6).
- **No privileges**: the capability sets are emptied (a command run by root cannot load kernel
  modules, override file permissions or open raw sockets); setuid programs gain nothing.

Where the kernel cannot do all of this (not Linux, Landlock missing or older than ABI 4, an
architecture other than x86_64 and aarch64, no interpreter to run the confining child, or a test
child -- confined once per process, as commands will be -- that fails), building a ``Sandbox``
raises ``SandboxUnavailable``: the caller never runs unconfined by surprise. A
workspace that holds a hidden path (running in the home folder) or lies inside one is refused
the same way: Landlock cannot give write access to a folder except one of its subfolders.

Limits: the hidden paths are those of the home folders known when a command starts (``HOME``
and the user's home from the password database); connecting to a UNIX socket that has a path
(``/var/run/docker.sock``) is not governed by Landlock up to ABI 7; a hard link made before the
command ran, inside the workspace, to a file outside it, is writable through that name; the
mode, times and extended attributes of a file the user owns outside the workspace can still be
changed (``chmod``, ``touch -d``: Landlock does not govern them), never its contents; POSIX
shared memory (``/dev/shm``: Python's ``multiprocessing`` locks) is unavailable; the hidden
folders are found by name: a secret kept elsewhere, or the same folder mounted at another path
(a bind mount), is readable.
"""

from __future__ import annotations

import contextlib
import functools
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import threading
import weakref
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import SandboxUnavailable

__all__ = [
    "SANDBOX_MODES",
    "SECRET_PATHS",
    "SYSTEM_SECRETS",
    "DEVICES",
    "CONFINE_MODULE",
    "Confinement",
    "Sandbox",
    "hidden_paths",
    "landlock_abi",
    "sandbox_for",
]

SANDBOX_MODES = ("none", "workspace")
"""The sandbox policies by name: ``none`` (commands run with the user's authority) and
``workspace`` (this module)."""

SECRET_PATHS = (
    ".ssh",
    ".aws",
    ".gnupg",
    ".config/gcloud",
    ".azure",
    ".kube",
    ".docker",
    ".config/gh",
    ".password-store",
    ".local/share/keyrings",
    ".netrc",
    ".git-credentials",
    ".npmrc",
    ".pypirc",
    ".vault-token",
)
"""Folders and files under a home folder that a confined command cannot read."""

SYSTEM_SECRETS = ("/etc/shadow", "/etc/gshadow", "/etc/ssh", "/etc/sudoers", "/etc/sudoers.d")
"""Files and folders of the system that a confined command cannot read."""

DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
"""The only device files a confined command can open (read and write)."""

CONFINE_MODULE = Path(__file__).with_name("_confine.py")
"""The child-side module (standard library only) that children load by path to confine
themselves (imported here only when needed: it imports ``ctypes``)."""


def landlock_abi() -> int:
    """The kernel's Landlock ABI version (``landlock_create_ruleset`` with
    ``LANDLOCK_CREATE_RULESET_VERSION``); 0 when Landlock is missing, disabled or not Linux."""
    if not sys.platform.startswith("linux"):
        return 0
    from . import _confine

    return _confine.landlock_abi()


def _homes(env: Mapping[str, str] | None) -> list[str]:
    homes = {os.path.expanduser("~")}
    with contextlib.suppress(KeyError, OSError):
        homes.add(pwd.getpwuid(os.geteuid()).pw_dir)
    if env is not None and env.get("HOME"):
        homes.add(env["HOME"])
    return sorted(h for h in homes if h and os.path.isabs(h))


def hidden_paths(env: Mapping[str, str] | None = None) -> list[str]:
    """The existing paths a confined command cannot read, resolved (symbolic links followed):
    ``SECRET_PATHS`` under each home folder (``HOME``, the password database's, and ``env``'s
    ``HOME``), the ``SYSTEM_SECRETS`` this process could read (root's: for other users the
    file permissions already keep them unreadable, and leaving them out of the rules spares
    splitting ``/etc``), and ``/dev``."""
    candidates = [os.path.join(home, name) for home in _homes(env) for name in SECRET_PATHS]
    candidates += [path for path in SYSTEM_SECRETS if os.access(path, os.R_OK)]  # root's: others cannot
    candidates.append("/dev")
    return sorted({os.path.realpath(path) for path in candidates if os.path.lexists(path)})


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _check_kernel() -> None:
    """Raise ``SandboxUnavailable`` unless this kernel can apply the whole ``workspace`` policy."""
    if not sys.platform.startswith("linux"):
        raise SandboxUnavailable(
            f"the workspace sandbox needs Linux (Landlock); this system is {sys.platform}"
        )
    machine = os.uname().machine
    if machine not in ("x86_64", "aarch64"):
        raise SandboxUnavailable(f"the workspace sandbox supports x86_64 and aarch64, not {machine}")
    from . import _confine

    abi = landlock_abi()
    if abi == 0:
        raise SandboxUnavailable(
            "the kernel has no Landlock (Linux 5.13 or later with landlock among its lsm= modules is "
            "needed for the workspace sandbox)"
        )
    if abi < _confine.MIN_ABI:
        raise SandboxUnavailable(
            f"this kernel's Landlock (ABI {abi}) cannot refuse network connections; the workspace "
            f"sandbox needs ABI {_confine.MIN_ABI} (Linux 6.7 or later)"
        )
    if not sys.executable:
        raise SandboxUnavailable("the workspace sandbox needs the path of the Python interpreter")
    problem = _probe()
    if problem:
        raise SandboxUnavailable(f"the kernel refused to confine a test process: {problem}")


@functools.lru_cache(maxsize=1)
def _probe() -> str:
    """Confine a throw-away child the way commands will be (``_confine.confine``: Landlock,
    seccomp, capabilities), once per process; ``""`` when it worked, else its last error line."""
    script = (
        f"import sys; sys.path.insert(0, {str(CONFINE_MODULE.parent)!r}); import _confine; "
        "_confine.confine({'read': ['/'], 'hide': [], 'devices': [], 'write': []})"
    )
    try:
        done = subprocess.run(
            [sys.executable, "-I", "-S", "-c", script],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return str(error)
    if done.returncode == 0:
        return ""
    lines = (done.stderr or "").strip().splitlines()
    return lines[-1] if lines else f"exit status {done.returncode}"


@dataclass(frozen=True)
class Confinement:
    """What one confined child is given.

    Args:
        spec: the rules for ``_confine.confine`` (JSON-ready): ``{"ruleset": FD}``, the
            sandbox's Landlock ruleset, which the child must inherit (``pass_fds``).
        env: variables to set in the child's environment (``TMPDIR``, ``TMP``, ``TEMP``).
        temp: the sandbox's private temporary folder, or ``None`` (a child that writes nothing).
        pass_fds: the file descriptors the child must inherit (the ruleset's).
    """

    spec: dict[str, Any]
    env: dict[str, str] = field(default_factory=dict)
    temp: Path | None = None
    pass_fds: tuple[int, ...] = ()


@dataclass
class _Held:
    """What a sandbox holds and gives back on ``close`` or when it is collected: its private
    temporary folder and the file descriptors of its rulesets."""

    temp: Path | None = None
    fds: list[int] = field(default_factory=list)

    def release(self) -> None:
        temp, self.temp = self.temp, None
        fds, self.fds = self.fds, []
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)


@dataclass(frozen=True)
class _Ruleset:
    """A built ruleset: its fd, what it was built for, and the folders whose entries decided it."""

    fd: int
    key: tuple[Any, ...]
    split: tuple[tuple[str, tuple[int, int, int]], ...]

    def fresh(self, key: tuple[Any, ...]) -> bool:
        """Whether it still fits: the same hidden paths and write roots, and no folder it was
        split from gained or lost an entry."""
        from . import _confine

        if key != self.key:
            return False
        try:
            return all(_confine.folder_stamp(path) == stamp for path, stamp in self.split)
        except OSError:
            return False


class Sandbox:
    """The ``workspace`` policy (module doc) for the children of one workspace.

    The Landlock ruleset is built here, in the parent, once (and again when a hidden path
    appears or a folder it was split from changes), and each child inherits it and only
    restricts itself with it: the per-command cost stays small.

    Args:
        workspace: the folder the confined children may write in (resolved now).
        writable: ``False`` for children that write nothing (``grep``'s worker): then neither
            the workspace nor a temporary folder is writable.

    Raises:
        SandboxUnavailable: the kernel cannot confine (module doc), or the workspace holds or
            lies inside a hidden path (the message names it and what to do).
        NotADirectoryError: ``workspace`` is not a folder.
    """

    def __init__(self, workspace: str | os.PathLike[str], *, writable: bool = True) -> None:
        root = Path(workspace).expanduser().resolve()
        if not root.is_dir():
            raise NotADirectoryError(f"workspace is not a folder: {workspace}")
        _check_kernel()
        self.workspace = root
        self.writable = writable
        self._check_workspace(hidden_paths())
        self._lock = threading.Lock()
        self._held = _Held()
        self._ruleset: _Ruleset | None = None
        weakref.finalize(self, self._held.release)

    def _check_workspace(self, hidden: list[str]) -> None:
        root = str(self.workspace)
        for path in hidden:
            if _inside(root, path):
                raise SandboxUnavailable(f"the workspace {root} lies inside {path}, which the sandbox hides")
            if _inside(path, root):
                raise SandboxUnavailable(
                    f"the workspace {root} holds {path}, which the sandbox keeps unreadable; "
                    "choose a workspace folder that does not contain it"
                )

    @contextlib.contextmanager
    def confinement(self, env: Mapping[str, str] | None = None) -> Iterator[Confinement]:
        """The rules for one child: the sandbox's ruleset (built or refreshed now if needed)
        and its private temporary folder (made at the first child, kept for the next ones,
        removed by ``close``).

        Args:
            env: the child's environment (its ``HOME``'s secrets are hidden too).

        Raises:
            SandboxUnavailable: the workspace now holds a hidden path (e.g. ``HOME`` of ``env``).
            OSError: the temporary folder or the ruleset cannot be made (``ConfineError``: the
                kernel refused a rule).
        """
        hidden = hidden_paths(env)
        self._check_workspace(hidden)
        with self._lock:
            temp = self._temp_folder() if self.writable else None
            write = [str(self.workspace), str(temp)] if temp is not None else []
            spec = {"read": ["/"], "hide": hidden, "devices": list(DEVICES), "write": write}
            fd = self._ruleset_for(spec)
        variables = {} if temp is None else {"TMPDIR": str(temp), "TMP": str(temp), "TEMP": str(temp)}
        yield Confinement({"ruleset": fd}, variables, temp, (fd,))

    def _temp_folder(self) -> Path:
        held = self._held
        if held.temp is None or not held.temp.is_dir():
            held.temp = Path(tempfile.mkdtemp(prefix="miniagent-sandbox-")).resolve()
        return held.temp

    def _ruleset_for(self, spec: dict[str, Any]) -> int:
        """The fd of a ruleset for ``spec``: the last one while it is fresh, else a new one (the
        old fd stays open until ``close``: a child may be inheriting it now)."""
        from . import _confine

        key = (tuple(spec["hide"]), tuple(spec["write"]))
        if self._ruleset is not None and self._ruleset.fresh(key):
            return self._ruleset.fd
        split: list[tuple[str, tuple[int, int, int]]] = []
        fd = _confine.build_ruleset(spec, split)
        self._held.fds.append(fd)
        self._ruleset = _Ruleset(fd, key, tuple(split))
        return fd

    def close(self) -> None:
        """Remove the private temporary folder (with what the children left in it) and close
        the rulesets; a later child gets new ones. Also done when the sandbox is garbage
        collected or the process exits."""
        with self._lock:
            self._ruleset = None
            self._held.release()


def sandbox_for(mode: str, workspace: str | os.PathLike[str], *, writable: bool = True) -> Sandbox | None:
    """The sandbox of the policy named ``mode`` (``SANDBOX_MODES``): ``None`` for ``"none"``.

    Raises:
        ValueError: ``mode`` is not one of ``SANDBOX_MODES``.
        SandboxUnavailable: ``"workspace"`` where the kernel cannot confine (``Sandbox``).
    """
    if mode == "none":
        return None
    if mode == "workspace":
        return Sandbox(workspace, writable=writable)
    raise ValueError(f"unknown sandbox {mode!r} (choose from {', '.join(SANDBOX_MODES)})")
