"""redlock-py 1.0.8's API over quorumlock: change ``from redlock import Redlock`` to
``from quorumlock.compat.redlock import Redlock``.

``Redlock(connection_list, retry_count=None, retry_delay=None, **options)`` takes what
redlock-py takes (URL strings, redis-py keyword dicts, redis-py clients, a ``RedisCluster`` as
one member; bad connection info raises ``Warning``) and keeps the redis-py clients in
``servers``, as redlock-py does, so redis-py is needed. ``options`` are ``quorumlock.Client``
settings; the defaults are redlock-py's: no restart quarantine, TTLs up to 2^53 - 1 ms.
``lock(resource, ttl_ms)`` returns ``Lock(validity, resource, key)`` (validity in ms, key
``bytes``) or ``False``; ``unlock(lock)`` releases it and never raises for node errors (it
logs them).
"""

from __future__ import annotations

import logging
import threading
from collections import namedtuple
from datetime import timedelta
from typing import Any

try:
    import redis
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import RedisError, ResponseError
    from redis.exceptions import TimeoutError as RedisTimeoutError
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError(
        "quorumlock.compat.redlock needs redis-py, as redlock-py does: pip install redis"
    ) from e

from .. import _quorumlock
from .._errors import InvalidArgument, LockBusy, QuorumNotReached, ValidityTooShort
from ._conn import node_url
from ._native import client, node_errors

__all__ = ["CannotObtainLock", "Lock", "MultipleRedlockException", "Redlock"]

Lock = namedtuple("Lock", ("validity", "resource", "key"))

_log = logging.getLogger("quorumlock.compat.redlock")
# A native lock releases itself when dropped, but a redlock-py lock lives until unlock or
# expiry whatever happens to the Redlock that took it: the native locks wait here.
_held: dict[tuple[Any, bytes], _quorumlock.Lock] = {}
_held_mutex = threading.Lock()
_CONNECTION_KINDS = {"ConnectionRefused", "ConnectionLost", "NotConnected", "Tls"}


class CannotObtainLock(Exception):
    """Kept for imports written against redlock-py."""


class MultipleRedlockException(Exception):
    """Node errors during a lock that reached its quorum; ``errors`` holds one redis-py
    exception per failed node."""

    def __init__(self, errors: list[BaseException], *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        self.errors = errors

    def __str__(self) -> str:
        return " :: ".join(str(e) for e in self.errors)

    def __repr__(self) -> str:
        return self.__str__()


def _server(info: object) -> Any:
    if isinstance(info, str):
        return redis.StrictRedis.from_url(info)
    if type(info) is dict:
        return redis.StrictRedis(**info)
    return info


def _redis_error(node: _quorumlock.NodeResult) -> RedisError:
    text = f"{node.address}: {node.kind}" + (f": {node.detail}" if node.detail else "")
    if node.kind == "Timeout":
        return RedisTimeoutError(text)
    if node.kind in _CONNECTION_KINDS:
        return RedisConnectionError(text)
    return ResponseError(text)


class Redlock:
    """A redlock-py lock manager: ``Redlock([{"host": ..., "port": ..., "db": ...}, ...])``."""

    default_retry_count = 3
    default_retry_delay = 0.2
    clock_drift_factor = 0.01

    def __init__(
        self,
        connection_list: list[Any],
        retry_count: int | None = None,
        retry_delay: float | None = None,
        **options: Any,
    ) -> None:
        self.servers: list[Any] = []
        urls = []
        for connection_info in connection_list:
            try:
                server = _server(connection_info)
                urls.append(node_url(server))
            except Exception as e:
                raise Warning(str(e)) from e
            self.servers.append(server)
        self.quorum = len(connection_list) // 2 + 1
        self.retry_count = retry_count or self.default_retry_count
        self.retry_delay = retry_delay or self.default_retry_delay
        self._client = client(urls, {"drift_factor": self.clock_drift_factor, **options})

    def lock(self, resource: str | bytes, ttl: int) -> Lock | bool:
        """Acquires ``resource`` for ``ttl`` milliseconds; ``False`` if not acquired.

        Makes ``retry_count`` attempts ``retry_delay`` seconds apart (no jitter). Raises
        ``ValueError`` for a ttl that is not an ``int``, not positive or over ``max_ttl``,
        and ``MultipleRedlockException`` when the quorum was reached but some nodes failed
        (the lock is released first).
        """
        if not isinstance(ttl, int):
            raise ValueError(f"ttl {ttl} is not an integer")
        try:
            native = self._client.acquire(
                resource,
                ttl=timedelta(milliseconds=ttl),
                retry_count=max(int(self.retry_count) - 1, 0),
                retry_delay=float(self.retry_delay),
                retry_jitter=0.0,
                min_validity=0.0,
            )
        except (LockBusy, QuorumNotReached, ValidityTooShort):
            return False
        except InvalidArgument as e:
            # The engine refuses up front a ttl shorter than its drift allowance (redlock-py
            # tries, finds no validity left, and returns False).
            if "leaves no validity" in str(e):
                return False
            raise
        failed = node_errors(native.nodes)
        if failed:
            native.release()
            raise MultipleRedlockException([_redis_error(n) for n in failed])
        key = native.value.encode()
        with _held_mutex:
            for k in [k for k, lk in _held.items() if not lk.is_held()]:
                del _held[k]
            _held[(resource, key)] = native
        return Lock(int(native.validity * 1000), resource, key)

    def unlock(self, lock: Lock) -> None:
        """Releases ``lock`` wherever it still holds the key; node errors are logged."""
        with _held_mutex:
            native = _held.pop((lock.resource, lock.key), None)
        if native is not None:
            nodes = native.release()
        else:
            key = lock.key.decode() if isinstance(lock.key, bytes) else lock.key
            nodes = self._client.release_value(lock.resource, key)
        for n in node_errors(nodes):
            _log.error("Error unlocking resource %s in server %s", lock.resource, _redis_error(n))
