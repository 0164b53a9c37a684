"""aioredlock's ``Lock`` (``aioredlock.lock``): the fields of aioredlock's attrs class, compared
field by field, plus the native lock it stands for."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from ... import _quorumlock

__all__ = ["Lock"]


@dataclass
class Lock:
    """A lock of ``lock_manager`` on ``resource``; ``id`` is the lock value. An async context
    manager that unlocks on exit."""

    lock_manager: Any
    resource: str
    id: str
    lock_timeout: float | None = 10.0
    valid: bool = False
    _native: _quorumlock.Lock | None = field(default=None, init=False, repr=False, compare=False)

    async def __aenter__(self) -> Lock:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.lock_manager.unlock(self)

    async def extend(self) -> None:
        await self.lock_manager.extend(self)

    async def release(self) -> None:
        await self.lock_manager.unlock(self)

    async def is_locked(self) -> bool:
        return bool(await self.lock_manager.is_locked(self))
