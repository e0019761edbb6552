"""``LocalChatClient``: the embedded model through llama.cpp's own ``/completion`` endpoint.

Invariants:

- The prompt comes from ``prompt``, the grammar of each reply from ``grammar``
  (a tool call with copied arguments, or an answer quoting the tool result); temperature 0
  (greedy) unless told otherwise.
- A request longer than the server's context (llama.cpp's ``exceed_context_size_error``)
  raises a ``ProviderError`` that says so and what to do ("shorten the request"), not only
  the server's words.
- Every request sends ``n_predict`` (the output-token limit, default 1,024). A reply that
  reaches it (``stop_type: "limit"``) ends with ``DoneEvent("limit", "max_output_tokens")``, so
  the loop never takes it for a short or empty answer (``IncompleteResponseError``); a tool
  call it cut comes with an input error saying so (``cut_call_problem``), or not at all when
  even its name was cut.
- A reply that repeats itself (the same piece of at least 4 characters written back to back
  until it covers 160 characters, or 4 times for longer pieces) is stopped at once and raises
  ``LocalModelError`` (kind ``"repetition"``).
- Prompt cache: the fixed prefix (system turn, tools and demos) is evaluated once per server
  and, when the server has a ``prompt_cache`` folder, once per machine: after the first reply
  the server's slot is saved to ``<prompt_cache>/prefix-<hash>.bin`` (written under a
  temporary name, then renamed), and a later server restores it before its first request, so
  only the new part of the prompt is evaluated. The hash covers the model file (path, size,
  mtime), the context size and the prefix text. A slot file that fails to restore is ignored.
- Embedded servers on one machine take turns: each reply holds ``local-model.lock`` in the
  cache folder (``one_at_a_time``); a cancel while waiting ends the reply before it starts.
- Text is streamed as it comes (``TextEvent`` per chunk); a tool call is one ``ToolCallEvent``
  when the reply ends; then a ``UsageEvent`` (llama.cpp's token counts, cost 0) and
  ``DoneEvent(stop_type, incomplete)``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import sys
import threading
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Protocol

from ..._folders import own_folder
from ..._json import loads
from ...errors import IncompleteReason, ProviderError
from ...messages import ToolCall
from ...model import DoneEvent, ModelEvent, ModelRequest, TextEvent, ToolCallEvent, UsageEvent
from ...net.sse import SSEEvent
from ...output import with_output_instruction
from ...usage import Usage
from .._client import HTTPClient
from .._config import HTTPSettings
from .._decode import count as token_count
from .._decode import load_event_json, parse_tool_input
from .._endings import cut_call
from .._errors import in_stream_error
from .grammar import turn_grammar
from .model_file import DEFAULT_MAX_OUTPUT_TOKENS, LocalModelError, cache_dir
from .prompt import last_request, nearest_demo, render

__all__ = ["LocalChatClient", "RepetitionGuard", "Server"]


class Server(Protocol):
    """What ``LocalChatClient`` needs of its server (a ``LocalServer`` has it)."""

    alias: str
    """The model name the server answers to."""
    base_url: str
    """``http://127.0.0.1:PORT``."""
    model_path: Path
    """The GGUF file the server loaded (part of the prompt-cache key)."""
    n_ctx: int
    """The context size in tokens (part of the prompt-cache key)."""
    prompt_cache: Path | None
    """The folder of saved prefix slots, or ``None`` for no cache on disk."""


PROVIDER = "local model"
_CALL_NAME = re.compile(r'"name"\s*:\s*("(?:[^"\\]|\\.)*")')  # the name of a cut <tool_call>
_log = logging.getLogger("miniagent.providers.local")
_MAX_SLOT_FILES = 8


class RepetitionGuard:
    """Detects a reply stuck in a loop: the text ends with one piece written back to back.

    ``feed(text)`` returns ``True`` once the accumulated text ends with a period-``k`` run
    (``4 <= k <= 200``) of at least ``max(4 * k, 160)`` characters. Legitimate repetition in
    short answers (a few equal lines) stays below that.
    """

    def __init__(self, min_run: int = 160, max_period: int = 200) -> None:
        self.text = ""
        self.min_run = min_run
        self.max_period = max_period

    def feed(self, chunk: str) -> bool:
        """Add ``chunk``; ``True`` when the text now ends in a loop."""
        self.text += chunk
        text = self.text
        for period in range(4, self.max_period + 1):
            run = max(4 * period, self.min_run)
            if len(text) < run:
                break
            tail = text[-run:]
            if tail[period:] == tail[:-period]:
                return True
        return False


class LocalChatClient(HTTPClient):
    """A ``ModelClient`` for a running ``LocalServer``: ``POST /completion`` with ``stream``.

    Args:
        server: the running server (its ``base_url``, ``model_path``, ``n_ctx``,
            ``prompt_cache``).
        temperature: sampling temperature (default 0: greedy, deterministic).
        max_tokens: output-token limit of one reply (default 1,024).
        allow_answer_first: whether the first reply to a user message may be a text answer;
            ``False`` (default) forces a tool call there (the 135M model otherwise often
            invents an answer); answers follow tool results.
        settings: the HTTP settings (``HTTPSettings``: ``stream_timeout`` bounds one whole
            reply and raises ``ProviderError`` kind ``"stream_timeout"``, ``read_timeout``,
            ``retry``...), as for ``OpenAIChatClient``.

    Attributes:
        last_stats: what llama.cpp reported for the last finished reply: ``prompt_tokens``,
            ``cached_tokens`` (reused from the prompt cache), ``evaluated_tokens``,
            ``output_tokens``, ``stop_type``.

    Raises:
        LocalModelError: from ``stream``: the reply repeated itself.
    """

    _provider = PROVIDER
    _key_env = "MINIAGENT_LOCAL_API_KEY"

    def __init__(
        self,
        server: Server,
        *,
        settings: HTTPSettings | None = None,
        temperature: float | None = 0.0,
        max_tokens: int | None = None,
        allow_answer_first: bool = False,
        **ignored: Any,
    ) -> None:
        """Configure the client; no request is made until ``stream``. Options of the HTTP clients
        that do not apply here (``prices``: a local model costs 0; ``tool_call_markup``,
        ``prompt_cache``: this client's own prompt and cache) are accepted and ignored."""
        unknown = set(ignored) - {"prices", "tool_call_markup", "prompt_cache"}
        if unknown:
            raise TypeError(f"LocalChatClient got unexpected options: {', '.join(sorted(unknown))}")
        super().__init__(server.alias, server.base_url, None, settings=settings, temperature=temperature)
        self.server = server
        self.max_tokens: int = max_tokens if max_tokens is not None else DEFAULT_MAX_OUTPUT_TOKENS
        self.allow_answer_first = allow_answer_first
        self.last_stats: dict[str, Any] = {}
        self.lock_path: Path | None = _default_lock_path()
        self._slot_prefix: str | None = None  # the prefix the server's slot holds, when known

    def _auth_headers(self, key: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {key}"}

    def __repr__(self) -> str:
        return f"LocalChatClient(model={self.model!r}, base_url={self.base_url!r})"

    # --- one reply -----------------------------------------------------------------------------

    def stream(self, request: ModelRequest) -> Iterator[ModelEvent]:
        """Stream one assistant turn for ``request`` (see the module's invariants).

        Returns:
            A generator of ``TextEvent``s (a text answer, as it is written) or one
            ``ToolCallEvent`` (a call, when the reply ends), then ``DoneEvent`` (with
            ``incomplete="max_output_tokens"`` when the output-token limit cut the reply). Ends
            quietly, possibly early, once ``request.cancel`` is set.

        Raises:
            LocalModelError: a repeating reply.
            ProviderError: the server failed (e.g. the prompt is longer than the context).
        """
        tools = request.tools
        demo = nearest_demo(last_request(request.messages), tools)
        system = request.system
        if request.output_schema is not None:
            system = with_output_instruction(system, request.output_schema)
        fixed, rest = render(system, request.messages, tools, demo)
        grammar = turn_grammar(
            request.messages,
            tools,
            demo,
            allow_answer_first=self.allow_answer_first,
            output_schema=request.output_schema,
        )
        body: dict[str, Any] = {
            "prompt": fixed + rest,
            "n_predict": self.max_tokens,
            "stream": True,
            "cache_prompt": True,
            "id_slot": 0,
            "grammar": grammar,
        }
        if self.temperature is not None:
            body["temperature"] = self.temperature
        return self._reply(body, request, fixed)

    def _reply(self, body: dict[str, Any], request: ModelRequest, fixed: str) -> Iterator[ModelEvent]:
        with one_at_a_time(self.lock_path, request.cancel) as turn:
            if turn:
                yield from self._reply_now(body, request, fixed)

    def _reply_now(self, body: dict[str, Any], request: ModelRequest, fixed: str) -> Iterator[ModelEvent]:
        if fixed and fixed != self._slot_prefix:
            self._restore_prefix(fixed)
        done = False
        try:
            for event in self._stream("/completion", body, request, self._map):
                if isinstance(event, DoneEvent):
                    done = True
                yield event
        except ProviderError as error:
            if error.kind != "exceed_context_size_error":
                raise
            raise ProviderError(
                f"{error}: the embedded model reads at most {self.server.n_ctx:,} tokens (about "
                f"{3 * self.server.n_ctx:,} characters) of prompt, tools and conversation; shorten "
                "the request, or use a bigger model (--provider openai with a local server)",
                status=error.status,
                retryable=False,
                kind=error.kind,
            ) from None
        if done and fixed and fixed != self._slot_prefix:
            self._slot_prefix = fixed
            self._save_prefix(fixed)

    def _map(self, events: Iterable[SSEEvent], *, secrets: tuple[str, ...] = ()) -> Iterator[ModelEvent]:
        """Map ``/completion`` stream events (``{"content", "stop", "stop_type", ...}``)."""
        text = ""
        is_call: bool | None = None
        guard = RepetitionGuard()
        final: dict[str, Any] | None = None
        for event in events:
            if not event.data:
                continue
            chunk = load_event_json(event, PROVIDER, secrets)
            if not isinstance(chunk, dict):
                continue
            if chunk.get("error"):
                raise in_stream_error(PROVIDER, chunk, secrets)
            piece = chunk.get("content")
            if isinstance(piece, str) and piece:
                text += piece
                if is_call is None:
                    is_call = text.startswith("<")
                if not is_call:
                    yield TextEvent(piece)
                if guard.feed(piece):
                    raise LocalModelError(
                        f"the local model repeated itself ({len(text):,} characters, the last "
                        f"ones in a loop) and was stopped; rephrase the request or start a new session",
                        kind="repetition",
                    )
            if chunk.get("stop"):
                final = chunk
                break
        if final is not None:
            reported = final.get("timings")
            timings: dict[str, Any] = reported if isinstance(reported, dict) else {}
            self.last_stats = {
                "prompt_tokens": final.get("tokens_evaluated"),
                "cached_tokens": timings.get("cache_n"),
                "evaluated_tokens": timings.get("prompt_n"),
                "output_tokens": final.get("tokens_predicted"),
                "stop_type": final.get("stop_type"),
            }
        if final is None:
            raise LocalModelError(
                "the local model's stream ended before the reply was complete", retryable=True
            )
        stop_type = final.get("stop_type")
        stop_type = stop_type if isinstance(stop_type, str) else None
        incomplete: IncompleteReason | None = "max_output_tokens" if stop_type == "limit" else None
        call = _reply_call(text, stop_type) if is_call else None
        if call is not None:
            yield ToolCallEvent(call)
        yield UsageEvent(_usage(self.last_stats))
        yield DoneEvent(stop_type, incomplete)

    # --- the prompt cache on disk ---------------------------------------------------------------

    def _slot_file(self, fixed: str) -> Path | None:
        folder = self.server.prompt_cache
        if folder is None:
            return None
        model = self.server.model_path
        try:
            stat = model.stat()
        except OSError:
            return None
        key = f"{model.resolve()}\0{stat.st_size}\0{stat.st_mtime_ns}\0{self.server.n_ctx}\0{fixed}"
        return folder / f"prefix-{hashlib.sha256(key.encode()).hexdigest()[:24]}.bin"

    def _slot_action(self, action: str, filename: str) -> bool:
        url = f"{self.base_url}/slots/0?action={action}"
        data = json.dumps({"filename": filename}).encode()
        call = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(call, timeout=30) as answer:
                answer.read()
                return True
        except (OSError, urllib.error.URLError) as exc:
            _log.debug("slot %s of %s failed: %s", action, filename, exc)
            return False

    def _restore_prefix(self, fixed: str) -> None:
        path = self._slot_file(fixed)
        if path is None or not path.is_file():
            return
        if self._slot_action("restore", path.name):
            self._slot_prefix = fixed
            with contextlib.suppress(OSError):
                os.utime(path)  # most recently used: kept when old files are pruned

    def _save_prefix(self, fixed: str) -> None:
        path = self._slot_file(fixed)
        if path is None or path.is_file():
            return
        partial = path.with_name(f"{path.stem}.{os.getpid()}.part")
        if self._slot_action("save", partial.name):
            try:
                os.replace(partial, path)
            except OSError as exc:
                _log.debug("could not keep the prompt cache %s: %s", path, exc)
        with contextlib.suppress(OSError):
            partial.unlink(missing_ok=True)
        _prune(path.parent)


def _default_lock_path() -> Path | None:
    try:
        folder = own_folder(cache_dir())
    except OSError:
        return None
    return folder / "local-model.lock"


@contextlib.contextmanager
def one_at_a_time(path: Path | None, cancel: threading.Event | None) -> Iterator[bool]:
    """Hold an exclusive ``flock`` on ``path`` for one reply: embedded servers on one machine
    take turns instead of generating at once.

    Why: llama.cpp's threads wait for each other at every step; two servers with a thread per
    core each made every step wait for the scheduler (measured on 2 cores: 180 s for what one
    server did in 8 s; taking turns, the two jobs end in about twice the time of one).

    Yields ``True`` once the lock is held (released when the block ends, or when this process
    dies), ``False`` when ``cancel`` was set while waiting (the reply is then not started).
    Without a usable lock file (``None``, unwritable) it yields ``True`` at once. A wait says so
    once on stderr (``waiting_notice``), so a run that seems stuck tells why.
    """
    import fcntl  # POSIX; imported where used

    try:
        handle = open(path, "a+b") if path is not None else None  # noqa: SIM115 (held below)
    except OSError:
        handle = None
    if handle is None:
        yield True
        return
    waiting = cancel if cancel is not None else threading.Event()  # never set: plain waits
    told = False
    with handle:
        while True:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not told:
                    told = waiting_notice(path)
                if waiting.wait(0.05):
                    yield False
                    return
        try:
            yield True
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def waiting_notice(path: Path | None) -> bool:
    """Tell stderr that this run waits for another run's turn of the local model (the lock file
    ``path``); returns ``True``. Written straight to stderr, as the model download's progress
    is, so it shows with and without ``-v``."""
    sys.stderr.write(
        f"miniagent: waiting for another run of the local model to finish its turn (lock: {path})\n"
    )
    sys.stderr.flush()
    return True


def _prune(folder: Path) -> None:
    """Keep the ``_MAX_SLOT_FILES`` most recently used slot files."""
    with contextlib.suppress(OSError):
        files = sorted(folder.glob("prefix-*.bin"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in files[_MAX_SLOT_FILES:]:
            old.unlink(missing_ok=True)


def _usage(stats: dict[str, Any]) -> Usage:
    """One request's ``Usage`` from llama.cpp's counts: every prompt token (cached ones included),
    the cached part as ``cache_read_tokens``; a local model costs nothing (``cost_usd`` 0).

    Raises:
        ProviderError: a count that is not a token count (``_decode.count``).
    """

    def count(key: str) -> int:
        return token_count(stats.get(key), key, PROVIDER)

    return Usage(
        input_tokens=count("prompt_tokens"),
        output_tokens=count("output_tokens"),
        cache_read_tokens=count("cached_tokens"),
        requests=1,
        cost_usd=0.0,
    )


def _reply_call(text: str, stop_type: str | None) -> ToolCall | None:
    """The call of a ``<tool_call>`` reply; one the output-token limit cut (``stop_type``
    ``"limit"`` and no whole JSON) is ``cut_call`` of its id and name (``None`` without a name)."""
    call = _parse_call(text)
    if stop_type != "limit" or call.input_error is None:
        return call
    found = _CALL_NAME.search(text)
    try:
        name = json.loads(found.group(1)) if found is not None else ""
    except ValueError:
        name = ""
    return cut_call(call.id, name, "max_output_tokens", stop_type)


def _parse_call(text: str) -> ToolCall:
    """The ``ToolCall`` in a ``<tool_call>`` reply (the grammar guarantees its shape)."""
    inner = text.strip().removeprefix("<tool_call>").removesuffix("</tool_call>").strip()
    call_id = f"call_{uuid.uuid4().hex[:24]}"
    try:
        data = loads(inner)  # depth-safe (miniagent._json)
        name = str(data["name"])
        arguments = json.dumps(data.get("arguments", {}))
    except (ValueError, KeyError, TypeError) as exc:
        return ToolCall(call_id, "unknown", {}, f"the tool call is not valid JSON: {exc}")
    tool_input, error = parse_tool_input(arguments)
    return ToolCall(call_id, name, tool_input, error)
