"""redlock-py's API over quorumlock: change ``from redlock import Redlock`` to
``from quorumlock.compat.redlock import Redlock``.

``lock(resource, ttl_ms)`` returns a ``Lock(validity, resource, key)`` namedtuple (validity
in milliseconds, key the lock value) or ``False``; ``unlock(lock)`` releases it. Node
failures that prevent a quorum raise ``MultipleRedlockException``. Keys are the bare
resource name, as in redlock-py, so both can lock the same resources during a migration.
"""

from __future__ import annotations

import threading
from collections import namedtuple
from typing import Any

from .. import _quorumlock
from .._errors import LockBusy, QuorumlockError, QuorumNotReached, ValidityTooShort
from ._conn import node_urls

__all__ = ["CannotObtainLock", "Lock", "MultipleRedlockException", "Redlock"]

Lock = namedtuple("Lock", ("validity", "resource", "key"))


class CannotObtainLock(Exception):
    """Kept for imports written against redlock-py."""


class MultipleRedlockException(Exception):
    """Errors on too many nodes; ``errors`` holds the underlying exceptions."""

    def __init__(self, errors: list[BaseException], *args: object) -> None:
        super().__init__(*args)
        self.errors = errors

    def __str__(self) -> str:
        return " :: ".join(str(e) for e in self.errors)


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
    ) -> None:
        self.retry_count = retry_count or self.default_retry_count
        self.retry_delay = retry_delay or self.default_retry_delay
        # redlock-py locks the bare resource name: share its keys during a migration.
        self._client = _quorumlock.Client(
            node_urls(connection_list),
            drift_factor=self.clock_drift_factor,
            key_prefix="",
            key_format="bare",
        )
        self._held: dict[tuple[str, str], _quorumlock.Lock] = {}
        self._mutex = threading.Lock()

    def lock(self, resource: str, ttl: int) -> Lock | bool:
        """Acquires ``resource`` for ``ttl`` milliseconds; ``False`` if not acquired."""
        try:
            native = self._client.acquire(
                resource,
                ttl=ttl / 1000,
                # redlock-py makes retry_count attempts, sleeping uniform(0, retry_delay).
                retry_count=max(int(self.retry_count) - 1, 0),
                retry_delay=0.0,
                retry_jitter=float(self.retry_delay),
                min_validity=0.0,
            )
        except (LockBusy, ValidityTooShort):
            return False
        except QuorumNotReached as e:
            raise MultipleRedlockException([e]) from e
        with self._mutex:
            self._held[(resource, native.value)] = native
        return Lock(int(native.validity * 1000), resource, native.value)

    def unlock(self, lock: Lock) -> None:
        """Releases ``lock`` on every node where it still holds the key."""
        with self._mutex:
            native = self._held.pop((lock.resource, lock.key), None)
        try:
            if native is not None:
                native.release()
            else:
                self._client.release_value(lock.resource, lock.key)
        except QuorumlockError as e:
            raise MultipleRedlockException([e]) from e
