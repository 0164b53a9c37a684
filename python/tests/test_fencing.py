"""Fencing tokens, the restart quarantine and eviction-check settings, and ping()."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

import quorumlock

from conftest import Cluster, start_cluster, stop_cluster


def test_fenced_tokens_are_exact_and_increase(client: quorumlock.Client) -> None:
    with client.acquire("py:fence", fenced=True) as first:
        t1 = first.token
        assert isinstance(t1, int) and t1 > 2**50
        assert first.tokens == [t1]
    with client.acquire("py:fence", fenced=True) as second:
        assert second.token is not None and second.token > t1
    with client.acquire("py:fence") as plain:
        assert plain.token is None and plain.tokens is None


def test_multi_resource_tokens_and_exact_round_trip(cluster: Cluster) -> None:
    c = quorumlock.Client(cluster.urls, node_timeout=0.25, fenced=True, fence_counter_ttl=3600.0)
    with c.acquire(["py:fb", "py:fa"]) as lock:
        assert lock.resources == [b"py:fa", b"py:fb"]
        tokens = lock.tokens
        assert tokens is not None and len(tokens) == 2 and lock.token == tokens[0]
        # The counter on every node of the quorum holds exactly the token (no float rounding).
        stored = [int(v) for v in cluster.values(c.key("py:fa") + b":fence") if v is not None]
        assert tokens[0] in stored


def test_async_fenced(aclient: quorumlock.AsyncClient) -> None:
    async def main() -> int | None:
        async with await aclient.acquire("py:afence", fenced=True) as lock:
            return lock.token

    token = asyncio.run(main())
    assert token is not None and token > 2**50


def test_fence_options_are_checked(client: quorumlock.Client) -> None:
    with pytest.raises(TypeError):
        client.acquire("py:fence", fenced=1)
    with pytest.raises(quorumlock.InvalidArgument):
        client.acquire("py:fence", fenced=True, fence_counter_ttl=-1.0)
    assert "redis.call" in quorumlock.FENCE_CHECK_SCRIPT


@pytest.fixture(scope="module")
def volatile() -> Iterator[Cluster]:
    c = start_cluster(3, persist="none")
    try:
        yield c
    finally:
        stop_cluster(c)


def test_quarantine_default_refuses_fresh_volatile_nodes(volatile: Cluster) -> None:
    c = quorumlock.Client(volatile.urls, node_timeout=0.25)
    with pytest.raises(quorumlock.QuorumNotReached) as e:
        c.acquire("py:quarantine", retry_count=0)
    assert {n.kind for n in e.value.nodes} == {"Quarantined"}


def test_quarantine_off_locks_fresh_volatile_nodes(volatile: Cluster) -> None:
    c = quorumlock.Client(volatile.urls, node_timeout=0.25, quarantine="off", eviction_check="warn")
    with c.acquire("py:quarantine", retry_count=0) as lock:
        assert lock.is_held()


def test_client_settings_are_checked(volatile: Cluster) -> None:
    with pytest.raises(quorumlock.InvalidArgument):
        quorumlock.Client(volatile.urls, quarantine="maybe")
    with pytest.raises(TypeError):
        quorumlock.Client(volatile.urls, eviction_check=True)
    with pytest.raises(quorumlock.InvalidArgument):
        quorumlock.Client(volatile.urls, quarantine_margin=-1.0)
    quorumlock.Client(volatile.urls, quarantine="strict", quarantine_margin=1.0)


def test_ping_reports_every_node(client: quorumlock.Client, volatile: Cluster) -> None:
    infos = client.ping()
    assert [i.index for i in infos] == [0, 1, 2]
    for info in infos:
        assert info.kind == "Ok" and info.latency is not None and info.latency >= 0
        assert info.version and info.uptime is not None and info.role == "master"
        assert info.durable and info.persistence == (True, "always", False)
    fresh = quorumlock.Client(volatile.urls, quarantine="off").ping()
    assert not any(i.durable for i in fresh)
    assert all(i.persistence is not None and i.persistence[0] is False for i in fresh)


def test_async_ping(aclient: quorumlock.AsyncClient) -> None:
    infos = asyncio.run(aclient.ping())
    assert len(infos) == 3 and all(i.kind == "Ok" for i in infos)
