"""Auto-extension and the lost flag: keys deleted behind the holder's back are noticed."""

from __future__ import annotations

import asyncio
import threading

import pytest

import quorumlock

from conftest import Cluster, resp


def test_lost_flag_callback_and_scope_exit(client: quorumlock.Client, cluster: Cluster):
    called: list[BaseException] = []
    fired = threading.Event()

    def on_lost(exc: BaseException) -> None:
        called.append(exc)
        fired.set()

    key = client.key("lost:sync")
    with pytest.raises(quorumlock.LockLost) as info:
        with client.lock("lost:sync", ttl=0.9, on_lost=on_lost) as lock:
            assert not lock.lost.is_set()
            assert not lock.lost.wait(0.1)
            cluster.delete(key)
            assert lock.lost.wait(3.0)
            assert lock.lost.is_set()
            assert lock.remaining() == 0.0
    assert info.value.code == "QL_LOST"
    assert info.value.reason == "Expired"
    assert fired.wait(3.0)
    assert isinstance(called[0], quorumlock.LockLost)
    assert cluster.values(key) == [None] * 3


def test_lost_during_body_is_chained_to_body_error(client: quorumlock.Client, cluster: Cluster):
    with pytest.raises(quorumlock.LockLost) as info:
        with client.lock("lost:chain", ttl=0.9) as lock:
            cluster.delete(client.key("lost:chain"))
            assert lock.lost.wait(3.0)
            raise RuntimeError("body failed")
    assert isinstance(info.value.__cause__, RuntimeError)


def test_taken_over_lock_is_lost_with_reason(client: quorumlock.Client, cluster: Cluster):
    lock = client.acquire("lost:taken", ttl=0.9, auto_extend=True)
    key = client.key("lost:taken")
    for i in range(3):
        assert cluster.get(i, key) == lock.value.encode()
    for a in cluster.addrs:
        resp(a, "SET", key, "someone-else", "PX", "5000")
    assert lock.lost.wait(3.0)
    assert lock.lost.error().reason == "Taken"
    lock.release()  # never deletes another holder's key
    cluster.wait_values(key, [b"someone-else"] * 3)
    cluster.delete(key)


def test_release_ends_a_lost_wait_without_firing(client: quorumlock.Client):
    lock = client.acquire("lost:released", ttl=2.0)
    threading.Timer(0.2, lock.release).start()
    assert lock.lost.wait(3.0) is False
    assert not lock.lost.is_set()


def test_async_lost_wait(aclient: quorumlock.AsyncClient, cluster: Cluster):
    async def main() -> None:
        async with aclient.lock("lost:async", ttl=0.9) as lock:
            waiter = asyncio.ensure_future(lock.lost.wait())
            await asyncio.sleep(0.1)
            assert not waiter.done()
            cluster.delete(aclient.key("lost:async"))
            assert await asyncio.wait_for(waiter, 3.0) is True
            assert lock.lost.is_set()

    with pytest.raises(quorumlock.LockLost):
        asyncio.run(main())
