"""Going on from a restored record: what a run checks before it writes anything, and the repair
of the calls the record left open (``miniagent.pending`` reads them; ``run_agent`` records what
this module returns).

Invariants:

- ``check_start`` raises before any write: a run with no user message on a record with nothing
  to go on from, or a user message the context budget cannot hold.
- ``repair_open_calls`` answers each open call once: a call cut off between commit and result
  gets ``MISSING_RESULT``, a started one without a result ``INTERRUPTED_AFTER_START`` (it may
  have run, so it never runs again); pending calls are returned to be asked again, never
  answered here.
"""

from __future__ import annotations

from collections.abc import Sequence

from .compaction import Compactor
from .context import Trimmer
from .messages import MISSING_RESULT, Message, ToolCall
from .pending import INTERRUPTED_AFTER_START, can_continue, open_calls

__all__ = ["check_start", "repair_open_calls"]


def check_start(
    record: Sequence[Message], message: Message | None, context: Trimmer | Compactor | None
) -> None:
    """Refuse a run that cannot start, before anything is written.

    Args:
        record: the restored messages (notes included).
        message: this run's user message, or ``None`` to go on from ``record``.
        context: the run's ``Trimmer`` or ``Compactor`` (``None``: no context budget).

    Raises:
        ValueError: ``message`` is ``None`` and ``record`` has nothing to go on from
            (``pending.can_continue`` says why), or ``message`` is larger than the context budget.
    """
    if message is None:
        problem = can_continue(record)
        if problem is not None:
            raise ValueError(f"user=None: {problem}")
    elif context is not None:
        context.check_fits(message)


def repair_open_calls(record: Sequence[Message]) -> tuple[list[Message], tuple[ToolCall, ...]]:
    """The resume repair of ``record``'s open calls (``pending.open_calls``).

    Returns:
        ``(results, pending)``: the error ``tool`` messages that answer the interrupted and the
        started calls, in order, and the pending calls that the run asks its hook about again.
    """
    opened = open_calls(record)
    results = [Message("tool", MISSING_RESULT, (), call.id, True) for call in opened.interrupted]
    results += [Message("tool", INTERRUPTED_AFTER_START, (), call.id, True) for call in opened.started]
    return results, opened.pending
