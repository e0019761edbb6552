"""``LocalServer``: llama.cpp's own HTTP server, in a child process of this one, on 127.0.0.1.

``xllamacpp`` is imported only by the server's child process (``child``), so importing this
module costs nothing. The child runs in its own session, so a Ctrl-C on the terminal reaches
only this process; ``close()`` kills it at once (``SIGKILL``, never waiting on llama.cpp); so
does process exit (``atexit``), and the child exits by itself when this process dies (its stdin
pipe closes). Its process group is in ``process.groups``' registry, which the CLI's emergency
exit kills. ``native_client()`` / ``openai_client()`` / ``anthropic_client()`` return miniagent
clients bound to it.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import json
import os
import select
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from ..._folders import own_folder
from ...model import ModelClient
from ...process.groups import register_group, unregister_group
from .http_clients import LocalAnthropicClient, LocalOpenAIClient
from .model_file import (
    DEFAULT_MAX_OUTPUT_TOKENS,
    DEFAULT_MODEL_ALIAS,
    DEFAULT_MODEL_FILE,
    LOCAL_PRICES,
    Api,
    LocalModelError,
    damaged_model_advice,
    resolve_model_path,
)
from .native import LocalChatClient
from .template import CHAT_TEMPLATE

__all__ = ["LocalServer"]


def _check_xllamacpp() -> None:
    """Raise ``LocalModelError`` when the ``xllamacpp`` wheel is not installed (not imported here:
    only the server's child process imports it)."""
    if "xllamacpp" in sys.modules and sys.modules["xllamacpp"] is None:  # blocked on purpose
        found = None
    else:
        try:
            found = importlib.util.find_spec("xllamacpp")
        except (ImportError, ValueError):
            found = None
    if found is None:
        raise LocalModelError("the local model needs the xllamacpp package: pip install 'miniagent[local]'")


def _free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (bind to port 0, read it, close)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _default_threads() -> int:
    """CPU threads of a new server: ``MINIAGENT_LOCAL_THREADS`` when set, else the CPU count
    (at most 8). Two servers never generate at once (``LocalChatClient`` takes turns through a
    lock file), so each may use every core."""
    chosen = os.environ.get("MINIAGENT_LOCAL_THREADS", "").strip()
    if chosen.isdigit() and int(chosen) > 0:
        return int(chosen)
    return max(1, min(os.cpu_count() or 2, 8))


def _stderr_tail(log: IO[bytes] | None, limit: int = 600) -> str:
    """The last ``limit`` characters the child wrote on stderr (one line), or ``""``."""
    if log is None:
        return ""
    try:
        log.seek(0)
        text = log.read().decode("utf-8", "replace")
    except (OSError, ValueError):
        return ""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return " | ".join(lines)[-limit:]


class LocalServer:
    """One llama.cpp HTTP server on 127.0.0.1, run by a child process of this one.

    The child (``python -m miniagent.providers.local.child``, the same ``xllamacpp`` wheel and
    model) runs in its own session, so a Ctrl-C on the terminal reaches only this process.
    ``close()`` kills it with ``SIGKILL`` and reaps it: it never waits on llama.cpp (whose
    destructor would hold the interpreter lock for seconds). When this process dies in any way,
    the child sees end of file on the pipe it reads and exits too.

    Starting blocks until the model is loaded and ``/health`` answers OK. Use as a context
    manager, or call ``close()``; an ``atexit`` hook closes it at interpreter exit otherwise.

    Args:
        model: see ``resolve_model_path`` (``None``: the default SmolLM2-135M-Instruct, fetched
            once into the cache).
        alias: the model name the server reports (default ``"smollm2-135m-instruct"`` for the
            default model, else the file's stem). Requests may send any model name.
        n_ctx: context size in tokens shared by the prompt and the answer (4096).
        threads: CPU threads for generation and prompt processing (default:
            ``MINIAGENT_LOCAL_THREADS``, else the CPU count, at most 8).
        seed: sampling seed (with temperature 0 the output is deterministic anyway).
        temperature: the server's default sampling temperature (0: greedy). Requests that send
            their own ``temperature`` override it.
        chat_template: the Jinja chat template of the OpenAI and Anthropic endpoints (default:
            the tool-calling template of ``template``); ``None`` keeps the GGUF's own
            template (no tool calls).
        port: TCP port on 127.0.0.1 (default: a free one, picked by binding to port 0).
        startup_timeout: seconds to wait for the model to load and ``/health`` to answer.
        verbose: let llama.cpp log to stderr (off by default: the CLI's output stays clean).
        prompt_cache: a folder for llama.cpp's slot files (``/slots?action=save|restore``), or
            ``None`` (default): no slot files.

    Attributes:
        base_url: ``http://127.0.0.1:PORT`` (no trailing slash, no ``/v1``).
        port: the TCP port the server listens on.
        pid: the process id of the child.
        model_path: the GGUF file (``resolve_model_path(model)``).
        alias: the model name the server answers to.
        temperature: as given.
        n_ctx: as given (tokens).
        prompt_cache: as given, as a ``Path`` (or ``None``).

    Raises:
        LocalModelError: ``xllamacpp`` is not installed, the model file is missing, the server
            failed to start (the text names the model file and what llama.cpp said; for the
            cached default model it also says to delete that file, fetched again then, and
            whether its size is wrong) or was not healthy within ``startup_timeout`` seconds.
    """

    def __init__(
        self,
        model: str | os.PathLike[str] | None = None,
        *,
        alias: str | None = None,
        n_ctx: int = 4096,
        threads: int | None = None,
        seed: int = 42,
        temperature: float = 0.0,
        chat_template: str | None = CHAT_TEMPLATE,
        port: int | None = None,
        startup_timeout: float = 60.0,
        verbose: bool = False,
        prompt_cache: str | os.PathLike[str] | None = None,
    ) -> None:
        _check_xllamacpp()
        self.model_path: Path = resolve_model_path(model)
        is_default = self.model_path.name == DEFAULT_MODEL_FILE
        self.alias: str = alias or (DEFAULT_MODEL_ALIAS if is_default else self.model_path.stem)
        self._lock = threading.Lock()
        self.temperature: float = temperature
        self.n_ctx: int = n_ctx
        self.prompt_cache: Path | None = Path(prompt_cache) if prompt_cache is not None else None
        if self.prompt_cache is not None:
            own_folder(self.prompt_cache)
        settings = {
            "model": str(self.model_path),
            "alias": self.alias,
            "n_ctx": n_ctx,
            "threads": threads if threads is not None else _default_threads(),
            "seed": seed,
            "temperature": temperature,
            "chat_template": chat_template,
            "slot_save_path": str(self.prompt_cache) if self.prompt_cache is not None else None,
            "verbose": verbose,
            "ports": [port] if port is not None else [_free_port() for _ in range(3)],
        }
        # The child's stderr (llama.cpp's messages), read back when the start fails.
        self._log: IO[bytes] | None = None
        if not verbose:
            self._log = tempfile.TemporaryFile(prefix="miniagent-llama-")  # noqa: SIM115 (closed by close())
        self._process: subprocess.Popen[bytes] | None = subprocess.Popen(
            [sys.executable, "-m", "miniagent.providers.local.child"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            start_new_session=True,  # a terminal's Ctrl-C reaches only us
        )
        self.pid: int = self._process.pid
        # Its own session, so its process group id is its pid: the registry of child groups
        # that the CLI's emergency exit (a second Ctrl-C) kills at once.
        register_group(self.pid)
        atexit.register(self.close)
        try:
            self.port: int = self._handshake(settings, startup_timeout)
            self.base_url: str = f"http://127.0.0.1:{self.port}"
            self._wait_healthy(startup_timeout)
        except BaseException:
            self.close()
            raise

    def _handshake(self, settings: dict[str, Any], timeout: float) -> int:
        """Send the settings, wait for ``{"port": N}`` (or an error) from the child."""
        process = self._process
        assert process is not None and process.stdin is not None and process.stdout is not None
        try:
            process.stdin.write(json.dumps(settings).encode() + b"\n")
            process.stdin.flush()
        except OSError as exc:
            raise self._start_error(f"could not send the settings: {exc}") from None
        deadline = time.monotonic() + timeout
        answer = b""
        while not answer.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0:
                raise LocalModelError(
                    f"the local model (llama.cpp server with {self.model_path}) did not start within "
                    f"{timeout:g} s (a loaded machine? library: LocalServer(startup_timeout=...))"
                )
            ready, _, _ = select.select([process.stdout], [], [], min(left, 0.5))
            if ready:
                chunk = os.read(process.stdout.fileno(), 4096)
                if not chunk:
                    process.wait()
                    reason = f"the server process exited with code {process.returncode}"
                    tail = _stderr_tail(self._log)
                    raise self._start_error(f"{reason} ({tail})" if tail else reason)
                answer += chunk
        try:
            reply = json.loads(answer)
        except ValueError:
            raise self._start_error(f"unexpected answer {answer[:200]!r}") from None
        if "port" not in reply:
            raise self._start_error(str(reply.get("error") or reply))
        port: int = reply["port"]
        return port

    def _start_error(self, reason: str) -> LocalModelError:
        message = f"llama.cpp server failed to start with {self.model_path}: {reason}"
        advice = damaged_model_advice(self.model_path)
        if advice:
            message = f"{message.rstrip('.')}. {advice}"
        return LocalModelError(message)

    def _wait_healthy(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        last = "no answer"
        while True:
            try:
                with urllib.request.urlopen(f"{self.base_url}/health", timeout=2.0) as answer:
                    if answer.status == 200:
                        return
                    last = f"HTTP {answer.status}"
            except urllib.error.HTTPError as exc:  # 503 while loading
                last = f"HTTP {exc.code}"
            except OSError as exc:
                last = str(exc)
            if time.monotonic() >= deadline:
                raise LocalModelError(
                    f"the local model's server at {self.base_url} not healthy after {timeout:g} s ({last})"
                )
            time.sleep(0.05)

    @property
    def running(self) -> bool:
        """``True`` until ``close()`` (or until the child process died)."""
        process = self._process
        return process is not None and process.poll() is None

    @property
    def openai_base_url(self) -> str:
        """The OpenAI-compatible API root, ``http://127.0.0.1:PORT/v1``."""
        return f"{self.base_url}/v1"

    def openai_client(self, **options: Any) -> ModelClient:
        """Return a ``LocalOpenAIClient`` (an ``OpenAIChatClient`` whose errors name the local
        model) for this server (``POST {base_url}/v1/chat/completions``).

        ``options`` go to ``OpenAIChatClient`` as keyword arguments; ``temperature`` defaults to
        the server's (0), ``max_tokens`` to 1024 (a runaway answer of the small model stops
        after ~10 s), ``prices`` to ``LOCAL_PRICES`` and ``tool_call_markup`` to true (a
        ``<tool_call>`` block that llama.cpp's parser missed is still a call, issue 11). The
        client does not own the server: closing the server is the caller's job.
        """
        options = {
            "temperature": self.temperature,
            "max_tokens": DEFAULT_MAX_OUTPUT_TOKENS,
            "tool_call_markup": True,
            "prices": LOCAL_PRICES,
            **options,
        }
        client: ModelClient = LocalOpenAIClient(self.alias, base_url=self.openai_base_url, **options)
        return client

    def anthropic_client(self, **options: Any) -> ModelClient:
        """Return a ``LocalAnthropicClient`` (an ``AnthropicClient`` whose errors name the local
        model) for this server (``POST {base_url}/v1/messages``).

        ``options`` go to ``AnthropicClient`` as keyword arguments; ``temperature`` defaults to
        the server's (0), ``max_tokens`` to 1024, ``prices`` to ``LOCAL_PRICES`` and
        ``prompt_cache`` to off (llama.cpp reuses the longest common prefix by itself and has no
        use for ``cache_control``). The client does not own the server.
        """
        options = {
            "temperature": self.temperature,
            "max_tokens": DEFAULT_MAX_OUTPUT_TOKENS,
            "prices": LOCAL_PRICES,
            "prompt_cache": False,
            **options,
        }
        client: ModelClient = LocalAnthropicClient(self.alias, base_url=self.base_url, **options)
        return client

    def native_client(self, **options: Any) -> ModelClient:
        """Return a ``LocalChatClient`` for this server: llama.cpp's own ``/completion`` with our
        prompt format and a grammar that allows one tool call or a final answer.

        ``options`` go to ``LocalChatClient`` (``max_tokens``, ``stream_timeout``, ``timeout``,
        ...). The client does not own the server.
        """
        options = {"temperature": self.temperature, **options}
        client: ModelClient = LocalChatClient(self, **options)
        return client

    def client(self, api: Api = "native", **options: Any) -> ModelClient:
        """Return ``native_client``, ``openai_client`` or ``anthropic_client`` (``**options``).

        Raises:
            ValueError: ``api`` is not ``"native"``, ``"openai"`` or ``"anthropic"``.
        """
        if api == "native":
            return self.native_client(**options)
        if api == "openai":
            return self.openai_client(**options)
        if api == "anthropic":
            return self.anthropic_client(**options)
        raise ValueError(f"api must be 'native', 'openai' or 'anthropic', not {api!r}")

    def close(self) -> None:
        """Stop the server at once: ``SIGKILL`` to the child, then reap it (milliseconds).
        Idempotent; safe from any thread. A request in flight is cut off (its client sees a
        broken stream)."""
        with self._lock:
            process, self._process = self._process, None
        if process is None:
            return
        atexit.unregister(self.close)
        _kill(process)
        unregister_group(process.pid)
        for stream in (process.stdin, process.stdout, self._log):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()

    def __enter__(self) -> LocalServer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "running" if self.running else "closed"
        where = getattr(self, "base_url", "?")
        return f"LocalServer({str(self.model_path)!r}, base_url={where!r}, {state})"


def _kill(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL the child (no destructor, no waiting on llama.cpp) and reap it."""
    with contextlib.suppress(OSError):
        process.kill()
    with contextlib.suppress(subprocess.TimeoutExpired, OSError):
        process.wait(timeout=5)
