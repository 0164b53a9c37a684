"""quorumlock.compat.aioredlock behaves as aioredlock 0.7, on plain (non-durable, just
started) servers as aioredlock users run them."""

from __future__ import annotations

import asyncio
import uuid

import pytest
import redis.asyncio

from quorumlock.compat.aioredlock import (
    Aioredlock,
    Lock,
    LockAcquiringError,
    LockError,
    LockRuntimeError,
    Sentinel,
)
from quorumlock.compat.aioredlock.errors import AioredlockError
from quorumlock.compat.aioredlock.sentinel import SentinelConfigError

from conftest import Cluster, resp

DOWN = ["redis://127.0.0.1:1", "redis://127.0.0.1:2", "redis://127.0.0.1:3"]


def test_readme_on_fresh_plain_servers(plain: Cluster):
    p = plain.ports

    async def readme() -> None:
        redis_instances = [
            ("127.0.0.1", p[0]),
            {"host": "127.0.0.1", "port": p[1], "db": 0},
            f"redis://127.0.0.1:{p[2]}/0",
        ]
        lock_manager = Aioredlock(redis_instances)
        assert not await lock_manager.is_locked("resource_name")
        lock = await lock_manager.lock("resource_name", lock_timeout=10)
        assert lock.valid
        assert await lock_manager.is_locked("resource_name")
        await lock_manager.extend(lock, lock_timeout=10)
        await lock_manager.unlock(lock)
        assert not lock.valid
        assert not await lock_manager.is_locked("resource_name")
        async with await lock_manager.lock("resource_name") as lock:
            assert lock.valid is True
            await lock.extend()
        assert lock.valid is False
        await lock_manager.destroy()

    asyncio.run(readme())


def test_module_layout_and_errors():
    assert issubclass(LockAcquiringError, LockError)
    assert issubclass(LockRuntimeError, LockError)
    assert issubclass(LockError, AioredlockError)
    with pytest.raises(SentinelConfigError, match="independent masters"):
        Sentinel(("localhost", 26379), master="mymaster")
    # aioredlock's Lock: attrs fields and defaults, compared field by field.
    manager = Aioredlock()
    lock = Lock(manager, "potato", 1, 1.0)
    assert (lock.resource, lock.id, lock.lock_timeout, lock.valid) == ("potato", 1, 1.0, False)
    assert Lock(manager, "potato", 1).lock_timeout == 10.0
    assert lock == Lock(manager, "potato", 1, 1.0)


def test_settings_validation(plain: Cluster):
    for kwargs in (
        {"retry_count": 0},
        {"retry_delay_min": 0},
        {"retry_delay_max": -1},
        {"internal_lock_timeout": 0},
    ):
        with pytest.raises(ValueError):
            Aioredlock(plain.urls, **kwargs)
    assert Aioredlock(plain.urls, retry_count="2").retry_count == 2
    with pytest.raises(TypeError, match="'cat'"):
        Aioredlock([{"host": "h", "cat": "hog"}])


def test_lock_errors(plain: Cluster):
    async def main() -> None:
        manager = Aioredlock(plain.urls, retry_count=1)
        held = await manager.lock("aio:busy", lock_timeout=5)
        with pytest.raises(LockAcquiringError):
            await manager.lock("aio:busy", lock_timeout=5)
        with pytest.raises(ValueError):
            await manager.lock("aio:busy", lock_timeout=-1)
        with pytest.raises(ValueError, match="16 printable"):
            await manager.lock("aio:other", lock_identifier="mine")
        with pytest.raises(TypeError):
            await manager.is_locked(5)
        assert await manager.is_locked(held)
        await manager.unlock(held)
        with pytest.raises(RuntimeError):
            await manager.extend(held)
        down = Aioredlock(DOWN, retry_count=1)
        with pytest.raises(LockRuntimeError):
            await down.lock("aio:down", lock_timeout=1)
        await manager.destroy()

    asyncio.run(main())


def test_long_timeouts_and_auto_extension(plain: Cluster):
    async def main() -> None:
        manager = Aioredlock(plain.urls, internal_lock_timeout=0.5)
        await manager.lock("aio:day", lock_timeout=24 * 3600)
        plain.wait_pttl("aio:day", 23 * 3600 * 1000, [0])
        auto = await manager.lock("aio:auto")
        assert auto.lock_timeout is None
        await asyncio.sleep(1.2)
        assert await manager.is_locked(auto)
        assert {lk.resource for lk in await manager.get_active_locks()} == {"aio:day", "aio:auto"}
        await manager.destroy()
        assert plain.values(b"aio:day") == plain.values(b"aio:auto") == [None] * 3

    asyncio.run(main())


def test_extend_failure_unlocks(plain: Cluster):
    async def main() -> None:
        manager = Aioredlock(plain.urls, retry_count=1)
        lock = await manager.lock("aio:taken", lock_timeout=5)
        for a in plain.addrs:
            resp(a, "SET", "aio:taken", "someone-else")
        with pytest.raises(LockAcquiringError):
            await manager.extend(lock, lock_timeout=5)
        assert lock.valid is False
        plain.delete(b"aio:taken")
        await manager.destroy()

    asyncio.run(main())


def test_lock_identifier_is_the_value(plain: Cluster):
    async def main() -> None:
        manager = Aioredlock(plain.urls, retry_count=1)
        ident = str(uuid.uuid4())
        lock = await manager.lock("aio:ident", lock_timeout=5, lock_identifier=ident)
        assert lock.id == ident
        plain.wait_values(b"aio:ident", [ident.encode()] * 3)
        with pytest.raises(LockAcquiringError):  # SET NX: not re-entrant
            await manager.lock("aio:ident", lock_timeout=5, lock_identifier=ident)
        await manager.unlock(lock)
        assert plain.values(b"aio:ident") == [None] * 3
        await manager.destroy()

    asyncio.run(main())


def test_get_lock_from_another_manager(plain: Cluster):
    async def main() -> None:
        owner = Aioredlock(plain.urls)
        lock = await owner.lock("aio:get", lock_timeout=5)
        other = Aioredlock(plain.urls)
        got = await other.get_lock("aio:get", lock.id)
        assert (got.resource, got.id, got.valid) == ("aio:get", lock.id, True)
        assert 4.0 < got.lock_timeout <= 5.0
        with pytest.raises(LockAcquiringError):
            await other.get_lock("aio:get", "0" * 32)
        # Extended by value (it holds no native lock); never shortened.
        await other.extend(got, lock_timeout=30)
        plain.wait_pttl("aio:get", 29_000, [0])
        await other.extend(got)
        plain.wait_pttl("aio:get", 28_000, [0])
        await other.unlock(got)
        assert not await owner.is_locked("aio:get")
        with pytest.raises(RuntimeError):
            await other.extend(got)
        await owner.destroy()

    asyncio.run(main())


def test_extend_of_a_get_lock_lock_that_expired_fails_and_unlocks(plain: Cluster):
    async def main() -> None:
        owner = Aioredlock(plain.urls)
        lock = await owner.lock("aio:gone", lock_timeout=5)
        got = await Aioredlock(plain.urls).get_lock("aio:gone", lock.id)
        plain.delete(b"aio:gone")
        with pytest.raises(LockAcquiringError):
            await got.extend()
        assert got.valid is False
        assert plain.values(b"aio:gone") == [None] * 3  # never re-created
        await owner.destroy()

    asyncio.run(main())


def test_two_instances_of_one_server_count_once(plain: Cluster):
    async def main() -> None:
        one = {"host": "127.0.0.1", "port": plain.ports[0]}
        manager = Aioredlock([{**one, "db": 0}, {**one, "db": 1}], retry_count=1)
        lock = await manager.lock("aio:twice", lock_timeout=5)
        assert resp(plain.addrs[0], "GET", "aio:twice") == lock.id.encode()
        with pytest.raises(LockAcquiringError):
            await manager.lock("aio:twice", lock_timeout=5)
        await manager.unlock(lock)
        assert not await manager.is_locked("aio:twice")
        await manager.destroy()

    asyncio.run(main())


def test_redis_asyncio_objects_are_used_and_kept_open(plain: Cluster):
    async def main() -> None:
        clients = [redis.asyncio.Redis(host="127.0.0.1", port=p) for p in plain.ports]
        manager = Aioredlock(clients)
        lock = await manager.lock("aio:objects", lock_timeout=5)
        assert await clients[0].get("aio:objects") == lock.id.encode()
        await manager.destroy()
        assert await clients[0].ping()
        for c in clients:
            await c.aclose()

    asyncio.run(main())
