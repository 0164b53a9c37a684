"""The native client behind a drop-in, with the peer's defaults: no restart quarantine and
TTLs up to ``quorumlock.MAX_TTL_LIMIT`` (2^53 - 1 ms, the largest the engine accepts), on the
bare resource name as key. Every setting of ``quorumlock.Client`` can be passed to override
them (``quarantine="on"``, ``max_ttl=60.0``, ``eviction_check=...``, ``fenced=True``, ...)."""

from __future__ import annotations

from typing import Any

from .. import _quorumlock

__all__ = ["PEER_DEFAULTS", "client", "node_errors"]

PEER_DEFAULTS: dict[str, Any] = {
    # The peers count a freshly started plain server at once; quarantine="on" opts in
    # (with max_ttl set to the longest ttl in use, since the quarantine lasts max_ttl + 5 s).
    "quarantine": "off",
    "max_ttl": _quorumlock.MAX_TTL_LIMIT,
    # The peers lock the bare resource name: both can share keys during a migration.
    "key_prefix": "",
    "key_format": "bare",
}

# Node report kinds that are answers (votes), not node errors.
_VOTES = frozenset({"Ok", "HeldByOther", "NotHeld", "Released", "Partial", "Pending"})


def client(urls: list[str], options: dict[str, Any]) -> _quorumlock.Client:
    """A native client on ``urls``: the peer's defaults, then the caller's ``options``."""
    return _quorumlock.Client(urls, **{**PEER_DEFAULTS, **options})


def node_errors(nodes: list[_quorumlock.NodeResult]) -> list[_quorumlock.NodeResult]:
    """The node results that are errors (timeouts, refused connections, error replies)."""
    return [n for n in nodes if n.kind not in _VOTES]
