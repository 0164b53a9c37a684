"""Locks by value: a value of the caller's own (``value=``), ``extend_value``,
``release_value``, ``inspect``, and each attempt's node report on a failed acquisition."""

from __future__ import annotations

import asyncio

import pytest

import quorumlock

from conftest import Cluster, resp

MINE = "caller-chosen-value-0001"


def test_given_value_is_stored_and_checked(client: quorumlock.Client, cluster: Cluster):
    key = client.key("val:given")
    with client.lock("val:given", ttl=5.0, value=MINE) as lock:
        assert lock.value == MINE
        cluster.wait_values(key, [MINE.encode()] * 3)
        with pytest.raises(quorumlock.LockBusy):
            client.acquire("val:given", retry_count=0, value=MINE)  # not re-entrant
    assert cluster.values(key) == [None] * 3
    with pytest.raises(quorumlock.InvalidArgument, match="16 printable"):
        client.acquire("val:given", value="too-short")
    with pytest.raises(quorumlock.InvalidArgument):
        client.acquire("val:given", value="has a space in the middle")
    with pytest.raises(TypeError, match="value must be a str"):
        client.acquire("val:given", value=b"bytes-are-not-a-value")
    with pytest.raises(TypeError, match="lock option"):
        quorumlock.Client(cluster.urls, value=MINE)


def test_extend_value_lengthens_only_keys_holding_the_value(
    client: quorumlock.Client, cluster: Cluster
):
    lock = client.acquire("val:extend", ttl=2.0)
    key = client.key("val:extend")
    validity = client.extend_value("val:extend", lock.value, 20.0)
    assert 19.0 < validity <= 20.0
    cluster.wait_pttl(key, 19_000)
    with pytest.raises(quorumlock.LockLost):
        client.extend_value("val:extend", MINE, 20.0)
    lock.release()
    with pytest.raises(quorumlock.LockLost):  # never re-created
        client.extend_value("val:extend", lock.value, 20.0)
    assert cluster.values(key) == [None] * 3
    with pytest.raises(quorumlock.InvalidArgument):
        client.extend_value("val:extend", "short", 1.0)
    with pytest.raises(TypeError):
        client.extend_value("val:extend", lock.value, "1")


def test_async_extend_value_and_inspect(aclient: quorumlock.AsyncClient, cluster: Cluster):
    async def main() -> None:
        lock = await aclient.acquire("val:async", ttl=2.0, value=MINE)
        assert 9.0 < await aclient.extend_value("val:async", MINE, 10.0) <= 10.0
        found = await aclient.inspect("val:async")
        assert found.holder == MINE and found.quorum == 2
        assert [n.value for n in found.nodes] == [MINE] * 3
        assert all(n.kind == "Ok" and 9.0 < n.ttl <= 10.0 for n in found.nodes)
        await lock.release()
        found = await aclient.inspect("val:async")
        assert found.holder is None
        assert [(n.value, n.ttl) for n in found.nodes] == [(None, None)] * 3

    asyncio.run(main())


def test_inspect_sees_a_minority_holder(client: quorumlock.Client, cluster: Cluster):
    key = client.key("val:minority")
    resp(cluster.addrs[0], "SET", key, MINE, "PX", "5000")
    found = client.inspect("val:minority")
    assert found.holder is None
    assert [n.value for n in found.nodes] == [MINE, None, None]
    assert 4.0 < found.nodes[0].ttl <= 5.0
    assert [n.index for n in found.nodes] == [0, 1, 2]
    cluster.delete(key)


def test_release_value_of_a_peer_value(client: quorumlock.Client, cluster: Cluster):
    # redlock-py's values: 22 letters and digits.
    peer = "aZ3kP9qL2mX7vB1nC8dF0g"
    key = client.key("val:peer")
    for a in cluster.addrs:
        resp(a, "SET", key, peer, "PX", "5000")
    kinds = [n.kind for n in client.release_value("val:peer", "someone-else-value-01")]
    assert kinds == ["HeldByOther"] * 3 and cluster.values(key) == [peer.encode()] * 3
    kinds = [n.kind for n in client.release_value("val:peer", peer)]
    assert kinds == ["Released"] * 3 and cluster.values(key) == [None] * 3


def test_each_attempt_has_its_node_report(client: quorumlock.Client):
    with client.lock("val:attempts", ttl=5.0):
        with pytest.raises(quorumlock.LockBusy) as info:
            client.acquire("val:attempts", retry_count=2, retry_delay=0.01)
    err = info.value
    assert err.attempts == 3
    assert len(err.attempt_reports) == 3
    assert err.attempt_reports[-1] == err.nodes
    for report in err.attempt_reports:
        assert [n.index for n in report] == [0, 1, 2]
        assert [n.kind for n in report].count("HeldByOther") >= 2
    # Errors that sent nothing have no attempts.
    with pytest.raises(quorumlock.InvalidArgument) as bad:
        client.acquire("val:attempts", ttl=-1.0)
    assert bad.value.attempt_reports == ()
