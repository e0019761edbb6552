"""The child side of the sandbox: confine this process with the Linux kernel, then exec.

Not an API: ``process.sandbox`` describes a policy and builds its Landlock ruleset
(``build_ruleset``, in the parent); the process that will run the command (the reaper of
``run_command`` and of an MCP server, before it starts the program; the ``grep`` worker, before
it opens a file) calls ``confine(spec)`` on itself before anything the model chose runs. Every
later ``fork`` and ``execve`` keeps the confinement: the kernel never lifts it. It imports only
the standard library (it runs inside ``python -I -S`` children, loaded by path) and never the
``miniagent`` package.

What ``confine`` does, in this order (each step fails loudly, never silently):

1. ``prctl(PR_SET_NO_NEW_PRIVS)``: no ``execve`` can raise privileges again (setuid, file
   capabilities); the kernel requires it before an unprivileged Landlock or seccomp filter.
2. Landlock (``landlock_create_ruleset`` 444, ``landlock_add_rule`` 445,
   ``landlock_restrict_self`` 446 on x86_64 and aarch64), with every file-system right the
   kernel's ABI knows handled, so only what is granted here is allowed. The ruleset is built
   once by the parent (``build_ruleset``) and inherited as a file descriptor, so a child only
   restricts itself with it; it holds:

   - ``read`` roots (``/``): read, list and execute, except the ``hide`` paths (secret
     folders, ``/dev``). Landlock grants rights to whole trees and has no "except", so a
     root that holds a hidden path is granted child by child, and the child on the way to the
     hidden path is split again, down to it (symbolic links are skipped: the kernel checks
     the path they lead to). Listing a folder (``READ_DIR``) is granted on ``/`` itself, so
     ``ls ~`` works; that also lets the names inside a hidden folder be listed -- never their
     contents read.
   - ``devices``: read and write of single device files (``/dev/null``, ``/dev/zero``...).
   - ``write`` roots (the workspace, the private temporary folder): every right but making
     character or block devices and device ``ioctl``.
   - network (ABI >= 4): TCP bind and connect handled and never granted: both are refused.
   - scopes (ABI >= 6): no signal to, and no abstract UNIX socket of, a process outside the
     sandbox.
3. seccomp: ``socket()`` of any family but ``AF_UNIX`` fails with ``EACCES``. Landlock governs
   TCP ``connect`` and ``bind`` only: UDP, SCTP, raw and packet sockets pass it, and so does a
   TCP Fast Open ``sendto(MSG_FASTOPEN)``, which connects without ``connect()`` (seen on Linux
   6.18); with no Internet socket at all, none of them can reach the network. ``io_uring_setup``
   (a way around the filter), the kernel keyring calls (``add_key``, ``request_key``,
   ``keyctl``: keys of the user's session) and every system call of another architecture (x32,
   32-bit) fail the same way.
4. capabilities: the bounding set, the ambient set and the process's own sets are emptied,
   so a command run by root cannot load a kernel module, open raw sockets or override file
   permissions (with step 1, no ``execve`` gives them back).

Limits (the kernel's, documented where the policy is, ``process.sandbox``): connecting to a UNIX
socket that has a path is not governed by Landlock up to ABI 7; a hard link made *before* the
command runs, inside a write root, to a file outside it, is writable through that path.
"""

from __future__ import annotations

import ctypes
import os
import struct

TYPE_CHECKING = False  # not imported from typing: start-up time of the children
if TYPE_CHECKING:
    from typing import Any

# --- the kernel's numbers ---------------------------------------------------------------------

_SYSCALLS = {  # (landlock_create_ruleset, landlock_add_rule, landlock_restrict_self, capset)
    "x86_64": (444, 445, 446, 126),
    "aarch64": (444, 445, 446, 91),
}
_SOCKET = {"x86_64": 41, "aarch64": 198}
_KEYRINGS = {"x86_64": (248, 249, 250), "aarch64": (217, 218, 219)}  # add_key, request_key, keyctl
_IO_URING_SETUP = 425
_AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}

CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1
PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
PR_CAPBSET_DROP = 24
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
SECCOMP_MODE_FILTER = 2
_CAPABILITY_VERSION_3 = 0x20080522

EXECUTE = 1 << 0
WRITE_FILE = 1 << 1
READ_FILE = 1 << 2
READ_DIR = 1 << 3
REMOVE_DIR = 1 << 4
REMOVE_FILE = 1 << 5
MAKE_CHAR = 1 << 6
MAKE_DIR = 1 << 7
MAKE_REG = 1 << 8
MAKE_SOCK = 1 << 9
MAKE_FIFO = 1 << 10
MAKE_BLOCK = 1 << 11
MAKE_SYM = 1 << 12
REFER = 1 << 13  # ABI 2
TRUNCATE = 1 << 14  # ABI 3
IOCTL_DEV = 1 << 15  # ABI 5
NET_BIND_TCP = 1 << 0  # ABI 4
NET_CONNECT_TCP = 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1

_FS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 4: (1 << 15) - 1, 5: (1 << 16) - 1}
FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
"""The rights a rule on a file that is not a folder may carry (the kernel refuses others)."""
READ_RIGHTS = EXECUTE | READ_FILE | READ_DIR
WRITE_RIGHTS = (
    READ_RIGHTS
    | WRITE_FILE
    | REMOVE_DIR
    | REMOVE_FILE
    | MAKE_DIR
    | MAKE_REG
    | MAKE_SOCK
    | MAKE_FIFO
    | MAKE_SYM
    | REFER
    | TRUNCATE
)
DEVICE_RIGHTS = READ_FILE | WRITE_FILE
MIN_ABI = 4
"""The oldest Landlock ABI that can refuse TCP (``confine`` refuses to run on older kernels)."""


class ConfineError(OSError):
    """The kernel could not confine this process (the command must not run)."""


def _libc() -> Any:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    libc.prctl.restype = ctypes.c_int
    return libc


def _machine() -> str:
    machine = os.uname().machine
    if machine not in _SYSCALLS:
        raise ConfineError(f"no sandbox on this architecture ({machine or 'unknown'})")
    return machine


def _check(result: int, what: str) -> int:
    if result < 0:
        error = ctypes.get_errno()
        raise ConfineError(error, f"{what}: {os.strerror(error)}")
    return result


def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 when Landlock is missing or disabled."""
    try:
        numbers = _SYSCALLS[_machine()]
        libc = _libc()
    except (OSError, KeyError):
        return 0
    version = libc.syscall(_long(numbers[0]), None, _long(0), _long(CREATE_RULESET_VERSION))
    return max(0, int(version))


# --- the spec on a command line ----------------------------------------------------------------

_KEYS = ("read", "hide", "devices", "write")


def spec_options(spec: dict[str, Any]) -> list[str]:
    """``spec`` as command-line options (``--sandbox-read PATH``..., ``--sandbox-ruleset FD``),
    read by ``spec_from``."""
    options: list[str] = []
    if "ruleset" in spec:
        options += ["--sandbox-ruleset", str(int(spec["ruleset"]))]
    for key in _KEYS:
        for path in spec.get(key, ()):
            options += [f"--sandbox-{key}", str(path)]
    return options


def spec_from(options: list[str]) -> dict[str, Any] | None:
    """The spec written by ``spec_options``; ``None`` when ``options`` is empty.

    Raises:
        ValueError: an option that ``spec_options`` does not write.
    """
    if not options:
        return None
    spec: dict[str, Any] = {key: [] for key in _KEYS}
    pairs = zip(options[::2], options[1::2], strict=False)
    for option, value in pairs:
        key = option.removeprefix("--sandbox-")
        if key == "ruleset" and option != key:
            spec["ruleset"] = int(value)
            continue
        if key not in spec or option == key:
            raise ValueError(f"unknown option {option!r}")
        spec[key].append(value)
    if len(options) % 2:
        raise ValueError(f"option {options[-1]!r} has no value")
    return spec


# --- rules: what to grant -------------------------------------------------------------------------


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


Stamp = tuple[int, int, int]


def folder_stamp(path: str) -> Stamp:
    """What changes when a folder gains or loses an entry: ``(device, inode, mtime in ns)``."""
    info = os.stat(path, follow_symlinks=False)
    return (info.st_dev, info.st_ino, info.st_mtime_ns)


def grants(
    root: str, rights: int, hidden: list[str], split: list[tuple[str, Stamp]] | None = None
) -> list[tuple[str, int]]:
    """The ``(path, rights)`` rules that give ``rights`` on the tree of ``root`` except the
    trees of ``hidden`` (resolved absolute paths): one rule on ``root`` when it holds none of
    them, else one per child (symbolic links skipped; a file's rights masked to
    ``FILE_RIGHTS``), split again on the way to each. Each folder split is appended to
    ``split`` with its ``folder_stamp`` taken before it was read (its entries decide the
    rules: when the stamp changes, the rules are stale)."""
    below = [h for h in hidden if _inside(h, root)]
    if not below:
        return [(root, rights)]
    if root in below:
        return []
    rules: list[tuple[str, int]] = []
    try:
        entries = list(os.scandir(root))
    except OSError:
        return []
    if split is not None:
        try:
            stamp = folder_stamp(root)
        except OSError:
            stamp = (-1, -1, -1)  # gone already: the rules are stale at once
        split.append((root, stamp))
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            rules.extend(grants(entry.path, rights, below, split))
        elif not entry.is_symlink() and entry.path not in below:
            rules.append((entry.path, rights & FILE_RIGHTS))
    return rules


def _rules(spec: dict[str, Any], split: list[tuple[str, Stamp]] | None = None) -> list[tuple[str, int]]:
    """Every ``(path, rights)`` rule of ``spec`` (module doc); folders but ``devices``."""
    hidden = [str(h) for h in spec.get("hide", ())]
    rules: list[tuple[str, int]] = [("/", READ_DIR)]
    for root in spec.get("read", ()):
        rules.extend(grants(str(root), READ_RIGHTS, hidden, split))
    rules.extend((str(device), DEVICE_RIGHTS) for device in spec.get("devices", ()))
    rules.extend((str(root), WRITE_RIGHTS) for root in spec.get("write", ()))
    return rules


# --- Landlock -------------------------------------------------------------------------------------


def _long(value: int) -> ctypes.c_long:
    return ctypes.c_long(value)  # syscall(2) reads every argument as a long


def _ulong(value: int) -> ctypes.c_ulong:
    return ctypes.c_ulong(value)  # prctl(2) reads its arguments as unsigned longs


def _prctl(libc: Any, option: int, argument: int) -> int:
    return int(libc.prctl(ctypes.c_int(option), _ulong(argument), _ulong(0), _ulong(0), _ulong(0)))


def _ruleset(libc: Any, numbers: tuple[int, ...], abi: int) -> tuple[int, int]:
    """A new ruleset fd handling every right of ``abi``; returns ``(fd, handled fs rights)``."""
    handled_fs = _FS_BY_ABI.get(abi, _FS_BY_ABI[5])
    scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0
    attr = struct.pack("=QQQ", handled_fs, NET_BIND_TCP | NET_CONNECT_TCP, scoped)
    size = 24 if abi >= 6 else 16
    buffer = ctypes.create_string_buffer(attr, 24)
    fd = libc.syscall(_long(numbers[0]), buffer, _long(size), _long(0))
    return _check(int(fd), "landlock_create_ruleset"), handled_fs


def _add_rules(libc: Any, numbers: tuple[int, ...], ruleset: int, rules: list[tuple[str, int]]) -> None:
    """Grant each rule's rights beneath its path; a path that is gone is skipped (nothing to
    grant), a rule the kernel refuses raises ``ConfineError``."""
    attr = ctypes.create_string_buffer(12)  # struct landlock_path_beneath_attr (packed)
    add, target, kind, flags = _long(numbers[1]), _long(ruleset), _long(RULE_PATH_BENEATH), _long(0)
    syscall, open_, close, pack = libc.syscall, os.open, os.close, struct.Struct("=Qi").pack_into
    mode = os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC  # a link swapped in meanwhile: no rule through it
    for path, rights in rules:
        if not rights:
            continue
        try:
            fd = open_(path, mode)
        except FileNotFoundError:
            continue
        try:
            pack(attr, 0, rights, fd)
            if syscall(add, target, kind, attr, flags) < 0:
                _check(-1, f"landlock_add_rule {path}")
        finally:
            close(fd)


def build_ruleset(spec: dict[str, Any], split: list[tuple[str, Stamp]] | None = None) -> int:
    """A Landlock ruleset fd holding the rules of ``spec`` (``read``, ``hide``, ``devices``,
    ``write``), for ``confine({"ruleset": fd})`` in children that inherit it; building it
    confines nobody. The folders whose entries decided the rules are appended to ``split``
    (``grants``).

    Raises:
        ConfineError: no Landlock, an ABI older than ``MIN_ABI``, or a rule the kernel refused.
    """
    machine = _machine()
    numbers = _SYSCALLS[machine]
    libc = _libc()
    abi = int(libc.syscall(_long(numbers[0]), None, _long(0), _long(CREATE_RULESET_VERSION)))
    if abi < MIN_ABI:
        raise ConfineError(f"Landlock ABI {max(abi, 0)} cannot refuse network access (needs {MIN_ABI})")
    ruleset, handled = _ruleset(libc, numbers, abi)
    try:
        _add_rules(libc, numbers, ruleset, [(path, rights & handled) for path, rights in _rules(spec, split)])
    except BaseException:
        os.close(ruleset)
        raise
    return ruleset


def _landlock(libc: Any, numbers: tuple[int, ...], spec: dict[str, Any]) -> None:
    """Restrict this process with the ruleset fd of ``spec["ruleset"]`` (closed here), or with
    one built now from its paths."""
    ruleset = int(spec["ruleset"]) if "ruleset" in spec else build_ruleset(spec)
    try:
        _check(int(libc.syscall(_long(numbers[2]), _long(ruleset), _long(0))), "landlock_restrict_self")
    finally:
        os.close(ruleset)


# --- seccomp and capabilities ---------------------------------------------------------------------


def _filter(machine: str) -> bytes:
    """The BPF program of step 3 (module doc), as ``struct sock_filter`` records: ``socket()``
    is allowed for ``AF_UNIX`` only; any other family, ``io_uring_setup``, the kernel keyring
    calls, and any system call of another architecture fail with ``EACCES``."""
    load, jeq, jge, ret = 0x20, 0x15, 0x35, 0x06
    # (label, code, k, jump-if-true label, jump-if-false label); None: the next instruction
    program: list[tuple[str, int, int, str | None, str | None]] = [
        ("", load, 4, None, None),  # seccomp_data.arch
        ("", jeq, _AUDIT_ARCH[machine], None, "deny"),
        ("", load, 0, None, None),  # seccomp_data.nr
        ("", jge, 0x40000000, "deny", None),  # the x32 system calls
        ("", jeq, _IO_URING_SETUP, "deny", None),
        *(("", jeq, number, "deny", None) for number in _KEYRINGS[machine]),
        ("", jeq, _SOCKET[machine], None, "allow"),
        ("", load, 16, None, None),  # args[0]: the address family
        ("", jeq, 1, "allow", "deny"),  # AF_UNIX
        ("allow", ret, 0x7FFF0000, None, None),  # SECCOMP_RET_ALLOW
        ("deny", ret, 0x00050000 | 13, None, None),  # SECCOMP_RET_ERRNO | EACCES
    ]
    where = {label: index for index, (label, *_) in enumerate(program) if label}

    def offset(index: int, label: str | None) -> int:
        return 0 if label is None else where[label] - index - 1

    return b"".join(
        struct.pack("=HBBI", code, offset(i, true), offset(i, false), k)
        for i, (_, code, k, true, false) in enumerate(program)
    )


def _seccomp(libc: Any, machine: str) -> None:
    program = _filter(machine)
    filters = ctypes.create_string_buffer(program, len(program))
    fprog = struct.pack("=HxxxxxxQ", len(program) // 8, ctypes.addressof(filters))
    header = ctypes.create_string_buffer(fprog, len(fprog))
    _check(
        libc.prctl(PR_SET_SECCOMP, _ulong(SECCOMP_MODE_FILTER), header, _ulong(0), _ulong(0)),
        "seccomp filter",
    )


def _drop_capabilities(libc: Any, numbers: tuple[int, ...]) -> None:
    try:
        with open("/proc/sys/kernel/cap_last_cap", "rb") as handle:
            last = int(handle.read())
    except (OSError, ValueError):
        last = 63
    for capability in range(last + 1) if os.geteuid() == 0 else ():  # others gain nothing at exec
        if _prctl(libc, PR_CAPBSET_DROP, capability) < 0 and ctypes.get_errno() not in (1, 22):
            _check(-1, "dropping capabilities")  # EPERM: none to drop; EINVAL: not a capability
    _prctl(libc, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
    header = ctypes.create_string_buffer(struct.pack("=Ii", _CAPABILITY_VERSION_3, 0), 8)
    data = ctypes.create_string_buffer(bytes(24), 24)
    _check(int(libc.syscall(_long(numbers[3]), header, data)), "capset")


def confine(spec: dict[str, Any]) -> None:
    """Confine this process (and every program it will run) as ``spec`` says (module doc).

    Args:
        spec: ``{"ruleset": FD}``, a ruleset built by ``build_ruleset`` and inherited (the
            fast way: ``process.sandbox`` builds one per sandbox), or ``{"read": [paths],
            "hide": [paths], "devices": [paths], "write": [paths]}``, every path absolute and
            resolved, to build the rules here.

    Raises:
        ConfineError: a step failed (old kernel, unknown architecture, a refused rule); the
            process may be partly confined and must not run the command.
    """
    machine = _machine()
    numbers = _SYSCALLS[machine]
    libc = _libc()
    _check(_prctl(libc, PR_SET_NO_NEW_PRIVS, 1), "no_new_privs")
    _landlock(libc, numbers, spec)
    _seccomp(libc, machine)
    _drop_capabilities(libc, numbers)
