"""``MCPServerBase`` and ``StdioMCPServer``: MCP servers as context managers that give ``Tool``s
(``HTTPMCPServer`` is in ``remote``).

Invariants:

- Synchronous, in the caller's thread: every request blocks until its answer, its timeout or the
  caller's cancel event; one request at a time per server (a lock serialises threads).
- ``start()`` (or ``with``) connects and runs the handshake within ``startup_timeout`` seconds;
  ``close()`` ends the session and, for stdio, stops the server's process group. Both idempotent.
- A stdio server that died (crash, killed) is started again by the next call; if that fails,
  the call's result is the error. Nothing is retried within one call: a call in flight when the
  server died gets an error result naming the exit status and the server's last stderr lines.
- ``tools()`` lists the tools once and again only after ``notifications/tools/list_changed``.
- A tool's ``execute`` never raises for a server's failure (it returns an error ``ToolResult``
  the model can read) except when the run's cancel event was set: then it sends
  ``notifications/cancelled`` and raises ``MCPError`` (kind ``cancelled``) within about 20 ms,
  which the agent loop records as ``aborted during execution``.
- One message read from a server is at most ``max_message_bytes`` (default
  ``MAX_MESSAGE_BYTES``): a larger one is never decoded, and its request fails with ``MCPError``
  (kind ``protocol``; a tool call's result is then that error), so one answer's memory is bounded.
- Results are capped at ``max_result_chars`` characters (head and tail kept, with a note) and
  every secret the client knows (``_secrets.Secrets``: secret variables of this process, the
  server's ``env`` values, header values, OAuth tokens) is replaced with ``***``, as for the
  built-in tools; so is every ``MCPError`` text and every log line.
- An HTTP session the server ended (404 to a request carrying its session id) is initialized
  again and the request sent once more, within the same call.
- What arrived while idle (``tools/list_changed`` over stdio) is handled before a listing.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

from .._log import Logger
from ..tools import MIN_TOOL_OUTPUT_CHARS, TOOL_OUTPUT_CHARS, Tool, ToolResult
from ._errors import MCPError
from ._requests import ClientSide, Elicitation
from ._secrets import Secrets
from ._session import Progress, Session
from ._tools import exposed_names, input_schema, is_read_only, result_text
from ._wire import MAX_MESSAGE_BYTES, Transport, check_message_limit

if TYPE_CHECKING:  # imported when a server is created: import miniagent.mcp stays light
    import threading

    from ..model import ModelClient
    from ..process.sandbox import Sandbox

__all__ = ["MAX_MESSAGE_BYTES", "MCPServerBase", "StdioMCPServer", "mcp_tools"]

_T = TypeVar("_T")

DEFAULT_STARTUP_TIMEOUT = 30.0
DEFAULT_TIMEOUT = 300.0

logger = Logger("miniagent.mcp")


class MCPServerBase:
    """What both kinds of server share: lifecycle, tools, calls (see the module docstring).

    Args:
        name: the server's name: the prefix of colliding tool names, and in errors and logs.
        startup_timeout: seconds for connecting and ``initialize``.
        timeout: seconds one request (a tool call, a listing, a ping) may take.
        max_result_chars: the cap of one tool result in characters (>= ``MIN_TOOL_OUTPUT_CHARS``
            of ``miniagent.tools``).
        max_message_bytes: the largest message read from the server, in bytes (>= 1024).
        roots: folders offered to the server as roots (``roots/list``); default the working
            folder.
        elicitation: answers the server's ``elicitation/create`` (``_requests.Elicitation``);
            without it every elicitation is declined.
        sampling: a ``ModelClient`` that answers the server's ``sampling/createMessage``;
            without it sampling is refused (error -32601).
    """

    def __init__(
        self,
        name: str,
        startup_timeout: float,
        timeout: float,
        max_result_chars: int,
        *,
        max_message_bytes: int = MAX_MESSAGE_BYTES,
        roots: Sequence[str | os.PathLike[str]] | None = None,
        elicitation: Elicitation | None = None,
        sampling: ModelClient | None = None,
    ) -> None:
        """Check and store the settings; nothing starts yet."""
        import threading

        for label, value in (("startup_timeout", startup_timeout), ("timeout", timeout)):
            if not value > 0 or value == float("inf"):
                raise ValueError(f"{label} must be a positive number of seconds, got {value!r}")
        if max_result_chars < MIN_TOOL_OUTPUT_CHARS:
            raise ValueError(f"max_result_chars must be at least {MIN_TOOL_OUTPUT_CHARS}")
        self.name = name
        self.startup_timeout = float(startup_timeout)
        self.timeout = float(timeout)
        self.max_result_chars = max_result_chars
        self.max_message_bytes = check_message_limit(max_message_bytes)
        self._session: Session | None = None
        self._started = False
        self._definitions: list[dict[str, Any]] | None = None
        self._lock = threading.RLock()
        self._client = ClientSide(name, roots, elicitation, sampling)
        self._known: Secrets | None = None

    # --- what a kind of server provides ---------------------------------------------------------

    def _open(self) -> Transport:
        raise NotImplementedError

    def _secrets(self) -> list[str]:
        """Values redacted from results: those of secret variables of this process."""
        from ..process.environment import secret_values

        return secret_values(os.environ)

    @property
    def secrets(self) -> Secrets:
        """Every secret this server's client knows (``_secrets.Secrets``), gathered once."""
        if self._known is None:
            self._known = Secrets(self._secrets())
        return self._known

    # --- lifecycle ------------------------------------------------------------------------------

    def __enter__(self) -> MCPServerBase:
        """``start()`` and return the server."""
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """``close()``."""
        self.close()

    def start(self) -> None:
        """Connect and run the handshake (no-op when connected).

        Raises:
            MCPError: kind ``start`` (command not found), ``timeout`` (no answer to
                ``initialize`` within ``startup_timeout``), ``closed`` (the server exited; the
                error holds its last stderr lines), ``protocol`` or ``error``.
        """
        with self._lock:
            try:
                self._connect()
            except MCPError as error:
                raise self.secrets.error(error) from None

    def close(self) -> None:
        """End the session; a stdio server's process group is stopped. Never raises."""
        with self._lock:
            session, self._session = self._session, None
            self._started = False
            if session is not None:
                session.close()

    def _connect(self) -> Session:
        session = self._session
        if session is not None and session.transport.alive():
            return session
        if session is not None:
            logger.warning("[%s] the server is not running any more; starting it again", self.name)
            self._session = None
            session.close()
        transport = self._open()
        session = Session(transport, self.name, self._client, self.secrets.clean)
        try:
            session.initialize(self.startup_timeout)
        except BaseException:
            session.close()
            raise
        self._session = session
        self._started = True
        return session

    # --- information ----------------------------------------------------------------------------

    @property
    def server_info(self) -> dict[str, Any]:
        """The server's ``serverInfo`` (``{"name", "version"}``); ``{}`` before ``start()``."""
        return dict(self._session.server_info) if self._session else {}

    @property
    def protocol_version(self) -> str:
        """The protocol version agreed in ``initialize``; ``""`` before ``start()``."""
        return self._session.protocol_version if self._session else ""

    @property
    def instructions(self) -> str:
        """The server's ``instructions`` for the model, ``""`` when it gave none."""
        return self._session.instructions if self._session else ""

    # --- requests -------------------------------------------------------------------------------

    def ping(self, timeout: float | None = None) -> None:
        """Send ``ping`` and wait for the answer (``timeout`` seconds, default ``self.timeout``).

        Raises:
            MCPError: no answer, an error answer, or the server is not running.
        """
        self._request("ping", None, None, timeout or self.timeout)

    def list_tools(self) -> list[dict[str, Any]]:
        """The server's tool definitions as MCP sends them (``name``, ``description``,
        ``inputSchema``, ``annotations``...), listed again only after the server said they changed.

        Raises:
            MCPError: the server could not be started or listed its tools wrongly.
        """

        def listing(session: Session) -> list[dict[str, Any]]:
            session.poll()
            if self._definitions is None or session.tools_changed:
                self._definitions = session.list_tools(self.timeout)
            return list(self._definitions)

        return self._on_session(listing)

    def tools(self, reserved: Iterable[str] = ()) -> list[Tool]:
        """The server's tools as ``Tool``s for ``run_agent``.

        Args:
            reserved: names already used by other tools of the run; a tool whose name is among
                them (or taken twice within this server) is named ``SERVER__TOOL``.

        Returns:
            One ``Tool`` per MCP tool: its description (or title), its ``inputSchema``,
            ``read_only`` from ``annotations.readOnlyHint``, and an ``execute`` that calls the
            server (see the module docstring for errors and cancel).

        Raises:
            MCPError: the server could not be started or its tools listed.
        """
        definitions = self.list_tools()
        names = exposed_names(self.name, [d["name"] for d in definitions], reserved)
        return [self._tool(d, name) for d, name in zip(definitions, names, strict=True)]

    def _tool(self, definition: dict[str, Any], exposed: str) -> Tool:
        original = definition["name"]
        description = definition.get("description") or definition.get("title") or ""

        def execute(arguments: dict[str, Any], cancel: threading.Event | None) -> ToolResult:
            try:
                return self.call_tool(original, arguments, cancel)
            except MCPError as err:
                if err.kind == "cancelled":
                    raise
                return ToolResult(self._finish(str(err)), is_error=True)

        return Tool(
            name=exposed,
            description=str(description),
            input_schema=input_schema(definition),
            execute=execute,
            read_only=is_read_only(definition),
        )

    def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        cancel: threading.Event | None = None,
        timeout: float | None = None,
        progress: Progress | bool = False,
    ) -> ToolResult:
        """Call the server's tool ``name`` (its original MCP name) and map the result.

        Args:
            name: the tool's MCP name.
            arguments: its arguments (a JSON object).
            cancel: when set while waiting, ``notifications/cancelled`` is sent and
                ``MCPError`` (kind ``cancelled``) raised.
            timeout: seconds to wait, default ``self.timeout``.
            progress: ask the server for progress notifications (``progressToken``): each one
                starts ``timeout`` again and, when this is a function, is passed to it (the
                notification's ``params``: ``progress``, ``total``, ``message``).

        Returns:
            The result as text (module docstring of ``_tools``), ``is_error`` from ``isError``.

        Raises:
            MCPError: cancelled, timed out, a JSON-RPC error answer (e.g. unknown tool), the
                server exited (a dead server is started again first), or bad arguments (NaN).
        """
        params = {"name": name, "arguments": dict(arguments or {})}
        try:
            result = self._request("tools/call", params, cancel, timeout or self.timeout, progress)
        except ValueError as exc:  # NaN/Infinity in the arguments: not JSON
            text = f"arguments of {name} are not JSON: {exc}"
            raise MCPError(text, server=self.name, kind="protocol") from None
        text, is_error = result_text(result)
        return ToolResult(self._finish(text), is_error)

    def _request(
        self,
        method: str,
        params: dict[str, Any] | None,
        cancel: threading.Event | None,
        timeout: float,
        progress: Progress | bool = False,
    ) -> dict[str, Any]:
        """One request on a started session (``_on_session``)."""
        return self._on_session(
            lambda session: session.request(method, params, cancel, timeout, progress=progress)
        )

    def _on_session(self, work: Callable[[Session], _T]) -> _T:
        """``work`` on a started session; done once more on a new session when the server had
        ended the old one (HTTP 404). ``MCPError`` texts are redacted."""
        with self._lock:
            try:
                for attempt in (1, 2):
                    session = self._connect()
                    try:
                        return work(session)
                    except MCPError:
                        if attempt == 2 or not getattr(session.transport, "expired", False):
                            raise
                        logger.info("[%s] the server ended the session; starting a new one", self.name)
                raise AssertionError("unreachable")  # pragma: no cover
            except MCPError as error:
                raise self.secrets.error(error) from None

    def _finish(self, text: str) -> str:
        """Redact secret values and cap the text (module docstring)."""
        from .._text import cap

        return cap(self.secrets.hide(text), self.max_result_chars)


class StdioMCPServer(MCPServerBase):
    """An MCP server run as a child process, spoken to over its stdin/stdout.

    Args:
        command: the program (looked up on ``PATH``), e.g. ``"uvx"``, ``"npx"``, ``"python"``.
        args: its arguments, e.g. ``("mcp-server-time",)``.
        env: variables added to the child's environment. The child inherits this process's
            environment without secret variables (``OPENAI_API_KEY``, ``*_TOKEN``, ... as for
            ``run_command``); a secret the server needs must be given here.
        cwd: the child's working folder, default this process's.
        name: the server's name; default the command's file name.
        startup_timeout: seconds to start and answer ``initialize`` (default 30).
        timeout: seconds one request may take (default 300).
        max_result_chars: cap of one tool result in characters (default ``TOOL_OUTPUT_CHARS`` of
            ``miniagent.tools``).
        max_message_bytes: the longest line read from its stdout (default ``MAX_MESSAGE_BYTES``).
        sandbox: ``"none"`` (default) or ``"workspace"``: the server runs confined by the kernel
            (``miniagent.process.sandbox``): it writes only in its ``cwd`` (default this
            process's folder) and a private temporary folder (removed by ``close()``), has no
            network and cannot read secret folders. ``start()`` raises ``SandboxUnavailable``
            where the kernel cannot confine it.
        roots: the roots the client offers the server (``MCPServerBase``).
        elicitation: the client's answer to the server's elicitation requests (``MCPServerBase``).
        sampling: the model client that answers the server's sampling requests (``MCPServerBase``).

    The process runs in its own process group; ``close()`` closes its stdin, waits 1 s, then
    SIGTERMs and (0.5 s later) SIGKILLs the group. Its stderr is logged to the ``miniagent.mcp``
    logger (bounded) and its last lines are quoted in errors.
    """

    def __init__(
        self,
        command: str,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        *,
        name: str | None = None,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
        timeout: float = DEFAULT_TIMEOUT,
        max_result_chars: int = TOOL_OUTPUT_CHARS,
        max_message_bytes: int = MAX_MESSAGE_BYTES,
        sandbox: str = "none",
        roots: Sequence[str | os.PathLike[str]] | None = None,
        elicitation: Elicitation | None = None,
        sampling: ModelClient | None = None,
    ) -> None:
        """Store the settings; the process starts with ``start()`` or ``with``.

        Raises:
            ValueError: an empty command, or ``sandbox`` not ``"none"`` or ``"workspace"``.
            TypeError: ``args`` is one string.
        """
        from ..process.sandbox import SANDBOX_MODES

        if not isinstance(command, str) or not command:
            raise ValueError("command must be a non-empty string")
        if sandbox not in SANDBOX_MODES:
            raise ValueError(f"sandbox must be one of {', '.join(SANDBOX_MODES)}, not {sandbox!r}")
        if isinstance(args, str):
            raise TypeError("args must be a sequence of strings, not one string")
        super().__init__(
            name or os.path.basename(command) or command,
            startup_timeout,
            timeout,
            max_result_chars,
            max_message_bytes=max_message_bytes,
            roots=roots,
            elicitation=elicitation,
            sampling=sampling,
        )
        self.command = command
        self.args = tuple(str(a) for a in args)
        self.env = dict(env or {})
        self.cwd = None if cwd is None else os.fspath(cwd)
        self.sandbox = sandbox
        self._box: Sandbox | None = None  # made at the first start (raises SandboxUnavailable)

    def __repr__(self) -> str:
        """``StdioMCPServer(name, command args...)`` (no environment values)."""
        return f"StdioMCPServer({self.name!r}, {' '.join((self.command, *self.args))!r})"

    def _secrets(self) -> list[str]:
        from ..process.environment import secret_values

        return secret_values(os.environ, self.env)

    def close(self) -> None:
        """End the session, stop the process group and remove the sandbox's temporary folder
        (when the server was sandboxed). Never raises."""
        super().close()
        box = self._box
        if box is not None:
            box.close()

    def _open(self) -> Transport:
        from ..process.environment import scrubbed_environ
        from ..process.sandbox import sandbox_for
        from ._stdio import StdioTransport

        if self._box is None and self.sandbox != "none":
            self._box = sandbox_for(self.sandbox, self.cwd or os.getcwd())
        environ = scrubbed_environ()
        environ.update(self.env)
        argv = (self.command, *self.args)
        box, clean = self._box, self.secrets.clean
        return StdioTransport(self.name, argv, environ, self.cwd, self.max_message_bytes, box, clean)


def mcp_tools(servers: Iterable[MCPServerBase], reserved: Iterable[str] = ()) -> list[Tool]:
    """The tools of several servers for one run, every name unique.

    Args:
        servers: started (or startable) servers.
        reserved: names of the run's other tools (e.g. the built-in ones).

    Returns:
        The servers' tools in order; a name that two servers share, or that is reserved, becomes
        ``SERVER__TOOL`` for each server that has it.

    Raises:
        MCPError: a server could not be started or listed.
    """
    from ._tools import safe_name

    servers = list(servers)
    listed = [[safe_name(d["name"]) for d in s.list_tools()] for s in servers]
    taken = set(reserved)
    tools: list[Tool] = []
    for index, server in enumerate(servers):
        others = {n for j, names in enumerate(listed) if j != index for n in names}
        found = server.tools(taken | others)
        taken.update(t.name for t in found)
        tools.extend(found)
    return tools
