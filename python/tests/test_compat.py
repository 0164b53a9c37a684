"""The drop-ins run their libraries' README examples unchanged apart from the import line
(and the node list, which points at the test nodes)."""

from __future__ import annotations

import asyncio
from typing import ClassVar

import pytest

import quorumlock

from conftest import Cluster


def test_redlock_py_readme(cluster: Cluster):
    from quorumlock.compat.redlock import Lock, MultipleRedlockException, Redlock

    p = cluster.ports
    # README: dlm = Redlock([{"host": "localhost", "port": 6379, "db": 0}, ])
    dlm = Redlock(
        [
            {"host": "127.0.0.1", "port": p[0], "db": 0},
            {"host": "127.0.0.1", "port": p[1], "db": 0},
            f"redis://127.0.0.1:{p[2]}/0",
        ]
    )
    my_lock = dlm.lock("my_resource_name", 1000)
    assert isinstance(my_lock, Lock)
    assert 0 < my_lock.validity <= 1000
    assert my_lock.resource == "my_resource_name"
    # The bare resource name is the key, as in redlock-py.
    assert cluster.get(0, b"my_resource_name") == my_lock.key.encode()
    assert dlm.lock("my_resource_name", 1000) is False
    dlm.unlock(my_lock)
    again = dlm.lock("my_resource_name", 1000)
    assert again and again.key != my_lock.key
    dlm.unlock(again)

    down = Redlock([("127.0.0.1", 1), ("127.0.0.1", 2), ("127.0.0.1", 3)], retry_count=1)
    with pytest.raises(MultipleRedlockException):
        down.lock("my_resource_name", 1000)


def test_aioredlock_readme(cluster: Cluster):
    from quorumlock.compat.aioredlock import Aioredlock, LockError

    p = cluster.ports

    async def readme() -> None:
        # Define a list of connections to your Redis instances:
        redis_instances = [
            ("127.0.0.1", p[0]),
            {"host": "127.0.0.1", "port": p[1], "db": 0},
            f"redis://127.0.0.1:{p[2]}/0",
        ]

        # Create a lock manager:
        lock_manager = Aioredlock(redis_instances)

        # Check wether a resourece acquired by any other redlock instance:
        assert not await lock_manager.is_locked("resource_name")

        # Try to acquire the lock:
        try:
            lock = await lock_manager.lock("resource_name", lock_timeout=10)
        except LockError:
            print("Lock not acquired")
            raise

        # Now the lock is acquired:
        assert lock.valid
        assert await lock_manager.is_locked("resource_name")

        # Extend lifetime of the lock:
        await lock_manager.extend(lock, lock_timeout=10)
        # Raises LockError if the lock manager can not extend the lock lifetime
        # on more then half of the instances.

        # Release the lock:
        await lock_manager.unlock(lock)
        # Raises LockError if the lock manager can not release the lock
        # on more then half of redis instances.

        # The released lock become invalid:
        assert not lock.valid
        assert not await lock_manager.is_locked("resource_name")

        # Or you can use the lock as async context manager:
        try:
            async with await lock_manager.lock("resource_name") as lock:
                assert lock.valid is True
                # Do your stuff having the lock
                await lock.extend()  # alias for lock_manager.extend(lock)
                # Do more stuff having the lock
            assert lock.valid is False  # lock will be released by context manager
        except LockError:
            print("Lock not acquired")
            raise

        # Clear the connections with Redis:
        await lock_manager.destroy()

    asyncio.run(readme())


def test_aioredlock_errors(cluster: Cluster):
    from quorumlock.compat.aioredlock import Aioredlock, LockAcquiringError, LockError

    async def main() -> None:
        manager = Aioredlock(cluster.urls, retry_count=1)
        held = await manager.lock("aio:busy", lock_timeout=5)
        with pytest.raises(LockAcquiringError):
            await manager.lock("aio:busy", lock_timeout=5)
        assert issubclass(LockAcquiringError, LockError)
        with pytest.raises(ValueError):
            await manager.lock("aio:busy", lock_timeout=-1)
        with pytest.raises(TypeError):
            await manager.is_locked(5)
        await manager.unlock(held)
        with pytest.raises(RuntimeError):
            await manager.extend(held)
        await manager.destroy()

    asyncio.run(main())
    with pytest.raises(ValueError):
        Aioredlock(cluster.urls, retry_count=0)


def test_connection_descriptions():
    from quorumlock.compat._conn import node_urls

    class Pool:
        connection_kwargs: ClassVar[dict[str, object]] = {
            "host": "::1",
            "port": 7000,
            "db": 2,
            "password": "p@ss",
        }

    class RedisPy:
        connection_pool = Pool()

    assert node_urls(
        [
            "redis://a:1",
            {"host": "h", "port": 2, "db": 3, "username": "u", "password": "x/y"},
            ("h", 4),
            RedisPy(),
            {"unix_socket_path": "/tmp/r.sock", "db": 1},
        ]
    ) == [
        "redis://a:1",
        "redis://u:x%2Fy@h:2/3",
        "redis://h:4/0",
        "redis://:p%40ss@[::1]:7000/2",
        "unix:///tmp/r.sock?db=1",
    ]
    with pytest.raises(TypeError):
        node_urls("redis://a:1")
    with pytest.raises(TypeError):
        node_urls([object()])
    assert issubclass(quorumlock.InvalidArgument, ValueError)
