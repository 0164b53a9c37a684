"""The exception hierarchy: one base class and one subclass per engine error kind.

The native module raises these classes; the table is ARCHITECTURE.md section 4.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._quorumlock import NodeResult

__all__ = [
    "AuthFailed",
    "Cancelled",
    "ConnectionFailed",
    "ExtensionLimit",
    "InvalidArgument",
    "LockBusy",
    "LockLost",
    "Misconfigured",
    "QuorumNotReached",
    "QuorumlockError",
    "ScriptFailed",
    "TimedOut",
    "ValidityTooShort",
]


class QuorumlockError(Exception):
    """Base class of every quorumlock failure.

    ``code`` is the stable string code (``"QL_BUSY"``), ``attempts`` the acquisition attempts
    made (0 when nothing was sent), ``validity`` the validity in seconds when it was known
    (negative when the attempt took longer than the TTL), ``reason`` why a lock was lost
    (``"Expired"``, ``"Taken"``, ``"ExtensionLimit"``), ``nodes`` one frozen
    ``NodeResult`` (index, address, latency, kind, detail) per configured node, and
    ``attempt_reports`` the ``nodes`` of each attempt of a failed acquisition, oldest first
    (at most 64, the most recent; the last is ``nodes`` unless cancelled between attempts).
    """

    code: str | None
    attempts: int
    validity: float | None
    reason: str | None
    nodes: tuple[NodeResult, ...]
    attempt_reports: tuple[tuple[NodeResult, ...], ...]

    def __init__(
        self,
        message: str = "",
        *,
        code: str | None = None,
        attempts: int = 0,
        validity: float | None = None,
        reason: str | None = None,
        nodes: Sequence[NodeResult] = (),
        attempt_reports: Sequence[Sequence[NodeResult]] = (),
    ) -> None:
        super().__init__(message)
        self.code = code
        self.attempts = attempts
        self.validity = validity
        self.reason = reason
        self.nodes = tuple(nodes)
        self.attempt_reports = tuple(tuple(r) for r in attempt_reports)


class LockBusy(QuorumlockError):
    """Other owners hold the resource on enough nodes that a quorum was impossible."""


class QuorumNotReached(QuorumlockError):
    """Node failures (timeouts, refused connections, error replies) blocked the quorum."""


class ValidityTooShort(QuorumlockError):
    """A quorum was reached but too little validity was left."""


class Cancelled(QuorumlockError):
    """The caller cancelled the operation."""


class LockLost(QuorumlockError):
    """A held lock expired or was taken over."""


class ExtensionLimit(QuorumlockError):
    """An extension cap (``max_extensions``, ``max_hold``) was reached."""


class InvalidArgument(QuorumlockError, ValueError):
    """Bad input or configuration, or a handle in the wrong state; nothing was sent."""


class ConnectionFailed(QuorumlockError, ConnectionError):
    """Fewer than a quorum of nodes could be reached (connect and ping only)."""


class AuthFailed(QuorumlockError):
    """Credentials or ACL refused on too many nodes (connect and ping only)."""


class ScriptFailed(QuorumlockError):
    """Scripting unavailable on too many nodes (connect and ping only)."""


class Misconfigured(QuorumlockError):
    """Unsafe node settings on too many nodes (connect and ping only)."""


class TimedOut(QuorumlockError, TimeoutError):
    """No reply in time from too many nodes (connect and ping only)."""
