"""The child process that runs one ``grep`` search (started by ``search.py``; not a public API).

A regular expression can take exponential time (``(a+)+$`` against ``"a" * 40 + "b"``) inside
``re``, where neither a cancel event nor a time limit can reach it. So the search runs here, in a
child process the parent kills on cancel or timeout (``process.run_process``).

Started as ``python -I -S _grep_worker.py`` (no site, no environment variables, no script folder
on ``sys.path``): it imports only the standard library, never the ``miniagent`` package, to keep
its start-up short. Confinement is decided by the parent: it resolves the path inside the
workspace first and passes the resolved root and top; this worker applies the same walking rules
as before (no symlinked folders followed, symlinked files searched only when they resolve inside
the root, ``.git`` skipped), and opens every file from the root one component at a time with
``O_NOFOLLOW`` (``open_confined``), so a folder swapped for a symlink during the search cannot lead
it outside.

stdin: one JSON object (ASCII) with ``root``, ``top`` (both resolved), ``is_dir``, ``pattern``,
``glob_name`` and ``glob_path`` (regular expressions compiled from the glob by ``globs.py``, each
or both null; matched against names and paths in the Unicode normal form ``name_form``, as
``paths.comparable_name`` does), ``max_memory_bytes`` (this process's address-space limit: a file whose search
runs out of it is skipped and counted), ``max_matches``, ``max_line_chars``, ``max_file_bytes``,
``sniff_bytes``, ``skipped_folders``, and optionally ``confine`` (``{"module_dir", "spec"}``:
the worker confines itself with the kernel, ``process/_confine.py``, before it opens any file).

stdout: ASCII JSON lines; ``["match", {"path", "line", "text"}]`` for each matching line as found
(flushed after each file); a line longer than ``max_line_chars`` gives a window of that many
characters around the first match in it, and ``before``, ``after`` (characters cut on each side:
the parent adds the marker) and ``column`` (1-based, of the match's start); then
``["done", {"skipped": {reason: count}, "full": bool}]``.
Exit status 0; anything else (a traceback on stderr, merged) is a failure for the parent.
"""

from __future__ import annotations

import codecs
import errno
import json
import os
import re
import stat
import sys

TYPE_CHECKING = False  # not imported from typing: importing typing would cost ~3 ms of start-up
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import IO, Any


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_READ = os.O_RDONLY | os.O_NONBLOCK | _NOFOLLOW | _CLOEXEC | getattr(os, "O_NOCTTY", 0)
_MARKS = (  # byte order marks, longest first (as ``textfiles``; not imported: start-up time)
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


def _lines(text: str) -> Iterator[str]:
    """The lines of ``text`` without their ``\\n``, one at a time (no list of every line)."""
    start, size = 0, len(text)
    while start < size:
        end = text.find("\n", start)
        if end < 0:
            yield text[start:]
            return
        yield text[start:end]
        start = end + 1


def limit_memory(max_bytes: int) -> None:
    """Cap this process's address space at ``max_bytes`` (``RLIMIT_AS``): an allocation past it
    raises ``MemoryError`` instead of growing the machine's memory (a backtracking pattern on a
    20 MB line). Without ``resource`` (not POSIX) nothing is capped."""
    try:
        import resource
    except ImportError:
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        max_bytes = min(max_bytes, hard)
    if soft == resource.RLIM_INFINITY or soft > max_bytes:
        resource.setrlimit(resource.RLIMIT_AS, (max_bytes, hard))


class Search:
    """The state of one grep search: matches written to ``out`` as JSON lines, skip counts.

    Args:
        request: the decoded stdin object (module doc).
        out: a text stream for the JSON lines.
    """

    def __init__(self, request: dict[str, Any], out: IO[str]) -> None:
        self.root: str = request["root"]
        self.prefix = self.root if self.root.endswith(os.sep) else self.root + os.sep
        self.regex = re.compile(request["pattern"])
        self.glob_name = re.compile(request["glob_name"], re.S) if request["glob_name"] else None
        self.glob_path = re.compile(request["glob_path"], re.S) if request["glob_path"] else None
        self.name_form = request.get("name_form", "NFC")
        self.max_matches: int = request["max_matches"]
        self.max_line_chars: int = request["max_line_chars"]
        self.max_file_bytes: int = request["max_file_bytes"]
        self.sniff_bytes: int = request["sniff_bytes"]
        self.skipped_folders = frozenset(request["skipped_folders"])
        self.memory_mb: int = request["max_memory_bytes"] // (1024 * 1024)
        self.out = out
        self.count = 0
        self.skipped: dict[str, int] = {}
        self.full = False

    def contains(self, resolved: str) -> bool:
        """Return whether a resolved absolute path is the root or inside it (by components)."""
        return resolved == self.root or resolved.startswith(self.prefix)

    def display(self, path: str) -> str:
        """Return ``path`` as shown to the model: relative to the root, ``"."`` for the root."""
        if path == self.root:
            return "."
        if path.startswith(self.prefix):
            return path[len(self.prefix) :]
        return path

    def skip(self, why: str) -> None:
        self.skipped[why] = self.skipped.get(why, 0) + 1

    def wanted(self, path: str) -> bool:
        """Whether the glob selects ``path`` (its name, or its root-relative path: ``globs``)."""
        if self.glob_name is None and self.glob_path is None:
            return True
        if self.glob_name is not None and self.glob_name.fullmatch(self.comparable(os.path.basename(path))):
            return True
        shown = self.comparable(self.display(path).replace(os.sep, "/"))
        return self.glob_path is not None and self.glob_path.fullmatch(shown) is not None

    def comparable(self, name: str) -> str:
        """``name`` in the normal form globs are matched in (``paths.comparable_name``)."""
        if name.isascii():
            return name
        import unicodedata  # only for a name that is not ASCII: start-up time

        return unicodedata.normalize(self.name_form, name)

    def window(self, shown: str, number: int, line: str, hit: re.Match[str]) -> dict[str, Any]:
        """The JSON object of one match: the whole line when it fits in ``max_line_chars``, else
        a window of that many characters around the match (the match's start when the match
        itself is longer), with the characters cut before and after it and the match's column."""
        size = self.max_line_chars
        if len(line) <= size:
            return {"path": shown, "line": number, "text": line}
        start, end = hit.span()
        if end - start >= size:
            first = start
        else:
            first = max(0, min(start - (size - (end - start)) // 2, len(line) - size))
        last = min(len(line), first + size)
        return {
            "path": shown,
            "line": number,
            "text": line[first:last],
            "before": first,
            "after": len(line) - last,
            "column": start + 1,
        }

    def decode(self, data: bytes) -> str | None:
        """The file's text (``textfiles`` rules: a byte order mark decides, else UTF-8 with
        invalid bytes replaced), or ``None`` when it is binary (a NUL byte early on)."""
        for mark, codec in _MARKS:
            if data.startswith(mark):
                return data[len(mark) :].decode(codec, errors="replace")
        if b"\x00" in data[: self.sniff_bytes]:
            return None
        return data.decode("utf-8", errors="replace")

    def open_confined(self, real: str) -> int:
        """Open the file at ``real`` (a path inside the root without symlinks) from the root, one
        component at a time with ``O_NOFOLLOW``: a folder swapped for a symlink after the walk
        saw it makes the open fail (``OSError``) instead of leading outside the workspace."""
        parts = real[len(self.prefix) :].split(os.sep) if real.startswith(self.prefix) else []
        if not parts or "" in parts:
            raise OSError(errno.ENOENT, "not a file inside the workspace")
        folder_flags = os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC
        fd = os.open(self.root, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
        try:
            for part in parts[:-1]:
                inner = os.open(part, folder_flags, dir_fd=fd)
                os.close(fd)
                fd = inner
            return os.open(parts[-1], _READ, dir_fd=fd)
        finally:
            os.close(fd)

    def read(self, real: str) -> bytes | None:
        """The bytes of the regular file at ``real`` (``open_confined``), or ``None`` with a skip
        noted.

        Opened without blocking (a FIFO swapped in after the walk saw a file cannot hang the
        search) and checked on the open descriptor; at most ``max_file_bytes`` are read."""
        try:
            fd = self.open_confined(real)
        except OSError:
            self.skip("unreadable files")
            return None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                self.skip("special files (not regular)")
                return None
            if info.st_size > self.max_file_bytes:
                self.skip(f"files larger than {self.max_file_bytes // (1024 * 1024)} MB")
                return None
            os.set_blocking(fd, True)
            with os.fdopen(fd, "rb", closefd=False) as handle:
                return handle.read(self.max_file_bytes + 1)[: self.max_file_bytes]
        except OSError:
            self.skip("unreadable files")
            return None
        finally:
            os.close(fd)

    def search_file(self, path: str, real: str | None = None) -> None:
        """Search one file, shown as ``path`` and read at ``real`` (its resolved target when it
        is a symlink), writing its matching lines. A file whose search runs out of memory
        (``max_memory_bytes``) is skipped and counted."""
        found = False
        try:
            found = self.search_text(path, real or path)
        except MemoryError:
            self.skip(f"files the search ran out of memory on (limit {self.memory_mb} MB)")
        finally:
            if found:
                self.out.flush()

    def search_text(self, path: str, real: str) -> bool:
        """Search the lines of one file, one at a time; return whether a match was written."""
        data = self.read(real)
        if data is None:
            return False
        text = self.decode(data)
        del data
        if text is None:
            self.skip("binary files")
            return False
        shown = self.display(path)
        found = False
        for number, line in enumerate(_lines(text), start=1):
            line = line.removesuffix("\r")
            hit = self.regex.search(line)
            if hit:
                self.out.write(json.dumps(["match", self.window(shown, number, line, hit)]) + "\n")
                found = True
                self.count += 1
                if self.count >= self.max_matches:
                    self.full = True
                    return found
        return found

    def search_entry(self, path: str) -> None:
        """Search a directory entry found while walking (never followed if a folder symlink)."""
        real = path
        if os.path.islink(path):
            try:
                target = os.path.realpath(path)
            except (OSError, ValueError):
                self.skip("broken symlinks")
                return
            try:
                os.stat(target)
            except OSError as error:
                if error.errno == errno.ELOOP:  # a symlink loop (pathlib raised RuntimeError)
                    self.skip("broken symlinks")
                    return
            if not self.contains(target):
                self.skip("symlinks leading outside the workspace")
                return
            if not os.path.isfile(target):
                self.skip("symlinks to folders (not followed)")
                return
            real = target
        if self.wanted(path):
            self.search_file(path, real)

    def walk(self, top: str) -> None:
        """Search every file under ``top`` in sorted order, until ``max_matches`` matches."""
        for folder, folders, files in os.walk(top, followlinks=False):
            folders[:] = sorted(f for f in folders if f not in self.skipped_folders)
            # os.walk lists symlinks to folders among the folders; route them through the checks.
            for name in list(folders):
                if os.path.islink(os.path.join(folder, name)):
                    folders.remove(name)
                    self.search_entry(os.path.join(folder, name))
            for name in sorted(files):
                self.search_entry(os.path.join(folder, name))
                if self.full:
                    return


def confine(request: dict[str, Any]) -> None:
    """Confine this process with the kernel when the request says so (``"confine"``: the folder
    of ``process/_confine.py`` and its spec), before any file is opened. A failure raises: the
    search must not run unconfined."""
    settings = request.get("confine")
    if not settings:
        return
    sys.path.insert(0, settings["module_dir"])
    import _confine  # type: ignore[import-not-found]

    _confine.confine(settings["spec"])


def main() -> int:
    """Run the search described on stdin; return the exit status (0)."""
    request = json.loads(sys.stdin.buffer.read())
    confine(request)
    limit_memory(request["max_memory_bytes"])
    search = Search(request, sys.stdout)
    if request["is_dir"]:
        search.walk(request["top"])
    else:
        search.search_file(request["top"])
    summary = {"skipped": search.skipped, "full": search.full}
    sys.stdout.write(json.dumps(["done", summary]) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
