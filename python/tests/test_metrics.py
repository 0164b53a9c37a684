"""Client.metrics(): exact client totals, per-node replies (a killed node's errors), the
Prometheus text, histograms, and the asyncio client."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable, Iterator

import pytest

import quorumlock

from conftest import Cluster, start_cluster, stop_cluster

NODE_ERRORS = {"Timeout", "ConnectionRefused", "ConnectionLost", "NotConnected"}


def fresh(cluster: Cluster) -> quorumlock.Client:
    """A client of its own, so that its counters see only this test (a generous node timeout:
    a slow reply would change the counts)."""
    return quorumlock.Client(cluster.urls, node_timeout=1.0, retry_delay=0.02, retry_jitter=0.02)


def delta(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    return {k: n - before.get(k, 0) for k, n in after.items() if n != before.get(k, 0)}


def replies_since(client: quorumlock.Client, base: quorumlock.Metrics) -> list[dict[str, int]]:
    now = client.metrics().nodes
    return [delta(n.replies, b.replies) for n, b in zip(now, base.nodes, strict=True)]


def poll(check: Callable[[], bool], secs: float = 3.0) -> None:
    """Replies that land after an operation was decided are counted in the background."""
    deadline = time.monotonic() + secs
    while not check() and time.monotonic() < deadline:
        time.sleep(0.02)


def test_counts_after_acquire_extend_busy_release(cluster: Cluster):
    client = fresh(cluster)
    base = client.metrics()
    assert base.acquire_attempts == 0
    assert base.acquire.ok == base.extend.ok == base.release.ok == 0
    assert [n.index for n in base.nodes] == [0, 1, 2]
    assert [n.address for n in base.nodes] == client.addresses

    lock = client.acquire("metrics:counts", ttl=5.0)
    lock.extend()
    with pytest.raises(quorumlock.LockBusy):
        client.acquire("metrics:counts", retry_count=0)
    lock.release()

    m = client.metrics()  # client-level totals are exact when the calls return
    assert m.acquire_attempts == 2
    assert m.acquire.ok == 1
    assert m.acquire.failed == {"QL_BUSY": 1}
    assert m.acquire.failures == 1
    assert m.acquire.latency.count == 2
    assert m.extend.ok == 1 and m.extend.failed == {} and m.extend.latency.count == 1
    assert m.release.ok == 1 and m.release.failed == {} and m.release.latency.count == 1
    assert m.lost == 0 and m.wakeups == 0
    # Per node: the acquire and the extend, the busy round, the release; and the busy
    # attempt's cleanup only where the round was decided before the node answered (a node
    # that refused is not cleaned).
    poll(
        lambda: all(
            r.get("Ok") == 2 and r.get("Released") == 1 for r in replies_since(client, base)
        )
    )
    time.sleep(0.2)  # a cleanup still in flight lands within this
    for r in replies_since(client, base):
        assert r.get("HeldByOther") in (1, 2), r
        assert r == {"Ok": 2, "HeldByOther": r["HeldByOther"], "Released": 1}
    for node, before in zip(client.metrics().nodes, base.nodes, strict=True):
        held = node.replies["HeldByOther"] - before.replies.get("HeldByOther", 0)
        assert node.requests - before.requests == 3 + held
        assert node.errors == 0
        assert node.latency.count - before.latency.count == 3 + held
    assert base.acquire.ok == 0, "a snapshot does not change afterwards"


def test_prometheus_text(cluster: Cluster):
    client = fresh(cluster)
    with client.lock("metrics:prom", ttl=5.0):
        with pytest.raises(quorumlock.LockBusy):
            client.acquire("metrics:prom", retry_count=0)
    text = client.metrics().to_prometheus()
    assert 'quorumlock_acquire_total{outcome="ok"} 1\n' in text
    assert 'quorumlock_acquire_total{outcome="QL_BUSY"} 1\n' in text
    assert 'quorumlock_release_total{outcome="ok"} 1\n' in text
    assert "quorumlock_acquire_duration_seconds_count 2\n" in text
    assert "# TYPE quorumlock_node_latency_seconds histogram\n" in text
    address = client.addresses[0]
    assert f'quorumlock_node_requests_total{{node="{address}",kind="Ok"}}' in text


def test_histogram_and_objects(cluster: Cluster):
    client = fresh(cluster)
    client.acquire("metrics:histo", ttl=5.0).release()
    m = client.metrics()
    h = m.acquire.latency
    assert h.bounds_us[0] == 100 and h.bounds_us[-1] == 10_000_000
    assert len(h.counts) == len(h.bounds_us) + 1  # the last bucket is unbounded
    assert h.count == sum(h.counts) == 1
    assert h.sum_us > 0
    median = h.quantile(0.5)
    assert median is not None and median * 1e6 in h.bounds_us
    assert median >= h.sum_us / 1e6  # an upper estimate
    assert h.quantile(0) == h.quantile(1) == median
    assert m.extend.latency.quantile(0.99) is None  # empty
    with pytest.raises(TypeError):
        h.quantile("0.5")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        h.quantile(None)  # type: ignore[arg-type]
    with pytest.raises(quorumlock.InvalidArgument):
        h.quantile(math.nan)

    with pytest.raises(AttributeError):
        m.lost = 3  # type: ignore[misc]
    with pytest.raises(AttributeError):
        h.sum_us = 0  # type: ignore[misc]
    assert m.acquire.failed["QL_BUSY"] == 0  # a Counter: codes not seen read 0
    assert m.nodes[0].replies["Timeout"] == 0
    m.acquire.failed["QL_BUSY"] = 9  # a fresh Counter each time: the snapshot stays as it was
    assert m.acquire.failed == {}
    assert m.acquire == m.acquire and m.acquire is not m.acquire  # compared by value
    assert repr(m).startswith("Metrics(acquire_attempts=1, acquire=OpMetrics(ok=1, failed={}, ")
    assert "NodeMetrics(index=0, address=" in repr(m)
    assert repr(h) == f"Histogram(count=1, sum_us={h.sum_us})"


@pytest.fixture
def own() -> Iterator[Cluster]:
    cluster = start_cluster(3)
    try:
        yield cluster
    finally:
        stop_cluster(cluster)


def test_killed_node_errors_are_counted_on_that_node(own: Cluster):
    client = quorumlock.Client(own.urls, node_timeout=1.0)
    base = client.metrics()
    own.ctl({"op": "kill", "node": 0})
    client.acquire("metrics:kill", ttl=5.0).release()  # 2 of 3 is a quorum

    m = client.metrics()
    assert m.acquire.ok == 1 and m.release.ok == 1 and m.acquire.failures == 0

    def errors() -> list[int]:
        now = client.metrics().nodes
        return [n.errors - b.errors for n, b in zip(now, base.nodes, strict=True)]

    poll(lambda: errors()[0] >= 2)
    assert errors() == [2, 0, 0]
    killed, *alive = replies_since(client, base)
    assert set(killed) <= NODE_ERRORS, killed
    assert alive == [{"Ok": 1, "Released": 1}] * 2
    text = client.metrics().to_prometheus()
    kind = next(iter(killed))
    assert f'quorumlock_node_requests_total{{node="{client.addresses[0]}",kind="{kind}"}}' in text


def test_async_client_metrics(cluster: Cluster):
    async def main() -> None:
        client = quorumlock.AsyncClient(
            cluster.urls, node_timeout=1.0, retry_delay=0.02, retry_jitter=0.02
        )
        lock = await client.acquire("metrics:async", ttl=5.0)
        await lock.extend(6.0)
        with pytest.raises(quorumlock.LockBusy):
            await client.acquire("metrics:async", retry_count=0)
        await lock.release()
        m = client.metrics()  # synchronous: a snapshot needs no I/O
        assert isinstance(m, quorumlock.Metrics)
        assert m.acquire_attempts == 2
        assert (m.acquire.ok, m.acquire.failed) == (1, {"QL_BUSY": 1})
        assert (m.extend.ok, m.release.ok) == (1, 1)
        assert len(m.nodes) == 3

    asyncio.run(main())
