"""aioredlock's API over quorumlock: change ``from aioredlock import Aioredlock, LockError``
to ``from quorumlock.compat.aioredlock import Aioredlock, LockError``.

``lock(resource, lock_timeout=None)`` acquires (with auto-extension when ``lock_timeout`` is
``None``, as aioredlock's watchdog does), ``extend``, ``unlock``, ``is_locked`` and
``destroy`` behave as in aioredlock. Sentinel connections are not supported. Keys are the
bare resource name, as in aioredlock, so both can lock the same resources during a
migration.
"""

from __future__ import annotations

import asyncio
from types import TracebackType
from typing import Any

from .. import _quorumlock
from .._errors import QuorumlockError
from ._conn import node_urls

__all__ = [
    "Aioredlock",
    "AioredlockError",
    "Lock",
    "LockAcquiringError",
    "LockError",
    "LockRuntimeError",
]

_VOTES = {"Ok", "HeldByOther", "NotHeld", "Released", "Partial", "Pending"}


class AioredlockError(Exception):
    """Base exception of aioredlock."""


class LockError(AioredlockError):
    """Error in acquiring or releasing the lock."""


class LockAcquiringError(LockError):
    """The lock could not be acquired."""


class LockRuntimeError(LockError):
    """The lock could not be extended or released on a majority of nodes."""


class Lock:
    """An aioredlock lock: ``resource``, ``id`` (the lock value), ``lock_timeout``, ``valid``;
    an async context manager that unlocks on exit."""

    def __init__(
        self,
        lock_manager: Aioredlock,
        resource: str,
        id: str,
        lock_timeout: float | None = None,
        valid: bool = False,
    ) -> None:
        self.lock_manager = lock_manager
        self.resource = resource
        self.id = id
        self.lock_timeout = lock_timeout
        self.valid = valid
        self._native: _quorumlock.Lock | None = None

    async def extend(self) -> None:
        await self.lock_manager.extend(self)

    async def release(self) -> None:
        await self.lock_manager.unlock(self)

    async def is_locked(self) -> bool:
        return await self.lock_manager.is_locked(self)

    async def __aenter__(self) -> Lock:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.release()


def _positive(name: str, value: float) -> float:
    if value <= 0:
        raise ValueError(f"{name} must be greater than 0.")
    return value


class Aioredlock:
    """An aioredlock lock manager over quorumlock."""

    def __init__(
        self,
        redis_connections: list[Any] | None = None,
        retry_count: int = 3,
        retry_delay_min: float = 0.1,
        retry_delay_max: float = 0.3,
        internal_lock_timeout: float = 10.0,
    ) -> None:
        if redis_connections is None:
            redis_connections = [{"host": "localhost", "port": 6379}]
        self.retry_count = int(retry_count)
        if self.retry_count < 1:
            raise ValueError("Retry count must be greater or equal 1.")
        self.retry_delay_min = _positive("Retry delay", float(retry_delay_min))
        self.retry_delay_max = _positive("Retry delay", float(retry_delay_max))
        self.internal_lock_timeout = _positive(
            "Internal lock_timeout", float(internal_lock_timeout)
        )
        self._urls = node_urls(redis_connections)
        self._client: _quorumlock.Client | None = None
        self._locks: dict[str, Lock] = {}

    async def _native(self) -> _quorumlock.Client:
        if self._client is None:
            # aioredlock locks the bare resource name: share its keys during a migration.
            self._client = await asyncio.to_thread(
                _quorumlock.Client, self._urls, key_prefix="", key_format="bare"
            )
        return self._client

    async def lock(self, resource: str, lock_timeout: float | None = None) -> Lock:
        """Acquires ``resource``; raises ``LockAcquiringError`` (a ``LockError``) if not."""
        if lock_timeout is not None and lock_timeout <= 0:
            raise ValueError("Lock timeout must be greater than 0 seconds.")
        client = await self._native()
        try:
            native = await client.acquire_async(
                resource,
                ttl=float(lock_timeout or self.internal_lock_timeout),
                retry_count=self.retry_count - 1,
                retry_delay=self.retry_delay_min,
                retry_jitter=max(self.retry_delay_max - self.retry_delay_min, 0.0),
                auto_extend=lock_timeout is None,
            )
        except QuorumlockError as e:
            raise LockAcquiringError(str(e)) from e
        lock = Lock(self, resource, native.value, lock_timeout, valid=True)
        lock._native = native
        self._locks[resource] = lock
        return lock

    async def extend(self, lock: Lock, lock_timeout: float | None = None) -> None:
        """Resets the lock's lifetime; raises ``LockError`` (and unlocks) on failure."""
        if not lock.valid or lock._native is None:
            raise RuntimeError("Lock is not valid")
        if lock_timeout is not None and lock_timeout <= 0:
            raise ValueError("Lock timeout must be greater than 0 seconds.")
        ttl = float(lock_timeout or lock.lock_timeout or self.internal_lock_timeout)
        try:
            await lock._native.extend_async(ttl)
        except QuorumlockError as e:
            try:
                await self.unlock(lock)
            except LockError:
                pass
            raise LockRuntimeError(str(e)) from e

    async def unlock(self, lock: Lock) -> None:
        """Releases the lock; raises ``LockError`` when a majority of nodes failed."""
        lock.valid = False
        if self._locks.get(lock.resource) is lock:
            del self._locks[lock.resource]
        if lock._native is None:
            client = await self._native()
            nodes = await asyncio.to_thread(client.release_value, lock.resource, lock.id)
        else:
            nodes = await lock._native.release_async()
        failed = sum(1 for n in nodes if n.kind not in _VOTES)
        if failed > len(nodes) - (len(nodes) // 2 + 1):
            raise LockRuntimeError(f"Can not release the lock {lock.resource!r}")

    async def is_locked(self, resource_or_lock: str | Lock) -> bool:
        """True if a quorum of nodes holds ``resource`` for any owner."""
        if isinstance(resource_or_lock, Lock):
            resource = resource_or_lock.resource
        elif isinstance(resource_or_lock, str):
            resource = resource_or_lock
        else:
            raise TypeError(
                "Argument should be ether aioredlock.Lock instance or string, "
                f"{type(resource_or_lock)} is given."
            )
        client = await self._native()
        return await client.holder_async(resource) is not None

    async def get_active_locks(self) -> list[Lock]:
        """The locks of this manager that are valid and still held."""
        return [lk for lk in list(self._locks.values()) if lk.valid and await lk.is_locked()]

    async def destroy(self) -> None:
        """Unlocks every lock of this manager and drops the connections."""
        for lock in list(self._locks.values()):
            if lock.valid:
                try:
                    await self.unlock(lock)
                except LockError:
                    pass
        self._locks.clear()
        self._client = None
