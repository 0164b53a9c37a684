"""Node descriptions to node URLs: URL strings, redis-py keyword dicts, ``(host, port)``
tuples and redis-py client objects (read through ``connection_pool.connection_kwargs`` by
duck typing, so redis-py is never a dependency)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

__all__ = ["node_url", "node_urls"]


def _from_kwargs(kw: Mapping[str, Any]) -> str:
    db = int(kw.get("db", 0) or 0)
    user = kw.get("username")
    password = kw.get("password")
    auth = ""
    if user or password:
        auth = quote(str(user or ""), safe="")
        if password:
            auth += ":" + quote(str(password), safe="")
        auth += "@"
    path = kw.get("unix_socket_path") or kw.get("path")
    if path:
        return f"unix://{auth}{path}?db={db}"
    host = str(kw.get("host", "localhost"))
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    port = int(kw.get("port", 6379))
    scheme = "rediss" if kw.get("ssl") else "redis"
    return f"{scheme}://{auth}{host}:{port}/{db}"


def node_url(node: object) -> str:
    """One node as a URL; raises ``TypeError`` for an unknown description."""
    if isinstance(node, str):
        return node
    if isinstance(node, Mapping):
        if "url" in node:
            return str(node["url"])
        if "address" in node and isinstance(node["address"], str):
            return node["address"]
        return _from_kwargs(node)
    if isinstance(node, tuple) and len(node) == 2:
        host, port = node
        return _from_kwargs({"host": host, "port": port})
    pool = getattr(node, "connection_pool", None)
    kwargs = getattr(pool, "connection_kwargs", None)
    if isinstance(kwargs, Mapping):
        extra = {"ssl": True} if "ssl" in type(pool).__name__.lower() else {}
        return _from_kwargs({**kwargs, **extra})
    raise TypeError(
        "a node must be a URL string, a redis-py keyword dict, a (host, port) tuple or a "
        f"redis-py client, not {type(node).__name__}"
    )


def node_urls(nodes: object) -> list[str]:
    """A list of node descriptions as URLs; one string instead of a list is a ``TypeError``."""
    if isinstance(nodes, (str, bytes)) or not isinstance(nodes, (list, tuple)):
        raise TypeError("nodes must be a list (or tuple) of node descriptions")
    return [node_url(n) for n in nodes]
