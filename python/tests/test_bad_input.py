"""Bad input (TESTING.md §8.1, Python): TypeError or InvalidArgument (a ValueError), nothing
sent, never a crash; the client stays usable."""

from __future__ import annotations

import asyncio

import pytest

import quorumlock

from conftest import Cluster

BAD_TTLS = [
    ("10", TypeError),
    (None, TypeError),
    (True, TypeError),
    ([1], TypeError),
    (0, quorumlock.InvalidArgument),
    (-1.0, quorumlock.InvalidArgument),
    (float("nan"), quorumlock.InvalidArgument),
    (float("inf"), quorumlock.InvalidArgument),
    (2**70, quorumlock.InvalidArgument),
    (1e-9, quorumlock.InvalidArgument),
    (0.0025, quorumlock.InvalidArgument),  # not a whole number of milliseconds
    (0.002, quorumlock.InvalidArgument),  # no validity left after drift
    (61.0, quorumlock.InvalidArgument),  # above max_ttl
]


@pytest.mark.parametrize(("ttl", "expected"), BAD_TTLS)
def test_bad_ttl(client: quorumlock.Client, cluster: Cluster, ttl: object, expected: type):
    with pytest.raises(expected):
        client.acquire("bad:ttl", ttl=ttl)
    with pytest.raises(expected):
        with client.lock("bad:ttl", ttl=ttl):
            pass
    assert cluster.values(client.key("bad:ttl")) == [None] * 3


@pytest.mark.parametrize(
    ("resources", "expected"),
    [
        (None, TypeError),
        (123, TypeError),
        ([b"ok", 5], TypeError),
        ("", quorumlock.InvalidArgument),
        ([], quorumlock.InvalidArgument),
        ("x" * 1025, quorumlock.InvalidArgument),
    ],
)
def test_bad_resources(client: quorumlock.Client, resources: object, expected: type):
    with pytest.raises(expected):
        client.acquire(resources)


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"retry_count": -1}, quorumlock.InvalidArgument),
        ({"retry_count": 2**40}, quorumlock.InvalidArgument),
        ({"retry_count": 1.5}, TypeError),
        ({"retry_delay": -0.1}, quorumlock.InvalidArgument),
        ({"auto_extend": "yes"}, TypeError),
        ({"node_timeout": 0}, quorumlock.InvalidArgument),
        ({"no_such_option": 1}, TypeError),
    ],
)
def test_bad_options(client: quorumlock.Client, options: dict, expected: type):
    with pytest.raises(expected):
        client.acquire("bad:options", ttl=1.0, **options)


@pytest.mark.parametrize(
    ("nodes", "options", "expected"),
    [
        ("redis://127.0.0.1:1", {}, TypeError),
        ([1, 2], {}, TypeError),
        ([None], {}, TypeError),
        ([], {}, quorumlock.InvalidArgument),
        (["http://127.0.0.1:1"], {}, quorumlock.InvalidArgument),
        (["redis://127.0.0.1:notaport"], {}, quorumlock.InvalidArgument),
        (["redis+cluster://127.0.0.1:1/2"], {}, quorumlock.InvalidArgument),
        (["redis+cluster://127.0.0.1:1,,h:2"], {}, quorumlock.InvalidArgument),
        (["redis://127.0.0.1:1"], {"drift_factor": float("nan")}, quorumlock.InvalidArgument),
        (["redis://127.0.0.1:1"], {"drift_factor": -0.1}, quorumlock.InvalidArgument),
        (["redis://127.0.0.1:1"], {"drift_factor": "x"}, TypeError),
        (["redis://127.0.0.1:1"], {"key_prefix": 5}, TypeError),
        (["redis://127.0.0.1:1"], {"ttl": -5}, quorumlock.InvalidArgument),
    ],
)
def test_bad_client_config(nodes: object, options: dict, expected: type):
    with pytest.raises(expected):
        quorumlock.Client(nodes, **options)


def test_range_errors_come_from_the_engine_with_one_message_format(client: quorumlock.Client):
    with pytest.raises(quorumlock.InvalidArgument, match=r"ttl must be at least 1 ms \(got 0 ms\)"):
        client.acquire("bad:range", ttl=0)
    with pytest.raises(quorumlock.InvalidArgument, match="retry_count must be a whole number"):
        client.acquire("bad:range", ttl=1.0, retry_count=-1)
    with pytest.raises(
        quorumlock.InvalidArgument, match="quarantine must be one of on, strict, off"
    ):
        quorumlock.Client(["redis://127.0.0.1:1"], quarantine="maybe")
    with pytest.raises(quorumlock.InvalidArgument, match="reprobe_every must be at least 1 ms"):
        quorumlock.Client(["redis://127.0.0.1:1"], reprobe_every=0)
    with pytest.raises(TypeError, match="drift_constant"):
        quorumlock.Client(["redis://127.0.0.1:1"], drift_constant="2ms")


def test_every_option_of_the_engine_table_is_a_keyword(cluster: Cluster):
    client = quorumlock.Client(
        cluster.urls,
        drift_constant=0.003,
        reprobe_every=30.0,
        quarantine_margin=0,
        node_timeout=0.25,
        retry_count=0,
    )
    client.acquire("all-options").release()


def test_unreachable_nodes_give_quorum_not_reached():
    client = quorumlock.Client(
        ["redis://127.0.0.1:1", "redis://127.0.0.1:2", "redis://127.0.0.1:3"],
        connect_timeout=0.2,
    )
    with pytest.raises(quorumlock.QuorumNotReached) as info:
        client.acquire("bad:unreachable", retry_count=0)
    assert len(info.value.nodes) == 3
    assert all(n.kind != "Ok" for n in info.value.nodes)
    with pytest.raises(quorumlock.ConnectionFailed):
        quorumlock.Client(["redis://127.0.0.1:1"], connect_timeout=0.2, require_quorum=True)


def test_bad_async_input_and_client_still_usable(aclient: quorumlock.AsyncClient):
    async def main() -> None:
        with pytest.raises(TypeError):
            await aclient.acquire(None)
        with pytest.raises(quorumlock.InvalidArgument):
            await aclient.acquire("bad:async", ttl=-1)
        lock = await aclient.acquire("bad:async", ttl=1.0)
        with pytest.raises(TypeError):
            await lock.extend("2")
        with pytest.raises(quorumlock.InvalidArgument):
            await lock.extend(float("nan"))
        await lock.release()

    asyncio.run(main())


def test_bad_lock_calls_keep_the_lock(client: quorumlock.Client, cluster: Cluster):
    lock = client.acquire("bad:lock", ttl=2.0)
    with pytest.raises(TypeError):
        lock.extend("1")
    with pytest.raises(quorumlock.InvalidArgument):
        lock.extend(-1.0)
    with pytest.raises(TypeError):
        lock.lost.wait("1")
    with pytest.raises(TypeError):
        lock.set_auto_extend("yes")
    assert lock.is_held()
    cluster.wait_values(client.key("bad:lock"), [lock.value.encode()] * 3)
    lock.release()
    with pytest.raises(quorumlock.InvalidArgument):
        client.release_value("bad:lock", "short")
    client.acquire("bad:lock", ttl=1.0).release()


def test_durations_as_timedelta(cluster: Cluster):
    from datetime import timedelta

    client = quorumlock.Client(cluster.urls, max_ttl=timedelta(days=10**8), node_timeout=0.25)
    # Exact where a float is not: 2^53 // 10 ms is no whole number of float seconds.
    ms = (2**53 - 1) // 10
    lock = client.acquire("td", ttl=timedelta(milliseconds=ms), retry_count=0)
    assert abs(lock.ttl - ms / 1000) < 0.01
    lock.release()
    with pytest.raises(quorumlock.InvalidArgument, match="negative"):
        client.acquire("td", ttl=timedelta(seconds=-1))
