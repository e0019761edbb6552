"""Which command the embedded model may run without being told to: only one that only reads.

Invariants:

- A command in backticks is run when the request tells to run it (``intent.tells_to_run``:
  "Run `ls data`", not "What would `rm notes.txt` do?" nor "Please do not run `rm app.py`");
  otherwise only when it ``only_reads``: the read-only command set of ``--approve read-only``
  (``miniagent.approval.READ_ONLY_COMMANDS``, read as the shell will read the line) admits
  it with its paths inside the current folder.
- The check is the same code as the read-only approval's, so a command the model runs on its
  own is one that approval would have run unasked.

Why: a new user's questions about commands ("Is `rm -rf src` a good idea?", "What does `echo
reset > config.ini` do?") ran them under ``--approve all``: src/ deleted, config.ini lost.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["only_reads"]


class _Here:
    """The current folder as the read-only set's ``PathRules``: paths must resolve inside it."""

    def __init__(self) -> None:
        self.root = Path.cwd().resolve()

    def resolve(self, path: str) -> Path:
        resolved = (self.root / path).resolve()
        if resolved != self.root and self.root not in resolved.parents:
            raise ValueError(f"{path} is outside the current folder")
        return resolved


def only_reads(command: str) -> bool:
    """Whether ``command`` (a shell line) only reads: the read-only command set admits it."""
    from ..._command_rules import CommandRules
    from ..._readonly_commands import READ_ONLY_COMMANDS

    rules = CommandRules(READ_ONLY_COMMANDS, workspace=_Here())
    return rules.judge(command).allowed
