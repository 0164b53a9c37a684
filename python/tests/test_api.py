"""The sync and asyncio APIs against real nodes: acquire, busy, scopes, extend, decorators."""

from __future__ import annotations

import asyncio
import threading

import pytest

import quorumlock
from quorumlock import _quorumlock

from conftest import Cluster


def test_acquire_release_writes_and_removes_keys(client: quorumlock.Client, cluster: Cluster):
    lock = client.acquire("api:plain", ttl=5.0)
    key = client.key("api:plain")
    assert key == b"quorumlock:{api:plain}"
    cluster.wait_values(key, [lock.value.encode()] * 3)
    assert len(lock.value) == 40
    assert 4.0 < lock.validity <= 5.0
    assert 0 < lock.remaining() <= lock.validity
    assert lock.resources == [b"api:plain"]
    assert [n.kind for n in lock.nodes].count("Ok") >= 2
    report = lock.release()
    assert [n.kind for n in report] == ["Released"] * 3
    assert cluster.values(key) == [None] * 3
    assert lock.remaining() == 0.0
    assert lock.release() == report  # idempotent: the first report again


def test_busy_carries_node_report(client: quorumlock.Client):
    with client.lock("api:busy", ttl=5.0) as held:
        with pytest.raises(quorumlock.LockBusy) as info:
            client.acquire("api:busy", retry_count=0)
        assert held.is_held()
    err = info.value
    assert isinstance(err, quorumlock.QuorumlockError)
    assert err.code == "QL_BUSY"
    assert err.attempts == 1
    kinds = [n.kind for n in err.nodes]
    assert kinds.count("HeldByOther") >= 2  # decided at the quorum; the rest may be pending
    assert set(kinds) <= {"HeldByOther", "Pending"}
    assert [n.index for n in err.nodes] == [0, 1, 2]
    assert all(":" in n.address for n in err.nodes)
    client.acquire("api:busy", retry_count=0).release()  # free again after the scope


def test_exception_in_body_releases_and_reraises(client: quorumlock.Client, cluster: Cluster):
    with pytest.raises(KeyError):
        with client.lock("api:body") as lock:
            raise KeyError("body")
    assert lock.remaining() == 0.0
    assert cluster.values(client.key("api:body")) == [None] * 3


def test_extend_and_auto_extend_keep_the_lock(client: quorumlock.Client):
    lock = client.acquire("api:extend", ttl=1.0)
    lock.extend(2.0)
    assert lock.remaining() > 1.0
    assert lock.extensions == 1
    lock.release()
    with pytest.raises(quorumlock.InvalidArgument):
        lock.extend()
    with client.lock("api:auto", ttl=0.6) as auto:
        assert auto.auto_extending
        threading.Event().wait(1.5)
        assert auto.is_held()
        assert auto.extensions >= 2
        assert not auto.lost.is_set()


def test_synchronized_functions_and_coroutines(client: quorumlock.Client, cluster: Cluster):
    key = client.key("api:sync")

    @client.synchronized("api:sync", ttl=2.0)
    def work(x: int) -> tuple[int, list[bytes | None]]:
        return x * 2, cluster.values(key)

    doubled, seen = work(21)
    assert doubled == 42
    assert None not in seen and len(set(seen)) == 1
    assert cluster.values(key) == [None] * 3

    @client.synchronized("api:sync", ttl=2.0)
    async def awork() -> list[bytes | None]:
        await asyncio.sleep(0)
        return cluster.values(key)

    seen = asyncio.run(awork())
    assert None not in seen
    assert cluster.values(key) == [None] * 3


def test_asyncio_client(cluster: Cluster):
    async def main() -> None:
        aclient = quorumlock.AsyncClient(cluster.urls, node_timeout=0.25)
        async with aclient.lock("api:async", ttl=2.0) as lock:
            assert isinstance(lock, quorumlock.AsyncLock)
            assert await aclient.holder("api:async") == lock.value
            await lock.extend(3.0)
            assert lock.remaining() > 2.0
            with pytest.raises(quorumlock.LockBusy):
                await aclient.acquire("api:async", retry_count=0)
        assert await aclient.holder("api:async") is None
        second = await aclient.acquire(["api:async", "api:async2"], ttl=2.0)
        assert second.resources == [b"api:async", b"api:async2"]
        assert [n.kind for n in await second.release()] == ["Released"] * 3
        # A sync client's scope also works with `async with`.
        sync_client = quorumlock.Client(cluster.urls)
        async with sync_client.lock("api:async") as lock2:
            assert lock2.is_held()

    asyncio.run(main())


def test_gil_is_released_while_waiting(client: quorumlock.Client):
    ticks = 0
    stop = threading.Event()

    def spin() -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            stop.wait(0.001)

    with client.lock("api:gil", ttl=5.0):
        t = threading.Thread(target=spin)
        t.start()
        with pytest.raises(quorumlock.LockBusy):
            client.acquire("api:gil", retry_count=5, retry_delay=0.1, retry_jitter=0.0)
        stop.set()
        t.join()
    assert ticks > 100


def test_every_error_kind_maps_to_its_own_class():
    kinds = _quorumlock.error_kinds()
    assert [n for _, n in kinds] == list(range(1, 13))
    classes = set()
    for code, number in kinds:
        exc = _quorumlock.error_for_kind(number)
        assert isinstance(exc, quorumlock.QuorumlockError)
        assert type(exc) is not quorumlock.QuorumlockError, code
        assert exc.code == code
        classes.add(type(exc))
    assert len(classes) == len(kinds)
    assert issubclass(quorumlock.InvalidArgument, ValueError)
    assert issubclass(quorumlock.ConnectionFailed, ConnectionError)
    assert issubclass(quorumlock.TimedOut, TimeoutError)
    by_code = {c: type(_quorumlock.error_for_kind(n)).__name__ for c, n in kinds}
    assert by_code["QL_BUSY"] == "LockBusy"
    assert by_code["QL_LOST"] == "LockLost"
    assert by_code["QL_TIMEOUT"] == "TimedOut"


def test_version_matches_cargo():
    from pathlib import Path

    cargo = (Path(__file__).resolve().parents[2] / "Cargo.toml").read_text()
    assert f'version = "{quorumlock.__version__}"' in cargo
