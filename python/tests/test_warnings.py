"""Engine warnings reach the ``quorumlock`` logger once per kind and node, with ``code`` and
``node`` on the record; one server listed twice counts once."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest

import quorumlock
from quorumlock.compat.aioredlock import Aioredlock
from quorumlock.compat.redlock import Redlock

from conftest import Cluster


def records(caplog: pytest.LogCaptureFixture, code: str, count: int) -> list[logging.LogRecord]:
    """The ``quorumlock`` records with ``code``, once ``count`` arrived (they are logged
    from an engine thread) and a moment passed for any extra one."""
    deadline = time.monotonic() + 3.0

    def found() -> list[logging.LogRecord]:
        return [
            r for r in caplog.records if r.name == "quorumlock" and getattr(r, "code", None) == code
        ]

    while len(found()) < count and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.2)
    return found()


def test_plain_nodes_without_quarantine_warn_once_per_node(
    plain: Cluster, caplog: pytest.LogCaptureFixture
):
    caplog.set_level(logging.WARNING, logger="quorumlock")
    client = quorumlock.Client(plain.urls, quarantine="off")
    client.acquire("warn:plain", ttl=1.0).release()
    client.acquire("warn:plain", ttl=1.0).release()
    got = records(caplog, "QL_W_NOT_DURABLE", 3)
    assert sorted(r.node for r in got) == [0, 1, 2]
    for r in got:
        assert r.levelno == logging.WARNING
        assert r.getMessage().startswith("QL_W_NOT_DURABLE: node #")
        assert "quarantine" in r.getMessage()
        assert r.address == plain.addrs[r.node] + "/0"


def test_the_default_quarantine_does_not_warn(plain: Cluster, caplog: pytest.LogCaptureFixture):
    caplog.set_level(logging.WARNING, logger="quorumlock")
    quorumlock.Client(plain.urls).ping()
    assert records(caplog, "QL_W_NOT_DURABLE", 0) == []


def test_one_server_listed_twice_counts_once(plain: Cluster, caplog: pytest.LogCaptureFixture):
    caplog.set_level(logging.WARNING, logger="quorumlock")
    url = plain.urls[0]
    client = quorumlock.Client([f"{url}/0", f"{url}/1"], quarantine="off")
    assert (client.node_count, client.quorum) == (1, 1)
    assert client.addresses == [plain.addrs[0] + "/0"]
    (dup,) = records(caplog, "QL_W_DUPLICATE_NODE", 1)
    assert "counts once" in dup.getMessage()
    lock = client.acquire("warn:dup", ttl=2.0)
    assert plain.get(0, b"quorumlock:{warn:dup}") == lock.value.encode()
    lock.release()


def test_compat_constructors_warn(plain: Cluster, caplog: pytest.LogCaptureFixture):
    caplog.set_level(logging.WARNING, logger="quorumlock")
    assert Redlock(plain.urls[:1]).lock("warn:compat", 1000)
    assert len(records(caplog, "QL_W_NOT_DURABLE", 1)) == 1
    caplog.clear()
    one = {"host": "127.0.0.1", "port": plain.ports[1]}

    async def two_instances() -> None:
        manager = Aioredlock([{**one, "db": 0}, {**one, "db": 1}])
        async with await manager.lock("warn:compat2", lock_timeout=1) as lock:
            assert lock.valid
        await manager.destroy()

    asyncio.run(two_instances())
    assert len(records(caplog, "QL_W_DUPLICATE_NODE", 1)) == 1
