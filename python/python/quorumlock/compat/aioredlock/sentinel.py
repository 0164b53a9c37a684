"""aioredlock's ``Sentinel`` (``aioredlock.sentinel``), refused: a Sentinel hands out whichever
server is master now, and a failover to a replica that missed the last writes loses locks.
List the masters themselves instead."""

from __future__ import annotations

__all__ = ["Sentinel", "SentinelConfigError"]


class SentinelConfigError(Exception):
    """The Sentinel configuration is not usable."""


class Sentinel:
    """Raises ``SentinelConfigError``: Sentinel-managed nodes are not supported."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise SentinelConfigError(
            "Sentinel-managed nodes are not supported by quorumlock: a failover to a replica "
            "that missed the last writes loses locks; list independent masters instead"
        )
