"""``RedisSession``: a session every worker can reach, in Redis (extra ``redis``).

Invariants (the JSONL file's promises, DESIGN.md "Session stores"):

- Messages live in the list ``miniagent:session:<id>:messages``, one session line's JSON text per
  item, only ever pushed on the right.
- One writer per session: a lease, the key ``miniagent:session:<id>:lease`` holding this store's
  token with an expiry of ``lease_seconds``. It is taken with ``SET NX`` (a second writer fails at
  once with ``SessionError``) and renewed every ``lease_seconds / 3`` by a daemon thread while the
  store is open, so the lease of a killed process expires and a live one's never does.
- Every append is fenced: one Lua script checks that the lease still holds this store's token and
  that the list has the length this store expects, then pushes. A store that lost its lease (its
  process paused longer than the lease, another writer took over) stores nothing more and raises
  ``SessionError``; so does its next ``load()``.
- ``owner``: a name kept in the token. A store created with the same ``owner`` as the lease's
  current holder takes the lease over at once (a task delivered again after its worker died);
  the holder's next append then fails, so two writers never interleave.
- A message is in Redis when ``append`` returns (what Redis persists across its own restart is
  its configuration: AOF/RDB).
"""

from __future__ import annotations

import secrets
import threading
from typing import Any

from ..errors import SessionError
from ..messages import Message
from ..session import StoreContext, decode_record, encode_record

__all__ = ["RedisSession"]

_KEY_PREFIX = "miniagent:session:"

# KEYS[1] lease, KEYS[2] list; ARGV[1] token, ARGV[2] expected length, ARGV[3] record
_APPEND = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
if redis.call('LLEN', KEYS[2]) ~= tonumber(ARGV[2]) then return -2 end
return redis.call('RPUSH', KEYS[2], ARGV[3])
"""
# KEYS[1] lease; ARGV[1] token, ARGV[2] lease in ms
_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
"""
# KEYS[1] lease; ARGV[1] token
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""
# KEYS[1] lease; ARGV[1] token, ARGV[2] lease in ms, ARGV[3] owner prefix ("" = never take over)
_ACQUIRE = """
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
if ARGV[3] ~= '' then
  local held = redis.call('GET', KEYS[1])
  if held and string.sub(held, 1, string.len(ARGV[3])) == ARGV[3] then
    redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
    return 2
  end
end
return 0
"""


class RedisSession(StoreContext):
    """One session in Redis, open for one writer: a ``SessionStore``.

    Args:
        url: the Redis server, e.g. ``redis://127.0.0.1:6379/0`` (``redis.Redis.from_url``).
        session_id: the session's name (e.g. the caller's run id).
        lease_seconds: how long the lease outlives a writer that stopped renewing it (seconds,
            > 0); a killed writer's session is free again after at most this long.
        owner: optional stable name of the writer (e.g. a task id): a store with the same owner
            as the current holder takes the lease over instead of failing.

    Raises (from ``load`` and ``append``):
        SessionError: another writer holds the lease, this store lost its lease, a stored record
            is unreadable, or (``append``) a message the loader would refuse.
        ModuleNotFoundError: the ``redis`` package is missing (``pip install 'miniagent[redis]'``).
        redis.RedisError: the server cannot be reached or failed.
    """

    def __init__(
        self, url: str, session_id: str, lease_seconds: float = 30, *, owner: str | None = None
    ) -> None:
        if not isinstance(session_id, str):
            raise TypeError(f"session_id must be a str, not {type(session_id).__name__}")
        if not lease_seconds > 0:
            raise ValueError(f"lease_seconds must be > 0, got {lease_seconds!r}")
        if owner is not None and ("|" in owner or not owner):
            raise ValueError("owner must be a non-empty string without '|'")
        try:
            import redis
        except ModuleNotFoundError as error:
            raise ModuleNotFoundError(
                "RedisSession needs the redis package: pip install 'miniagent[redis]'", name=error.name
            ) from None
        self.url = url
        self.session_id = session_id
        self.lease_seconds = lease_seconds
        self.owner = owner
        self._where = f"redis session {session_id!r}"
        timeout = max(1.0, float(lease_seconds))  # a silent server cannot hang a write or close()
        self._client: Any = redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout)
        self._lease_key = f"{_KEY_PREFIX}{session_id}:lease"
        self._list_key = f"{_KEY_PREFIX}{session_id}:messages"
        self._token = f"{owner or ''}|{secrets.token_hex(16)}"
        self._held = False
        self._lost = threading.Event()
        self._closed = threading.Event()
        self._renewer: threading.Thread | None = None
        self._history: list[Message] | None = None
        self._count = 0

    # --- the SessionStore protocol -----------------------------------------------------------------

    def load(self) -> list[Message]:
        """Take the lease and return the messages, oldest first (read once, then from memory)."""
        self._check_lease()
        if self._history is not None:
            return list(self._history)
        records = self._client.lrange(self._list_key, 0, -1)
        messages = [decode_record(self._where, record, number) for number, record in enumerate(records, 1)]
        self._count = len(messages)
        self._history = list(messages)
        return messages

    def append(self, message: Message) -> None:
        """Push one message after the others, only while this store holds the lease."""
        record = encode_record(self._where, message)
        self._check_lease()
        if self._history is None and self._count == 0:
            self._count = int(self._client.llen(self._list_key))
        result = self._client.eval(
            _APPEND, 2, self._lease_key, self._list_key, self._token, self._count, record
        )
        if result == -1:
            self._lost.set()
            raise SessionError(self._where, "lease lost: another run took the session over; not stored")
        if result == -2:
            raise SessionError(self._where, "session was written by another run meanwhile; not stored")
        self._count += 1
        if self._history is not None:
            self._history.append(message)

    def close(self) -> None:
        """Stop renewing, release the lease (if still ours) and close the connection (idempotent)."""
        if self._closed.is_set():
            return
        self._closed.set()
        if self._renewer is not None:
            self._renewer.join()
        try:
            if self._held and not self._lost.is_set():
                self._client.eval(_RELEASE, 1, self._lease_key, self._token)
        finally:
            self._held = False
            self._client.close()

    # --- the lease -----------------------------------------------------------------------------

    def _check_lease(self) -> None:
        """Take the lease on first use; afterwards, fail if it was lost."""
        if self._closed.is_set():
            raise SessionError(self._where, "store is closed")
        if self._lost.is_set():
            raise SessionError(self._where, "lease lost: another run took the session over")
        if self._held:
            return
        prefix = f"{self.owner}|" if self.owner else ""
        taken = self._client.eval(_ACQUIRE, 1, self._lease_key, self._token, self._lease_ms(), prefix)
        if not taken:
            raise SessionError(self._where, "session is in use by another run (lease held)")
        self._held = True
        self._renewer = threading.Thread(
            target=self._renew, name=f"miniagent-lease-{self.session_id}", daemon=True
        )
        self._renewer.start()

    def _renew(self) -> None:
        """Renew the lease every third of its life until closed; mark it lost if it is gone."""
        interval = self.lease_seconds / 3
        while not self._closed.wait(interval):
            try:
                renewed = self._client.eval(_RENEW, 1, self._lease_key, self._token, self._lease_ms())
            except Exception:  # a blip: try again next time; the fenced append is the guard
                continue
            if not renewed:
                self._lost.set()
                return

    def _lease_ms(self) -> int:
        return max(1, int(self.lease_seconds * 1000))
