"""Fixtures: real redis-server clusters from ql-harness (TESTING.md §2.5) and a tiny RESP
client to look at the nodes directly."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import quorumlock

ROOT = Path(__file__).resolve().parents[2]
HARNESS = os.environ.get("QL_HARNESS") or str(ROOT / "target" / "debug" / "ql-harness")


def _read_reply(f: Any) -> Any:
    line = f.readline()
    if not line:
        raise ConnectionError("connection closed")
    kind, rest = line[:1], line[1:-2]
    if kind == b"+":
        return rest.decode()
    if kind == b"-":
        raise RuntimeError(rest.decode())
    if kind == b":":
        return int(rest)
    if kind == b"$":
        n = int(rest)
        return None if n < 0 else f.read(n + 2)[:-2]
    if kind == b"*":
        n = int(rest)
        return None if n < 0 else [_read_reply(f) for _ in range(n)]
    raise RuntimeError(f"unexpected reply {line!r}")


def resp(addr: str, *args: str | bytes) -> Any:
    """Sends one command to a node and returns its reply."""
    host, port = addr.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as s:
        out = b"*%d\r\n" % len(args)
        for a in args:
            b = a.encode() if isinstance(a, str) else a
            out += b"$%d\r\n%s\r\n" % (len(b), b)
        s.sendall(out)
        return _read_reply(s.makefile("rb"))


class Cluster:
    """A running cluster: node URLs and addresses, fault commands, direct reads."""

    def __init__(self, info: dict[str, Any]) -> None:
        self.info = info
        self.run_dir: str = info["run_dir"]
        self.urls: list[str] = [n["url"] for n in info["nodes"]]
        self.addrs: list[str] = [n["addr"] for n in info["nodes"]]
        self.ports: list[int] = [int(a.rsplit(":", 1)[1]) for a in self.addrs]
        # With start_cluster(redis_cluster=N): {"url": "redis+cluster://...", "nodes": [...]}.
        self.redis_cluster: dict[str, Any] | None = info.get("redis_cluster")

    def ctl(self, command: dict[str, Any]) -> dict[str, Any]:
        out = subprocess.run(
            [HARNESS, "ctl", self.run_dir, json.dumps(command)],
            check=True,
            capture_output=True,
            text=True,
            timeout=60,
        ).stdout
        answer = json.loads(out)
        assert answer["ok"], answer
        return answer

    def get(self, i: int, key: bytes) -> bytes | None:
        return resp(self.addrs[i], "GET", key)

    def values(self, key: bytes) -> list[bytes | None]:
        return [self.get(i, key) for i in range(len(self.addrs))]

    def delete(self, key: bytes) -> None:
        for a in self.addrs:
            resp(a, "DEL", key)

    def wait_pttl(
        self, key: str | bytes, above_ms: int, nodes: list[int] | None = None, secs: float = 2.0
    ) -> None:
        """Polls until ``key``'s PTTL exceeds ``above_ms`` on ``nodes`` (default: every node): a
        call returns at the quorum-th reply, so the other nodes' writes may still be in flight."""
        idx = range(len(self.addrs)) if nodes is None else nodes

        def ttls() -> list[int]:
            return [resp(self.addrs[i], "PTTL", key) for i in idx]

        deadline = time.monotonic() + secs
        while not all(t > above_ms for t in ttls()) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert all(t > above_ms for t in ttls()), ttls()

    def wait_values(self, key: bytes, expected: list[bytes | None], secs: float = 2.0) -> None:
        """Polls until every node shows ``expected`` (background cleanup takes a moment)."""
        deadline = time.monotonic() + secs
        while self.values(key) != expected and time.monotonic() < deadline:
            time.sleep(0.02)
        assert self.values(key) == expected


def start_cluster(
    nodes: int,
    persist: str = "always",
    redis_cluster: int = 0,
    replicas: int = 0,
    tls: str | None = None,
) -> Cluster:
    """``nodes`` independent masters; with ``redis_cluster`` > 0 also one Redis Cluster of
    that many primaries (each with ``replicas`` replicas) to use as one more member. ``tls``
    ``"tls"`` or ``"mtls"``: TLS-only nodes, their certificates in ``info["tls"]``."""
    extra = []
    if redis_cluster:
        extra = ["--redis-cluster", str(redis_cluster), "--cluster-replicas", str(replicas)]
    if tls:
        extra.append(f"--{tls}")
    out = subprocess.run(
        [
            HARNESS,
            "start",
            "--nodes",
            str(nodes),
            "--persist",
            persist,
            *extra,
            "--parent",
            str(os.getpid()),
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    return Cluster(json.loads(out))


def stop_cluster(cluster: Cluster) -> None:
    subprocess.run([HARNESS, "stop", cluster.run_dir], check=True, timeout=60)


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    c = start_cluster(3)
    try:
        yield c
    finally:
        stop_cluster(c)


@pytest.fixture(scope="module")
def client(cluster: Cluster) -> quorumlock.Client:
    # A generous node timeout: CI machines are slow and the tests use short TTLs.
    return quorumlock.Client(cluster.urls, node_timeout=0.25, retry_delay=0.02, retry_jitter=0.02)


@pytest.fixture(scope="module")
def aclient(cluster: Cluster) -> quorumlock.AsyncClient:
    return quorumlock.AsyncClient(
        cluster.urls, node_timeout=0.25, retry_delay=0.02, retry_jitter=0.02
    )


@pytest.fixture(scope="module")
def plain() -> Iterator[Cluster]:
    """Three plain servers (no AOF, just started), as the peers' users run them."""
    c = start_cluster(3, persist="none")
    try:
        yield c
    finally:
        stop_cluster(c)


@pytest.fixture(scope="module")
def with_redis_cluster() -> Iterator[Cluster]:
    """Two plain servers and a Redis Cluster of three primaries (``.redis_cluster``)."""
    c = start_cluster(2, persist="none", redis_cluster=3)
    try:
        yield c
    finally:
        stop_cluster(c)
