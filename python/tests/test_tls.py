"""TLS end to end (docs/SECURITY.md): a mutual-TLS node from ql-harness, the CA and client
certificate given as node URL parameters, typed errors for a wrong CA and ``#insecure``."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urlencode

import pytest

import quorumlock

from conftest import Cluster, start_cluster, stop_cluster


@pytest.fixture(scope="module")
def mtls() -> Iterator[Cluster]:
    c = start_cluster(1, persist="none", tls="mtls")
    try:
        yield c
    finally:
        stop_cluster(c)


def url(c: Cluster, **params: str) -> str:
    """``rediss://127.0.0.1:PORT/?tls_ca=...``: the node's URL with the given parameters."""
    return c.urls[0].split("?", 1)[0] + "?" + urlencode(params)


def test_locks_over_mutual_tls(mtls: Cluster) -> None:
    t = mtls.info["tls"]
    node = url(mtls, tls_ca=t["ca"], tls_cert=t["cert"], tls_key=t["key"])
    client = quorumlock.Client(
        [node], node_timeout=0.25, quarantine="off", require_quorum=True, connect_timeout=10.0
    )
    lock = client.acquire("tls:py", ttl=5.0)
    assert [n.kind for n in lock.release()] == ["Released"]


def test_a_wrong_ca_is_a_connection_error_naming_the_node(mtls: Cluster) -> None:
    t = mtls.info["tls"]
    node = url(mtls, tls_ca=t["other_ca"], tls_cert=t["cert"], tls_key=t["key"])
    with pytest.raises(quorumlock.ConnectionFailed) as info:
        quorumlock.Client([node], require_quorum=True, connect_timeout=10.0)
    e = info.value
    assert e.code == "QL_CONNECTION"
    assert e.nodes[0].kind == "Tls"
    assert "UnknownIssuer" in (e.nodes[0].detail or "")
    assert mtls.addrs[0] in str(e)


def test_a_client_without_certificate_is_refused(mtls: Cluster) -> None:
    node = url(mtls, tls_ca=mtls.info["tls"]["ca"])
    with pytest.raises(quorumlock.ConnectionFailed) as info:
        quorumlock.Client([node], require_quorum=True, connect_timeout=10.0)
    assert info.value.nodes[0].kind == "Tls"


def test_insecure_tls_is_refused(mtls: Cluster) -> None:
    with pytest.raises(quorumlock.InvalidArgument, match="#insecure"):
        quorumlock.Client([mtls.urls[0].split("?", 1)[0] + "#insecure"])
