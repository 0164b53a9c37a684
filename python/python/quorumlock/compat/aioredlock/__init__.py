"""aioredlock 0.7's API over quorumlock: change ``from aioredlock import ...`` to
``from quorumlock.compat.aioredlock import ...`` (``.errors``, ``.lock`` and ``.sentinel``
mirror aioredlock's modules). See ``Aioredlock`` for what differs."""

from .algorithm import Aioredlock
from .errors import AioredlockError, LockAcquiringError, LockError, LockRuntimeError
from .lock import Lock
from .sentinel import Sentinel

__all__ = [
    "Aioredlock",
    "AioredlockError",
    "Lock",
    "LockAcquiringError",
    "LockError",
    "LockRuntimeError",
    "Sentinel",
]
