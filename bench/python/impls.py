"""The implementations measured by bench.py: one acquire+release operation each.

An implementation is a class with ``mode`` ("thread" or "async"), a constructor taking the
node URLs (run inside the event loop for async ones), ``op(key)`` (a function for thread
ones, a coroutine function for async ones) returning True on a successful acquire+release,
and ``close()`` (a coroutine for async ones). Every lock has a 10 s TTL and no retry beyond
what the library forces, so that an operation measures one round of acquire + one release.
"""

from __future__ import annotations

import asyncio
import os

TTL_S = 10.0
TTL_MS = 10_000
RELEASE_LUA = (
    "if redis.call('GET', KEYS[1]) == ARGV[1] then "
    "return redis.call('DEL', KEYS[1]) else return 0 end"
)


class Floor:
    """The raw floor: SET NX PX on every node in parallel, then the compare-and-delete script
    on every node in parallel (redis-py asyncio, one connection pool per node)."""

    name, mode = "floor", "async"

    def __init__(self, urls: list[str]) -> None:
        import redis.asyncio as aredis

        self.nodes = [aredis.Redis.from_url(u, max_connections=256) for u in urls]
        self.release = [n.register_script(RELEASE_LUA) for n in self.nodes]

    async def op(self, key: str) -> bool:
        value = os.urandom(20).hex()
        sets = await asyncio.gather(
            *(n.set(key, value, nx=True, px=TTL_MS) for n in self.nodes), return_exceptions=True
        )
        # Release everywhere, even after a partial grant, so that no key lingers.
        dels = await asyncio.gather(
            *(s(keys=[key], args=[value]) for s in self.release), return_exceptions=True
        )
        return all(r is True for r in sets) and all(r == 1 for r in dels)

    async def close(self) -> None:
        for n in self.nodes:
            await n.aclose()


def _ql_options() -> dict[str, float | int]:
    # The Rust bench's options: no retry, 200 ms per-node deadline.
    return {"ttl": TTL_S, "retry_count": 0, "node_timeout": 0.2}


class QuorumlockSync:
    """quorumlock's blocking API (GIL released while waiting), one thread per worker."""

    name, mode = "quorumlock-sync", "thread"

    def __init__(self, urls: list[str]) -> None:
        import quorumlock

        self.client = quorumlock.Client(urls, **_ql_options())

    def op(self, key: str) -> bool:
        lock = self.client.acquire(key)
        report = lock.release()
        return sum(1 for n in report if n.kind == "Released") >= self.client.quorum

    def close(self) -> None:
        pass


class QuorumlockAsync:
    """quorumlock's asyncio API, one task per worker."""

    name, mode = "quorumlock-async", "async"

    def __init__(self, urls: list[str]) -> None:
        import quorumlock

        self.client = quorumlock.AsyncClient(urls, **_ql_options())

    async def op(self, key: str) -> bool:
        lock = await self.client.acquire(key)
        report = await lock.release()
        return sum(1 for n in report if n.kind == "Released") >= self.client.quorum

    async def close(self) -> None:
        pass


class RedlockPy:
    """redlock-py: sequential SET NX PX / release script over the nodes (sync, threads)."""

    name, mode = "redlock-py", "thread"

    def __init__(self, urls: list[str]) -> None:
        import redlock

        # retry_count=0 would mean the default 3; 1 is a single attempt.
        self.manager = redlock.Redlock(urls, retry_count=1, retry_delay=0.2)

    def op(self, key: str) -> bool:
        lock = self.manager.lock(key, TTL_MS)
        if lock is False:
            return False
        self.manager.unlock(lock)
        return True

    def close(self) -> None:
        pass


class Pottery:
    """pottery's Redlock: one object per key, masters queried by a thread pool (threads)."""

    name, mode = "pottery", "thread"

    def __init__(self, urls: list[str]) -> None:
        from redis import Redis

        self.masters = {Redis.from_url(u, max_connections=256) for u in urls}
        self.locks: dict[str, object] = {}

    def op(self, key: str) -> bool:
        from pottery import Redlock

        lock = self.locks.get(key)
        if lock is None:
            lock = Redlock(key=key, masters=self.masters, auto_release_time=TTL_S)
            self.locks[key] = lock
        if not lock.acquire(blocking=False):
            return False
        lock.release()
        return True

    def close(self) -> None:
        for m in self.masters:
            m.close()


class AioRedlock:
    """aioredlock (aioredis 1.x pools): one task per worker."""

    name, mode = "aioredlock", "async"

    def __init__(self, urls: list[str]) -> None:
        from aioredlock import Aioredlock

        # retry_count must be >= 1: one attempt.
        self.manager = Aioredlock(urls, retry_count=1)

    async def op(self, key: str) -> bool:
        lock = await self.manager.lock(key, lock_timeout=TTL_S)
        await self.manager.unlock(lock)
        return True

    async def close(self) -> None:
        await self.manager.destroy()


IMPLS = [Floor, QuorumlockSync, QuorumlockAsync, RedlockPy, Pottery, AioRedlock]
