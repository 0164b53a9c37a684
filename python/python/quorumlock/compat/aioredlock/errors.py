"""aioredlock's exceptions (``aioredlock.errors``)."""

from __future__ import annotations

__all__ = ["AioredlockError", "LockAcquiringError", "LockError", "LockRuntimeError"]


class AioredlockError(Exception):
    """Base exception of aioredlock."""


class LockError(AioredlockError):
    """Error in acquiring or releasing the lock."""


class LockAcquiringError(LockError):
    """The lock is held by another owner (acquire, extend, release, get_lock)."""


class LockRuntimeError(LockError):
    """Node failures (refused connections, timeouts) kept a majority from answering."""
