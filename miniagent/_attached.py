"""A text attached to a prompt (standard library only): the CLI attaches its standard input
(``cli.stdin_context``), the embedded model reads the request without it (``providers.local``).

Invariant: ``split_attached(attach(prompt, text)) == (prompt, text)`` for a ``text`` without a
trailing newline; the block is the prompt, a blank line, then ``<stdin>``, the text and
``</stdin>`` on lines of their own, at the end of the message.
"""

from __future__ import annotations

import re

__all__ = ["attach", "split_attached"]

_BLOCK = re.compile(r"\n\n<stdin>\n(.*)\n</stdin>\Z", re.S)


def attach(prompt: str, text: str) -> str:
    """``prompt`` with ``text`` (its last newline dropped) attached as a ``<stdin>`` block."""
    return f"{prompt}\n\n<stdin>\n{text.rstrip(chr(10))}\n</stdin>"


def split_attached(message: str) -> tuple[str, str | None]:
    """(the prompt, the text attached to it) of ``message``; ``(message, None)`` without one."""
    found = _BLOCK.search(message)
    if found is None:
        return message, None
    return message[: found.start()], found.group(1)
