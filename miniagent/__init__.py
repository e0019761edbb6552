"""miniagent: a synchronous, thread-based agent loop with a zero-dependency core.

``run_agent()`` blocks in the caller's thread, streams a model's events, runs the tools it asks
for one after another, records every message (optionally to a JSONL session) and returns the
record with one of six stop reasons: ``complete``, ``max_turns``, ``max_budget``, ``deferred``
(a call waits for a decision: ``Approval.defer``), ``no_progress`` (``max_repeats``), ``aborted``.

Importing this package imports only the standard library. HTTP providers live in
``miniagent.providers`` (extra ``http``), built-in tools in ``miniagent.toolbox``, the CLI in
``miniagent.cli`` (extra ``cli``).
"""

from typing import TYPE_CHECKING, Any

from .agent import RunResult, StopReason, exit_code_for_stop_reason, run_agent
from .compaction import Compaction
from .context import message_chars, trim_context
from .errors import (
    EmptyResponseError,
    IncompleteResponseError,
    MiniagentError,
    ProviderError,
    SandboxUnavailable,
    SessionError,
)
from .messages import Message, Reasoning, Summary, ToolCall
from .model import (
    DoneEvent,
    ModelClient,
    ModelEvent,
    ModelRequest,
    ReasoningEvent,
    TextEvent,
    ToolCallEvent,
    ToolSpec,
    UsageEvent,
)
from .session import JSONLSession, SessionStore, append_session, load_session
from .tools import Approval, BeforeToolCall, Tool, ToolResult, tool
from .usage import Usage

if TYPE_CHECKING:
    from .stores import RedisSession, SQLiteSession

__version__ = "0.1.0"  # the one source of the version: setup.cfg reads it (attr:)

__all__ = [
    "Approval",
    "BeforeToolCall",
    "Compaction",
    "DoneEvent",
    "EmptyResponseError",
    "IncompleteResponseError",
    "JSONLSession",
    "Message",
    "MiniagentError",
    "ModelClient",
    "ModelEvent",
    "ModelRequest",
    "ProviderError",
    "Reasoning",
    "ReasoningEvent",
    "RedisSession",
    "RunResult",
    "SQLiteSession",
    "SandboxUnavailable",
    "SessionError",
    "SessionStore",
    "StopReason",
    "Summary",
    "TextEvent",
    "Tool",
    "ToolCall",
    "ToolCallEvent",
    "ToolResult",
    "ToolSpec",
    "Usage",
    "UsageEvent",
    "__version__",
    "append_session",
    "exit_code_for_stop_reason",
    "load_session",
    "message_chars",
    "run_agent",
    "tool",
    "trim_context",
]


def __getattr__(name: str) -> Any:
    """``SQLiteSession`` and ``RedisSession`` are imported on first use (``sqlite3`` costs
    milliseconds at start-up, ``redis`` is an extra)."""
    if name in ("SQLiteSession", "RedisSession"):
        from . import stores

        return getattr(stores, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
