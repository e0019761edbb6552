"""Errors raised by miniagent.

Every error the library raises on purpose derives from :class:`MiniagentError`, so a caller can
catch the library's errors apart from bugs and from the exceptions of their own tools (which
``run_agent`` re-raises unchanged, as the spec's failure table says).

The whole tree (every public error; where it is raised)::

    Exception
    ├── MiniagentError                      miniagent.errors (also ``from miniagent import``)
    │   ├── EmptyResponseError              run_agent: a turn ended with neither text nor calls
    │   │                                   (nothing of the turn committed)
    │   ├── SessionError                    session stores (miniagent.session): a bad line, a
    │   │                                   locked session, a message the loader would refuse,
    │   │                                   a file that is not a session; run_agent passes it on
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
"""

from __future__ import annotations

__all__ = ["MiniagentError", "EmptyResponseError", "SessionError", "ProviderError"]


class MiniagentError(Exception):
    """Base class of every error miniagent raises on purpose."""


class EmptyResponseError(MiniagentError):
    """The model finished a turn with neither text nor tool calls.

    Raised by ``run_agent`` before anything of that turn is committed (spec: "empty response").
    """

    def __init__(self, message: str = "model completed without text or tool calls") -> None:
        super().__init__(message)


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
