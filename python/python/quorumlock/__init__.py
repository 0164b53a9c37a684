"""quorumlock: Redlock distributed locks over N independent Redis masters.

    client = quorumlock.Client(["redis://10.0.0.1:6379", "redis://10.0.0.2:6379",
                                "redis://10.0.0.3:6379"])
    with client.lock("invoice:7", ttl=10.0) as lock:
        charge(invoice=7)

Durations are float seconds. Every failure is a ``QuorumlockError`` subclass with ``code``,
``attempts`` and ``nodes``.
"""

from __future__ import annotations

import os

from . import _quorumlock
from ._client import AsyncClient, AsyncLock, Client, Lock
from ._errors import (
    AuthFailed,
    Cancelled,
    ConnectionFailed,
    ExtensionLimit,
    InvalidArgument,
    LockBusy,
    LockLost,
    Misconfigured,
    QuorumlockError,
    QuorumNotReached,
    ScriptFailed,
    TimedOut,
    ValidityTooShort,
)
from ._quorumlock import (
    Histogram,
    Holding,
    Inspection,
    Metrics,
    NodeInfo,
    NodeMetrics,
    NodeResult,
    OpMetrics,
)
from ._scoped import AsyncLostFlag, LockScope, LostFlag

__version__: str = _quorumlock.__version__
FENCE_CHECK_SCRIPT: str = _quorumlock.FENCE_CHECK_SCRIPT
#: The largest ``max_ttl`` a client accepts, in seconds (2^53 - 1 ms).
MAX_TTL_LIMIT: float = _quorumlock.MAX_TTL_LIMIT
"""Lua source of the fence check for a protected resource kept in Redis:
``EVAL <script> 1 <fence key> <token>`` returns 1 and stores the token when it is at least
the highest seen, 0 (a stale holder: stop) otherwise. Run it in the same atomic step as the
protected write."""

__all__ = [
    "FENCE_CHECK_SCRIPT",
    "MAX_TTL_LIMIT",
    "AsyncClient",
    "AsyncLock",
    "AsyncLostFlag",
    "AuthFailed",
    "Cancelled",
    "Client",
    "ConnectionFailed",
    "ExtensionLimit",
    "Histogram",
    "Holding",
    "Inspection",
    "InvalidArgument",
    "Lock",
    "LockBusy",
    "LockLost",
    "LockScope",
    "LostFlag",
    "Metrics",
    "Misconfigured",
    "NodeInfo",
    "NodeMetrics",
    "NodeResult",
    "OpMetrics",
    "QuorumNotReached",
    "QuorumlockError",
    "ScriptFailed",
    "TimedOut",
    "ValidityTooShort",
    "__version__",
]

# The engine's runtime threads do not exist in a fork() child: start new ones there. Locks
# from the parent raise InvalidArgument in the child; clients reconnect on first use.
os.register_at_fork(after_in_child=_quorumlock.after_fork_in_child)
