"""Standard input as context: ``git diff | miniagent run "review this"`` sends the prompt with
what came on standard input attached in a bounded block.

The rule (``attach_stdin``), for ``run`` with a PROMPT other than ``-`` (``-`` still means "the
prompt is standard input"):

- Standard input is read only when it is a pipe, a socket or a regular file. A terminal, a
  character device (``/dev/null``, which cron and service managers give), a closed or missing
  standard input are never read; nor is it read under ``--approve ask`` (the answers come from
  there) or with ``--stdin-max-chars 0``.
- It is read until its end or until ``--stdin-max-chars`` characters came (then the block says it
  was cut, and the rest is never read). A wait of more than ``--stdin-wait`` seconds for the next
  data (an inherited pipe nobody writes to, ``tail -f``) ends the reading too: what came so far is
  attached, with a note in the block and on stderr. So a standard input that never closes costs
  at most that wait, never a hung run.
- Empty (or only whitespace): nothing is attached.
- Not text (a NUL byte, or bytes that are not UTF-8) is refused: ``UsageProblem`` (exit 64),
  nothing is sent.
"""

from __future__ import annotations

import codecs
import os
import select
import stat
import sys
from typing import IO, Any

from .._attached import attach
from .checks import UsageProblem

__all__ = [
    "DEFAULT_STDIN_MAX_CHARS",
    "DEFAULT_STDIN_WAIT",
    "LOCAL_STDIN_MAX_CHARS",
    "attach_stdin",
    "context_source",
    "read_context",
    "stdin_cap",
]

DEFAULT_STDIN_MAX_CHARS = 100_000
LOCAL_STDIN_MAX_CHARS = 6_000
"""The default cap for the embedded model, whose context holds 4,096 tokens: 100,000
characters of a piped log overflowed it (HTTP 400 from llama.cpp, exit 1)."""
CONTEXT_MARGIN_CHARS = 200
"""Room left for the block's tags and note when ``--context-max-chars`` bounds the cap."""


def stdin_cap(max_chars: int | None, provider: str, prompt_chars: int, context_max_chars: int | None) -> int:
    """How many characters of standard input to attach: ``max_chars`` (``--stdin-max-chars``)
    when given, else ``LOCAL_STDIN_MAX_CHARS`` for the ``local`` provider and
    ``DEFAULT_STDIN_MAX_CHARS`` for the others; never more than what leaves the prompt within
    ``--context-max-chars`` (when given), so a long input is cut to fit instead of refused."""
    cap = (
        max_chars
        if max_chars is not None
        else LOCAL_STDIN_MAX_CHARS
        if provider == "local"
        else DEFAULT_STDIN_MAX_CHARS
    )
    if context_max_chars is not None:
        cap = min(cap, max(0, context_max_chars - prompt_chars - CONTEXT_MARGIN_CHARS))
    return cap


DEFAULT_STDIN_WAIT = 10.0
_CHUNK = 65536


def context_source(stream: IO[Any] | None) -> int | None:
    """The descriptor of ``stream`` when it is a pipe, a socket or a regular file, else ``None``
    (a terminal, a character device such as ``/dev/null``, closed or missing)."""
    if stream is None:
        return None
    try:
        descriptor = stream.fileno()
        if os.isatty(descriptor):
            return None
        mode = os.fstat(descriptor).st_mode
    except (AttributeError, OSError, ValueError):
        return None
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISREG(mode):
        return descriptor
    return None


def read_context(descriptor: int, max_chars: int, wait: float) -> tuple[str, str | None]:
    """Read text from ``descriptor`` until its end, ``max_chars`` characters, or ``wait`` seconds
    without data.

    Returns:
        (the text, at most ``max_chars`` characters with ``\\r\\n`` and ``\\r`` made ``\\n``;
        why it stopped early: ``"cut"``, ``"idle"``, or ``None`` at the end of input).

    Raises:
        UsageProblem: the input is not text (a NUL byte or not UTF-8), or cannot be read.
    """
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    pieces: list[str] = []
    count = 0
    stopped: str | None = None
    try:
        while True:
            ready, _, _ = select.select([descriptor], [], [], wait)
            if not ready:
                stopped = "idle"
                break
            chunk = os.read(descriptor, _CHUNK)
            if b"\0" in chunk:
                raise UsageProblem(_NOT_TEXT.format(what="a NUL byte"))
            text = decoder.decode(chunk, final=not chunk)
            pieces.append(text)
            count += len(text)
            if not chunk:
                break
            if count > max_chars:
                stopped = "cut"
                break
    except UnicodeDecodeError:
        raise UsageProblem(_NOT_TEXT.format(what="bytes that are not UTF-8")) from None
    except OSError as error:
        raise UsageProblem(f"standard input cannot be read as context ({error.strerror or error})") from None
    text = "".join(pieces).replace("\r\n", "\n").replace("\r", "\n")
    return text[:max_chars], stopped


_NOT_TEXT = (
    "standard input holds {what}, not text: refused as context (pipe text, or give < /dev/null "
    "to attach nothing)"
)


def attach_stdin(prompt: str, *, max_chars: int, wait: float, approve: str | None) -> str:
    """``prompt`` with standard input attached as a context block when the rule of the module
    docstring says so (else ``prompt`` unchanged).

    Args:
        prompt: the prompt (already read and checked).
        max_chars: ``--stdin-max-chars`` (0: never read standard input).
        wait: ``--stdin-wait``, seconds.
        approve: ``--approve`` (``ask`` reads its answers from standard input: not read here).

    Raises:
        UsageProblem: standard input is not text.
    """
    descriptor = context_source(sys.stdin)
    if descriptor is None or max_chars <= 0 or approve == "ask":
        return prompt
    text, stopped = read_context(descriptor, max_chars, wait)
    empty = not text.strip()
    if stopped == "idle":
        said = "nothing attached" if empty else "attached what came until then"
        sys.stderr.write(f"miniagent: standard input sent nothing for {wait:g} s (--stdin-wait): {said}\n")
    if empty:
        return prompt
    note = ""
    if stopped == "cut":
        note = f"\n[cut: only the first {max_chars} characters of standard input are attached]"
    elif stopped == "idle":
        note = f"\n[standard input sent nothing for {wait:g} s and was not closed: what came until then]"
    return attach(prompt, text.rstrip("\n") + note)
