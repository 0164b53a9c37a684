"""Scoped helpers: the lost flag, ``with`` / ``async with`` lock scopes and ``synchronized``."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

from . import _quorumlock
from ._errors import LockLost

if TYPE_CHECKING:
    from ._client import AsyncLock, Lock

__all__ = ["AsyncLostFlag", "LockScope", "LostFlag", "synchronized"]

F = TypeVar("F", bound=Callable[..., Any])


class LostFlag:
    """Set when the lock is lost; like ``threading.Event``, read-only."""

    def __init__(self, native: _quorumlock.Lock) -> None:
        self._native = native

    def is_set(self) -> bool:
        """True once the lock is lost (expired, taken over or stopped at a cap)."""
        return self._native.lost_error() is not None

    def error(self) -> LockLost | None:
        """The ``LockLost`` exception (reason and node report), or ``None``."""
        return self._native.lost_error()

    def wait(self, timeout: float | None = None) -> bool:
        """Blocks (GIL released) until lost (``True``), released or ``timeout`` seconds
        passed (``False``)."""
        return self._native.wait_lost(timeout)


class AsyncLostFlag(LostFlag):
    """The lost flag of an ``AsyncLock``: ``await lock.lost.wait()``."""

    async def wait(self, timeout: float | None = None) -> bool:  # type: ignore[override]
        """Waits until lost (``True``), released or ``timeout`` seconds passed (``False``)."""
        import asyncio

        try:
            lost = await asyncio.wait_for(self._native.wait_lost_async(), timeout)
        except TimeoutError:
            return False
        return lost is not None


class LockScope:
    """What ``client.lock(...)`` returns: acquires on ``__enter__`` (or ``__aenter__``) with
    auto-extension on, releases on exit, and raises ``LockLost`` at exit if the lock was
    lost during the body (chained to the body's own exception, if any)."""

    def __init__(self, native: _quorumlock.Client, resources: Any, options: dict[str, Any]):
        options.setdefault("auto_extend", True)
        self._native = native
        self._resources = resources
        self._options = options
        self._lock: Lock | AsyncLock | None = None

    def __enter__(self) -> Lock:
        from ._client import Lock

        lock = Lock._acquire(self._native, self._resources, dict(self._options))
        self._lock = lock
        return lock

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        lock, self._lock = self._lock, None
        if lock is None:
            return
        lost = lock._native.lost_error()
        lock._native.release()
        if lost is not None:
            raise lost from exc

    async def __aenter__(self) -> AsyncLock:
        from ._client import AsyncLock

        lock = await AsyncLock._acquire(self._native, self._resources, dict(self._options))
        self._lock = lock
        return lock

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        lock, self._lock = self._lock, None
        if lock is None:
            return
        lost = lock._native.lost_error()
        await lock._native.release_async()
        if lost is not None:
            raise lost from exc


def synchronized(native: _quorumlock.Client, resources: Any, **options: Any) -> Callable[[F], F]:
    """Decorator: every call of the function (or coroutine function) holds the lock."""

    def decorate(fn: F) -> F:
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def run_async(*args: Any, **kwargs: Any) -> Any:
                async with LockScope(native, resources, dict(options)):
                    return await fn(*args, **kwargs)

            return run_async  # type: ignore[return-value]

        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            with LockScope(native, resources, dict(options)):
                return fn(*args, **kwargs)

        return run  # type: ignore[return-value]

    return decorate
