"""A Redis Cluster as one quorum member, next to two plain servers: its keys route by slot,
and multi-resource locks span slots (and primaries) all-or-nothing."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import pytest
import redis
import redis.asyncio
import redis.asyncio.cluster
import redis.cluster

import quorumlock
from quorumlock.compat._conn import node_url
from quorumlock.compat.aioredlock import Aioredlock
from quorumlock.compat.redlock import Redlock

from conftest import Cluster, resp

# Three names in three different slots (and so, with three primaries, mostly on different
# primaries); the keys are bare ("key_format": "bare"), as the compat layers write them.
NAMES = ["alpha", "bravo", "charlie"]


def cluster_url(c: Cluster) -> str:
    assert c.redis_cluster is not None
    return c.redis_cluster["url"]


def seeds(c: Cluster) -> list[redis.cluster.ClusterNode]:
    assert c.redis_cluster is not None
    return [redis.cluster.ClusterNode(*n["addr"].rsplit(":", 1)) for n in c.redis_cluster["nodes"]]


def wait_for(check: Callable[[], bool], secs: float = 2.0) -> None:
    deadline = time.monotonic() + secs
    while not check() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert check()


def test_native_client_locks_sets_across_slots(with_redis_cluster: Cluster):
    c = with_redis_cluster
    client = quorumlock.Client(
        [*c.urls, cluster_url(c)], quarantine="off", key_prefix="", key_format="bare"
    )
    assert client.node_count == 3
    assert client.addresses[2].startswith("cluster(")
    rc = redis.cluster.RedisCluster(startup_nodes=seeds(c))
    assert len({rc.keyslot(n) for n in NAMES}) == 3
    with client.lock(NAMES, ttl=5.0) as lock:
        value = lock.value.encode()
        wait_for(lambda: [rc.get(n) for n in NAMES] == [value] * 3)
        assert [c.get(0, n.encode()) for n in NAMES] == [value] * 3
        with pytest.raises(quorumlock.LockBusy):
            client.acquire(["zulu", NAMES[1]], retry_count=0)
    assert [rc.get(n) for n in NAMES] == [None] * 3
    # One name held in the cluster and on node 0: the set is refused by both, and the
    # cluster sets none of the other names (all-or-nothing across its slots).
    rc.set("bravo", "someone-else-value", px=5000)
    resp(c.addrs[0], "SET", "bravo", "someone-else-value", "PX", "5000")
    with pytest.raises(quorumlock.LockBusy) as info:
        client.acquire(NAMES, ttl=5.0, retry_count=0)
    assert [n.kind for n in info.value.nodes][::2] == ["HeldByOther", "HeldByOther"]
    wait_for(lambda: [rc.get(n) for n in NAMES] == [None, b"someone-else-value", None])
    rc.delete("bravo")
    c.delete(b"bravo")
    rc.close()


def test_redis_py_cluster_objects_become_one_member(with_redis_cluster: Cluster):
    c = with_redis_cluster
    assert c.redis_cluster is not None
    rc = redis.cluster.RedisCluster(startup_nodes=seeds(c)[:1])
    # Once connected, redis-py knows every node: all of them are seeds.
    assert sorted(node_url(rc)[len("redis+cluster://") :].split(",")) == sorted(
        n["addr"] for n in c.redis_cluster["nodes"]
    )
    rc.close()
    first = c.redis_cluster["nodes"][0]["addr"]
    arc = redis.asyncio.cluster.RedisCluster(
        startup_nodes=seeds(c)[:1], username="u", password="p/w", ssl=True
    )
    assert node_url(arc) == f"rediss+cluster://u:p%2Fw@{first}"


def test_redlock_with_a_redis_cluster_member(with_redis_cluster: Cluster):
    c = with_redis_cluster
    rc = redis.cluster.RedisCluster(startup_nodes=seeds(c))
    dlm = Redlock([*c.urls, rc])
    assert dlm.servers[2] is rc
    lock = dlm.lock("delta", 5000)
    assert lock and rc.get("delta") == lock.key
    dlm.unlock(lock)
    assert rc.get("delta") is None
    rc.close()


def test_aioredlock_with_an_asyncio_redis_cluster_member(with_redis_cluster: Cluster):
    c = with_redis_cluster

    async def main() -> None:
        arc = redis.asyncio.cluster.RedisCluster(startup_nodes=seeds(c))
        manager = Aioredlock([*c.urls, arc])
        lock = await manager.lock("echo", lock_timeout=5)
        assert await arc.get("echo") == lock.id.encode()
        await manager.extend(lock, lock_timeout=10)
        assert await arc.pttl("echo") > 9000
        await manager.unlock(lock)
        assert await arc.get("echo") is None
        await manager.destroy()
        assert await arc.ping()  # not closed by the manager
        await arc.aclose()

    asyncio.run(main())
