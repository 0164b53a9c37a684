"""Node failures: without a majority of nodes no lock is granted, with per-node detail."""

from __future__ import annotations

import asyncio
import time

import pytest

import quorumlock

from conftest import Cluster, start_cluster, stop_cluster

VOTES = {"Ok", "HeldByOther", "NotHeld", "Pending"}


@pytest.fixture
def five() -> Cluster:
    cluster = start_cluster(5)
    try:
        yield cluster
    finally:
        stop_cluster(cluster)


def _kill_majority(cluster: Cluster, client: quorumlock.Client) -> None:
    client.acquire("faults:q", ttl=2.0).release()
    for i in (0, 1, 2):
        cluster.ctl({"op": "kill", "node": i})


def test_quorum_lost_when_a_majority_is_killed(five: Cluster):
    client = quorumlock.Client(five.urls, node_timeout=0.2)
    _kill_majority(five, client)
    with pytest.raises(quorumlock.QuorumNotReached) as info:
        client.acquire("faults:q", retry_count=1, retry_delay=0.01)
    err = info.value
    assert err.code == "QL_QUORUM"
    assert err.attempts == 2
    kinds = [n.kind for n in err.nodes]
    assert all(k in VOTES for k in kinds[3:]), kinds  # the survivors answered
    assert all(k not in VOTES for k in kinds[:3]), kinds  # the killed nodes failed
    assert all(n.detail for n in err.nodes[:3])

    async def main() -> None:
        aclient = quorumlock.AsyncClient(five.urls, node_timeout=0.2)
        with pytest.raises(quorumlock.QuorumNotReached):
            await aclient.acquire("faults:q", retry_count=0)

    asyncio.run(main())


def test_failed_attempt_leaves_no_key_on_survivors(five: Cluster):
    client = quorumlock.Client(five.urls, node_timeout=0.2)
    _kill_majority(five, client)
    with pytest.raises(quorumlock.QuorumNotReached):
        client.acquire("faults:q", ttl=5.0, retry_count=0)
    key = client.key("faults:q")
    deadline = time.monotonic() + 1.0
    while any(five.get(i, key) for i in (3, 4)) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert [five.get(i, key) for i in (3, 4)] == [None, None]
