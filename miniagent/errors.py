"""Errors raised by miniagent.

Every error the library raises on purpose derives from :class:`MiniagentError`, so a caller can
catch the library's errors apart from bugs and from the exceptions of their own tools (which
``run_agent`` re-raises unchanged, as the spec's failure table says).

The whole tree (every public error; where it is raised)::

    Exception
    ├── MiniagentError                      miniagent.errors (also ``from miniagent import``)
    │   ├── EmptyResponseError              run_agent: a turn ended with neither text nor calls
    │   │                                   (nothing of the turn committed)
    │   ├── IncompleteResponseError         run_agent: a turn without tool calls ended other
    │   │                                   than naturally (output limit, context window,
    │   │                                   content filter, refusal, provider error): ``reason``,
    │   │                                   ``detail``, ``text`` (nothing of the turn committed)
    │   ├── SessionError                    session stores (miniagent.session, miniagent.stores:
    │   │                                   JSONL, SQLite, Redis): a bad line or record, a
    │   │                                   session locked by another writer (or a lost lease),
    │   │                                   a message the loader would refuse, a file that is not
    │   │                                   a session; run_agent passes it on
    │   ├── MCPError                        miniagent.mcp: an MCP server could not start, broke
    │   │                                   the protocol, exited, timed out or answered with an
    │   │                                   error, a call was cancelled, or a bad
    │   │                                   ``load_mcp_config`` file (``server``, ``kind``,
    │   │                                   ``code``); MCP tools turn it into an error result
    │   │                                   (cancel aside), so a run rarely sees it
    │   ├── SandboxUnavailable              miniagent.process.sandbox (``default_tools(...,
    │   │                                   sandbox="workspace")``, MCP stdio servers that ask
    │   │                                   for it): the kernel cannot confine commands here
    │   │                                   (never a silent fallback to running unconfined)
    │   └── ProviderError                   miniagent.providers: HTTP clients and their streams
    │       │                               (connection failure, an error event mid-stream, an
    │       │                               event that is not JSON, no API key for the provider)
    │       ├── StatusError                 miniagent.providers._http: an HTTP error status;
    │       │                               adds ``retry_after`` (seconds or None)
    │       └── LocalModelError             miniagent.providers.local: the local llama.cpp model
    │                                       cannot run (no xllamacpp, no model file, no start)
    ├── ValueError
    │   └── OutsideWorkspaceError           miniagent.toolbox: a path leaves the workspace; the
    │                                       file tools turn it into an error result, so a run
    │                                       never sees it
    └── (standard errors, not library errors) ValueError / TypeError for bad arguments
        (``run_agent``, ``@tool``, ``trim_context``), ``OSError`` from session writes and
        ``NotADirectoryError`` for a workspace that is not a folder.

Tools' own exceptions, a model client's exceptions and an approval hook's exceptions are not
wrapped: ``run_agent`` closes the open calls and re-raises the original object.

Every ``MiniagentError`` pickles and unpickles to an equal one (same type, ``args`` and
attributes), so an error raised in a worker process (Celery, multiprocessing) reaches the caller
whole; equality and hashing compare those values.
"""

from __future__ import annotations

from typing import Any, Literal

__all__ = [
    "INCOMPLETE_REASONS",
    "MiniagentError",
    "EmptyResponseError",
    "IncompleteReason",
    "IncompleteResponseError",
    "SessionError",
    "SandboxUnavailable",
    "ProviderError",
]

IncompleteReason = Literal[
    "max_output_tokens", "context_window", "content_filter", "refusal", "provider_error"
]
"""Why a turn ended other than naturally (DESIGN.md "Round 3 contracts"): the output-token limit,
the context window, the provider's content filter, the model's refusal, or an error of the
provider."""

INCOMPLETE_REASONS: tuple[IncompleteReason, ...] = (
    "max_output_tokens",
    "context_window",
    "content_filter",
    "refusal",
    "provider_error",
)


class MiniagentError(Exception):
    """Base class of every error miniagent raises on purpose.

    Pickling keeps the type, ``args`` and every attribute without calling ``__init__`` again
    (subclasses take keyword arguments that ``args`` does not hold); two errors are equal when
    those are equal.
    """

    def __reduce__(self) -> tuple[Any, ...]:
        """Rebuild from type, ``args`` and attributes (see the class docstring)."""
        return (_rebuild_error, (type(self), self.args, dict(self.__dict__)))

    def __eq__(self, other: object) -> bool:
        """Equal to an error of the same type with equal ``args`` and attributes."""
        if type(other) is not type(self):
            return NotImplemented
        return self.args == other.args and self.__dict__ == other.__dict__

    def __hash__(self) -> int:
        """Hash of the type and the text (consistent with ``__eq__``)."""
        return hash((type(self), str(self)))


class EmptyResponseError(MiniagentError):
    """The model finished a turn with neither text nor tool calls.

    Raised by ``run_agent`` before anything of that turn is committed (spec: "empty response").
    """

    def __init__(self, message: str = "model completed without text or tool calls") -> None:
        super().__init__(message)


_INCOMPLETE_TEXTS: dict[str, str] = {
    "max_output_tokens": "the model's answer was cut at the output token limit",
    "context_window": "the model's answer was cut: the context window is full",
    "content_filter": "the model's answer was stopped by the provider's content filter",
    "refusal": "the model refused to answer",
    "provider_error": "the provider ended the model's answer with an error",
}


class IncompleteResponseError(MiniagentError):
    """A turn without tool calls ended other than naturally, so it is not an answer.

    Raised by ``run_agent`` after checkpoint 2, before anything of that turn is committed
    (DESIGN.md "Round 3 contracts": a cut or failed answer is never complete). A turn that holds
    tool calls is committed instead (a call whose arguments were cut gets an error result).

    Args:
        reason: one of ``INCOMPLETE_REASONS``: ``"max_output_tokens"``, ``"context_window"``,
            ``"content_filter"``, ``"refusal"``, ``"provider_error"``.
        detail: the provider's own word for how the turn ended (e.g. ``"length"``,
            ``"max_tokens"``, ``"model_context_window_exceeded"``), ``""`` when it gave none.
        text: the text that arrived (a refusal's explanation, a cut answer), never committed.

    The message names the reason and the provider's word, never a CLI option (the CLI words
    its own advice). Raises ``ValueError`` for an unknown ``reason``.
    """

    def __init__(self, reason: IncompleteReason, detail: str = "", text: str = "") -> None:
        if reason not in _INCOMPLETE_TEXTS:
            raise ValueError(f"unknown incomplete reason {reason!r}; known: {', '.join(INCOMPLETE_REASONS)}")
        said = f" (stop reason {detail!r})" if detail else ""
        kept = f"; {len(text):,} characters of text arrived and were not committed" if text else ""
        super().__init__(f"{_INCOMPLETE_TEXTS[reason]}{said}{kept}")
        self.reason: IncompleteReason = reason
        self.detail = detail
        self.text = text


class SessionError(MiniagentError):
    """A session file cannot be used: a bad line, or the file is locked by another run.

    Attributes:
        path: the session file, as given.
        line: 1-based line number of the bad line, or ``None`` when the problem is not a line.

    The file is never modified when this is raised.
    """

    def __init__(self, path: object, message: str, line: int | None = None) -> None:
        where = f"{path}:{line}" if line is not None else f"{path}"
        super().__init__(f"{where}: {message}")
        self.path = path
        self.line = line


class SandboxUnavailable(MiniagentError):
    """The kernel cannot confine commands as the ``workspace`` sandbox promises.

    Raised when the tools are built (``default_tools(..., sandbox="workspace")``, an MCP stdio
    server with ``"sandbox": "workspace"``), before anything runs: not Linux, Landlock missing or
    too old to refuse network access, an unsupported architecture, or a workspace that holds a
    folder the sandbox hides (``~/.ssh``...). The message says which and what to do; nothing
    falls back to running unconfined.
    """


class ProviderError(MiniagentError):
    """A model provider failed: an HTTP error, an error event in the stream, a broken stream.

    Attributes:
        status: the HTTP status code, or ``None`` (connection error, in-stream error event).
        retryable: whether trying the same request again may succeed (rate limit, overload,
            server error, connection error).
        kind: the provider's error type when it gave one (e.g. ``"overloaded_error"``), else ``None``.

    The message never contains an API key or request headers.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retryable: bool = False,
        kind: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable
        self.kind = kind


def _rebuild_error(cls: type[MiniagentError], args: tuple[Any, ...], state: dict[str, Any]) -> MiniagentError:
    """Unpickle a ``MiniagentError``: the instance without ``__init__``, then its values."""
    error = cls.__new__(cls)
    error.args = args
    error.__dict__.update(state)
    return error
