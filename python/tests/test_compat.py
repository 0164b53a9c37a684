"""The drop-ins turn every node description their peers accept into a node URL."""

from __future__ import annotations

import pytest
import redis
import redis.asyncio

from quorumlock.compat._conn import node_urls


class AioredisPool:
    """The attributes an aioredis 1.x ``ConnectionsPool`` has (aioredis 1 needs Python < 3.10)."""

    address = ("10.0.0.5", 6380)
    db = 3
    _password = "pw"
    _ssl = None


class Aioredis1:
    connection = AioredisPool()


def test_connection_descriptions():
    assert node_urls(
        [
            "redis://a:1",
            "/tmp/r.sock",
            {"host": "h", "port": 2, "db": 3, "username": "u", "password": "x/y"},
            {"host": "h", "port": 2, "encoding": "utf-8", "minsize": 1, "maxsize": 5},
            {"address": ("h", 9), "db": 1},
            ("h", 4),
            ["h", 5],
            redis.StrictRedis(host="::1", port=7000, db=2, password="p@ss"),
            redis.StrictRedis(host="h", port=6, ssl=True, username="u", password="p"),
            redis.asyncio.Redis.from_url("rediss://:pw@h:7/4"),
            redis.StrictRedis(unix_socket_path="/tmp/s.sock", db=1),
            Aioredis1(),
            {"unix_socket_path": "/tmp/r.sock", "db": 1},
        ]
    ) == [
        "redis://a:1",
        "unix:///tmp/r.sock",
        "redis://u:x%2Fy@h:2/3",
        "redis://h:2/0",
        "redis://h:9/1",
        "redis://h:4/0",
        "redis://h:5/0",
        "redis://:p%40ss@[::1]:7000/2",
        "rediss://u:p@h:6/0",
        "rediss://:pw@h:7/4",
        "unix:///tmp/s.sock?db=1",
        "redis://:pw@10.0.0.5:6380/3",
        "unix:///tmp/r.sock?db=1",
    ]


def test_bad_connection_descriptions():
    with pytest.raises(TypeError):
        node_urls("redis://a:1")
    with pytest.raises(TypeError):
        node_urls([object()])
    with pytest.raises(TypeError, match="'cat'"):
        node_urls([{"host": "h", "cat": "hog"}])
    sentinel = redis.Sentinel([("h", 26379)]).master_for("mymaster")
    with pytest.raises(TypeError, match="Sentinel"):
        node_urls([sentinel])
