"""Node descriptions to node URLs: URL strings, unix socket paths, keyword dicts,
``(host, port)`` tuples, redis-py / ``redis.asyncio`` / aioredis 2 clients (read through
``connection_pool.connection_kwargs``), redis-py ``RedisCluster`` objects, sync or asyncio
(``nodes_manager``: one ``redis+cluster://`` member) and aioredis 1 ``Redis`` objects
(``address``, ``db``), all by duck typing, so none of those libraries is a dependency."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

__all__ = ["node_url", "node_urls"]

# Dict keys that pick the server; "address" is aioredis 1's (host, port) or URL.
_TARGET = {"host", "port", "db", "username", "password", "ssl", "unix_socket_path", "path"}
# Dict keys that only tune the connection (pool sizes, timeouts, codecs): the engine has its
# own, so they are accepted and not used.
_TUNING = {
    "encoding",
    "decode_responses",
    "minsize",
    "maxsize",
    "max_connections",
    "timeout",
    "socket_timeout",
    "socket_connect_timeout",
    "socket_keepalive",
    "retry_on_timeout",
    "health_check_interval",
    "client_name",
    "ssl_cert_reqs",
}


def _auth(kw: Mapping[str, Any]) -> str:
    user = kw.get("username")
    password = kw.get("password")
    if not (user or password):
        return ""
    auth = quote(str(user or ""), safe="")
    if password:
        auth += ":" + quote(str(password), safe="")
    return auth + "@"


def _host_port(host: object, port: Any) -> str:
    h = str(host or "localhost")
    if ":" in h and not h.startswith("["):
        h = f"[{h}]"
    return f"{h}:{int(port or 6379)}"


def _url(kw: Mapping[str, Any]) -> str:
    db = int(kw.get("db", 0) or 0)
    auth = _auth(kw)
    path = kw.get("unix_socket_path") or kw.get("path")
    if path:
        return f"unix://{auth}{path}?db={db}"
    scheme = "rediss" if kw.get("ssl") else "redis"
    return f"{scheme}://{auth}{_host_port(kw.get('host'), kw.get('port'))}/{db}"


def _is_ssl(kwargs: Mapping[str, Any]) -> bool:
    conn_class = kwargs.get("connection_class")
    return bool(kwargs.get("ssl")) or "SSL" in getattr(conn_class, "__name__", "")


def _from_cluster(node: object) -> str | None:
    """A redis-py ``RedisCluster`` (sync or asyncio) as one ``redis+cluster://`` member:
    its startup nodes (every known node once the client has connected), credentials and
    TLS; ``None`` for anything else."""
    manager = getattr(node, "nodes_manager", None)
    startup = getattr(manager, "startup_nodes", None)
    kwargs = getattr(manager, "connection_kwargs", None)
    if not isinstance(startup, Mapping) or not isinstance(kwargs, Mapping):
        return None
    seeds = ",".join(_host_port(n.host, n.port) for n in startup.values())
    scheme = "rediss+cluster" if _is_ssl(kwargs) else "redis+cluster"
    return f"{scheme}://{_auth(kwargs)}{seeds}"


def _from_dict(d: Mapping[str, Any]) -> str:
    if "url" in d:
        return str(d["url"])
    kw = dict(d)
    address = kw.pop("address", None)
    if isinstance(address, str):
        return node_url(address)
    if isinstance(address, (tuple, list)) and len(address) == 2:
        kw["host"], kw["port"] = address
    unknown = sorted(set(kw) - _TARGET - _TUNING)
    if unknown:
        raise TypeError(f"unknown connection setting(s) {', '.join(map(repr, unknown))}")
    return _url(kw)


def _from_client(node: object) -> str | None:
    """A redis-py style client (``connection_pool``) or an aioredis 1 ``Redis``; ``None``
    for anything else."""
    pool = getattr(node, "connection_pool", None)
    kwargs = getattr(pool, "connection_kwargs", None)
    if isinstance(kwargs, Mapping):
        if "Sentinel" in type(pool).__name__:
            raise TypeError("Sentinel-managed clients are not supported: list the masters")
        conn_class = getattr(pool, "connection_class", None)
        return _url({**kwargs, "ssl": _is_ssl({**kwargs, "connection_class": conn_class})})
    # aioredis 1.x: Redis.connection is a ConnectionsPool or RedisConnection.
    conn = getattr(node, "connection", None)
    address = getattr(conn, "address", None)
    if address is None or not hasattr(conn, "db"):
        return None
    kw: dict[str, Any] = {"db": conn.db, "password": getattr(conn, "_password", None)}
    kw["ssl"] = bool(getattr(conn, "_ssl", None))
    if isinstance(address, str):
        kw["path"] = address
    else:
        kw["host"], kw["port"] = address
    return _url(kw)


def node_url(node: object) -> str:
    """One node as a URL; raises ``TypeError`` for an unknown description."""
    if isinstance(node, str):
        return f"unix://{node}" if node.startswith("/") else node
    if isinstance(node, Mapping):
        return _from_dict(node)
    if isinstance(node, (tuple, list)) and len(node) == 2:
        host, port = node
        return _url({"host": host, "port": port})
    url = _from_cluster(node) or _from_client(node)
    if url is None:
        raise TypeError(
            "a node must be a URL string, a keyword dict, a (host, port) tuple, a redis "
            f"client or a RedisCluster, not {type(node).__name__}"
        )
    return url


def node_urls(nodes: object) -> list[str]:
    """A list of node descriptions as URLs; one string instead of a list is a ``TypeError``."""
    if isinstance(nodes, (str, bytes)) or not isinstance(nodes, (list, tuple)):
        raise TypeError("nodes must be a list (or tuple) of node descriptions")
    return [node_url(n) for n in nodes]
