"""aioredlock's lock manager (``aioredlock.algorithm.Aioredlock``) over quorumlock."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from ... import _quorumlock
from ..._errors import InvalidArgument, LockBusy, LockLost, QuorumlockError, QuorumNotReached
from .._conn import node_urls
from .._native import client, node_errors
from .errors import LockAcquiringError, LockError, LockRuntimeError
from .lock import Lock

__all__ = ["Aioredlock"]

_log = logging.getLogger("quorumlock.compat.aioredlock")
_RELEASED = {"Released", "NotHeld"}


def _lock_error(e: QuorumlockError, message: str) -> LockError:
    """aioredlock's class for an engine error: another owner is ``LockAcquiringError``,
    node failures are ``LockRuntimeError``, anything else (too little validity) ``LockError``."""
    if isinstance(e, (LockBusy, LockLost)):
        return LockAcquiringError(f"{message}: {e}")
    if isinstance(e, QuorumNotReached):
        return LockRuntimeError(f"{message}: {e}")
    return LockError(f"{message}: {e}")


def _positive(message: str, value: float) -> float:
    if value <= 0:
        raise ValueError(message)
    return value


class Aioredlock:
    """aioredlock's lock manager. ``redis_connections`` entries are dicts, ``(host, port)``
    tuples, ``redis://`` URLs, unix socket paths, ``redis.asyncio`` / aioredis ``Redis``
    objects, or ``redis.asyncio.cluster.RedisCluster`` objects (one member whose keys route
    by slot); objects are read for their address: quorumlock opens its own connections and
    never closes yours. ``options`` are ``quorumlock.Client`` settings; the defaults are
    aioredlock's: no restart quarantine, TTLs up to 2^53 - 1 ms. Bad values (a short
    ``lock_identifier``) raise ``InvalidArgument``, a ``ValueError``."""

    def __init__(
        self,
        redis_connections: list[Any] | None = None,
        retry_count: int = 3,
        retry_delay_min: float = 0.1,
        retry_delay_max: float = 0.3,
        internal_lock_timeout: float = 10.0,
        **options: Any,
    ) -> None:
        if redis_connections is None:
            redis_connections = [{"host": "localhost", "port": 6379}]
        self.redis_connections = redis_connections
        self.retry_count = int(retry_count)
        if self.retry_count < 1:
            raise ValueError("Retry count must be greater or equal 1.")
        message = "Retry delay must be greater than 0 seconds."
        self.retry_delay_min = _positive(message, float(retry_delay_min))
        self.retry_delay_max = _positive(message, float(retry_delay_max))
        message = "Internal lock_timeout must be greater than 0 seconds."
        self.internal_lock_timeout = _positive(message, float(internal_lock_timeout))
        self._urls = node_urls(redis_connections)
        self._options = options
        self._client: _quorumlock.Client | None = None
        self._locks: dict[str, Lock] = {}

    async def _native(self) -> _quorumlock.Client:
        if self._client is None:
            self._client = await asyncio.to_thread(client, self._urls, self._options)
        return self._client

    async def lock(
        self, resource: str, lock_timeout: float | None = None, lock_identifier: str | None = None
    ) -> Lock:
        """Acquires ``resource`` for ``lock_timeout`` seconds, or with auto-extension (every
        few seconds, to ``internal_lock_timeout``) when it is ``None``; makes ``retry_count``
        attempts, ``uniform(retry_delay_min, retry_delay_max)`` seconds apart. The lock
        value is ``lock_identifier`` (16+ printable ASCII characters, e.g. a UUID) or a
        random one. Raises ``LockAcquiringError`` (held by another owner, also by the same
        ``lock_identifier``), ``LockRuntimeError`` (node failures) or ``LockError``."""
        if lock_timeout is not None and lock_timeout <= 0:
            raise ValueError("Lock timeout must be greater than 0 seconds.")
        native_client = await self._native()
        given = {} if lock_identifier is None else {"value": lock_identifier}
        try:
            native = await native_client.acquire_async(
                resource,
                **given,
                ttl=float(lock_timeout or self.internal_lock_timeout),
                retry_count=self.retry_count - 1,
                retry_delay=self.retry_delay_min,
                retry_jitter=max(self.retry_delay_max - self.retry_delay_min, 0.0),
                min_validity=0.0,
                auto_extend=lock_timeout is None,
            )
        except InvalidArgument:
            raise
        except QuorumlockError as e:
            raise _lock_error(e, f'Can not acquire the lock "{resource}"') from e
        lock = Lock(self, resource, native.value, lock_timeout, valid=True)
        lock._native = native
        self._locks[resource] = lock
        return lock

    async def extend(self, lock: Lock, lock_timeout: float | None = None) -> None:
        """Resets the lock's lifetime to ``lock_timeout`` (else its own, else
        ``internal_lock_timeout``); on failure unlocks it and raises a ``LockError``. An
        expired lock is never re-created (aioredlock re-creates it). A ``get_lock()`` lock
        is extended by its value."""
        if not lock.valid:
            raise RuntimeError("Lock is not valid")
        if lock_timeout is not None and lock_timeout <= 0:
            raise ValueError("Lock timeout must be greater than 0 seconds.")
        ttl = float(lock_timeout or lock.lock_timeout or self.internal_lock_timeout)
        try:
            if lock._native is None:
                native_client = await self._native()
                await native_client.extend_value_async(lock.resource, lock.id, ttl)
            else:
                await lock._native.extend_async(ttl)
        except QuorumlockError as e:
            try:
                await self.unlock(lock)
            except LockError:
                pass
            raise _lock_error(e, f'Can not extend the lock "{lock.resource}"') from e

    async def unlock(self, lock: Lock) -> None:
        """Releases the lock (``valid`` becomes ``False``); raises a ``LockError`` unless a
        majority of nodes released it or did not hold it."""
        lock.valid = False
        native_client = await self._native()
        if lock._native is None:
            nodes = await asyncio.to_thread(native_client.release_value, lock.resource, lock.id)
        else:
            nodes = await lock._native.release_async()
        if sum(n.kind in _RELEASED for n in nodes) < native_client.quorum:
            message = f'Can not release the lock "{lock.resource}": ' + ", ".join(
                f"{n.address} {n.kind}" for n in nodes
            )
            if node_errors(nodes):
                raise LockRuntimeError(message)
            raise LockAcquiringError(message)
        self._locks.pop(lock.resource, None)

    async def is_locked(self, resource_or_lock: str | Lock) -> bool:
        """True if a majority of nodes hold ``resource`` for one owner, whoever it is."""
        if isinstance(resource_or_lock, Lock):
            resource = resource_or_lock.resource
        elif isinstance(resource_or_lock, str):
            resource = resource_or_lock
        else:
            raise TypeError(
                "Argument should be ether aioredlock.Lock instance or string, "
                f"{type(resource_or_lock)} is given."
            )
        native_client = await self._native()
        return await native_client.holder_async(resource) is not None

    async def get_lock(self, resource: str, lock_identifier: str) -> Lock:
        """A ``Lock`` for ``resource`` held with value ``lock_identifier`` on a majority of
        nodes (e.g. by another process); ``LockAcquiringError`` if it is not. Its
        ``lock_timeout`` is the shortest TTL left (in seconds) on the nodes holding it."""
        native_client = await self._native()
        found = await native_client.inspect_async(resource)
        if found.holder != lock_identifier:
            raise LockAcquiringError(f'Can not get the lock "{resource}"')
        ttls = [n.ttl for n in found.nodes if n.value == lock_identifier and n.ttl is not None]
        return Lock(self, resource, lock_identifier, min(ttls, default=None), valid=True)

    async def get_active_locks(self) -> list[Lock]:
        """The locks of this manager that are valid and still held."""
        return [lk for lk in list(self._locks.values()) if lk.valid and await lk.is_locked()]

    async def destroy(self) -> None:
        """Unlocks every lock of this manager and closes quorumlock's connections (never the
        ``Redis`` objects passed in)."""
        for resource, lock in list(self._locks.items()):
            if lock.valid:
                try:
                    await self.unlock(lock)
                except Exception:
                    _log.exception('Can not unlock "%s"', resource)
        self._locks.clear()
        self._client = None
