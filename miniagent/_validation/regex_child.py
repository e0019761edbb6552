"""The child process that runs pattern searches for ``bounded_search`` (not a public API).

A search in ``re`` can backtrack for longer than any deadline (``^([A-Za-z0-9]+\\s?)+$`` against
36 letters and ``"!"``), and neither a cancel event nor a signal handler can stop it in the
thread that runs it. So a search that might take long runs here, where the parent can kill it.

Started as ``python -I -S regex_child.py PARENT_PID`` (no site, no environment variables, no script folder
on ``sys.path``): it imports only ``os``, ``re`` and ``sys``, never the ``miniagent`` package.
Its address space is capped (``MAX_MEMORY_BYTES``) so a search that allocates without end fails
here with ``MemoryError`` instead of growing the machine's memory, and it exits by itself within
``ORPHAN_CHECK_SECONDS`` when its parent is gone (killed with SIGKILL in the middle of a search that
would otherwise run on for hours).

stdin, per search: a line ``"<pattern bytes> <text bytes>\\n"``, then the pattern (``re`` text,
compiled with ``re.ASCII``) and the text, both UTF-8 with lone surrogates passed through.
stdout, per search: ``1\\n`` (found), ``0\\n`` (not found) or ``E <reason>\\n``. End of stdin ends
the process.
"""

from __future__ import annotations

import os
import re
import sys

MAX_MEMORY_BYTES = 1 << 30
ORPHAN_CHECK_SECONDS = 0.5


def _limit_memory() -> None:
    try:
        import resource
    except ImportError:  # not POSIX: nothing is capped
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    wanted = MAX_MEMORY_BYTES if hard == resource.RLIM_INFINITY else min(MAX_MEMORY_BYTES, hard)
    if soft == resource.RLIM_INFINITY or soft > wanted:
        resource.setrlimit(resource.RLIMIT_AS, (wanted, hard))


def _answer(pattern: str, text: str, cache: dict[str, re.Pattern[str]]) -> bytes:
    try:
        compiled = cache.get(pattern)
        if compiled is None:
            if len(cache) > 64:
                cache.clear()
            compiled = cache[pattern] = re.compile(pattern, re.ASCII)
        return b"1\n" if compiled.search(text) is not None else b"0\n"
    except MemoryError:
        return b"E the search ran out of memory\n"
    except (re.error, RecursionError, OverflowError) as error:
        return f"E {error}\n".encode("ascii", "replace")


def _end_with_the_parent(parent: int) -> None:
    """Exit within ``ORPHAN_CHECK_SECONDS`` of the death of ``parent`` (its pid, from the command
    line: the parent may die before this process starts), even in the middle of a search:
    ``re`` runs signal handlers while it backtracks, so a timer signal reaches it."""
    import signal

    def check(signum: int, frame: object) -> None:
        if os.getppid() != parent:
            os._exit(0)

    check(0, None)
    signal.signal(signal.SIGALRM, check)
    signal.setitimer(signal.ITIMER_REAL, ORPHAN_CHECK_SECONDS, ORPHAN_CHECK_SECONDS)


def main() -> None:
    """Answer searches until stdin ends."""
    _limit_memory()
    _end_with_the_parent(int(sys.argv[1]))
    read = sys.stdin.buffer
    write = sys.stdout.buffer
    cache: dict[str, re.Pattern[str]] = {}
    while True:
        header = read.readline()
        if not header:
            return
        sizes = header.split()
        pattern = read.read(int(sizes[0])).decode("utf-8", "surrogatepass")
        text = read.read(int(sizes[1])).decode("utf-8", "surrogatepass")
        write.write(_answer(pattern, text, cache))
        write.flush()
        del text


if __name__ == "__main__":
    try:
        main()
    except (BrokenPipeError, KeyboardInterrupt):
        os._exit(0)
