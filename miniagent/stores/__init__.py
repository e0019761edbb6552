"""Session stores beyond the JSONL file: ``SQLiteSession`` (stdlib) and ``RedisSession`` (extra
``redis``). Each is a ``SessionStore`` (``miniagent.session``) for ``run_agent(session=store)``.

The store modules are imported on first use of their name, so ``import miniagent.stores`` costs
neither ``sqlite3`` nor ``redis``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..session import JSONLSession, SessionStore

if TYPE_CHECKING:
    from .redis_store import RedisSession
    from .sqlite_store import SQLiteSession

__all__ = ["SessionStore", "JSONLSession", "SQLiteSession", "RedisSession"]

_LAZY = {"SQLiteSession": ".sqlite_store", "RedisSession": ".redis_store"}


def __getattr__(name: str) -> Any:
    """Import ``SQLiteSession`` / ``RedisSession`` on first use."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(module, __name__), name)
