"""quorumlock.compat.redlock behaves as redlock-py 1.0.8, on plain (non-durable, just
started) servers as redlock-py users run them."""

from __future__ import annotations

import gc
import logging
import random
import string
import time

import pytest
import redis

from quorumlock.compat.redlock import Lock, MultipleRedlockException, Redlock

from conftest import Cluster, resp

DOWN = "redis://127.0.0.1:1"


def test_readme_on_fresh_plain_servers(plain: Cluster):
    p = plain.ports
    # README: dlm = Redlock([{"host": "localhost", "port": 6379, "db": 0}, ])
    dlm = Redlock(
        [
            {"host": "127.0.0.1", "port": p[0], "db": 0},
            redis.StrictRedis(host="127.0.0.1", port=p[1]),
            f"redis://127.0.0.1:{p[2]}/0",
        ]
    )
    my_lock = dlm.lock("my_resource_name", 1000)
    assert isinstance(my_lock, Lock)
    assert my_lock._fields == ("validity", "resource", "key")
    assert isinstance(my_lock.validity, int) and 0 < my_lock.validity <= 1000
    assert my_lock.resource == "my_resource_name"
    assert isinstance(my_lock.key, bytes)
    # servers are redis-py clients; the bare resource name is the key.
    assert [s.get("my_resource_name") for s in dlm.servers] == [my_lock.key] * 3
    assert dlm.quorum == 2
    assert dlm.lock("my_resource_name", 1000) is False
    dlm.unlock(my_lock)
    assert plain.values(b"my_resource_name") == [None] * 3
    again = dlm.lock("my_resource_name", 1000)
    assert again and again.key != my_lock.key
    dlm.unlock(again)


def test_bad_connection_info_raises_warning():
    for info in ({"cat": "hog"}, "nope://x", object()):
        with pytest.raises(Warning):
            Redlock([info])


def test_ttl_types_and_sizes(plain: Cluster):
    dlm = Redlock(plain.urls, retry_count=1)
    with pytest.raises(ValueError, match="not an integer"):
        dlm.lock("ttl", 1000.0)
    # No 60 s cap: any ttl up to 2^53 - 1 ms, as redlock-py.
    week = dlm.lock("ttl", 7 * 24 * 3600 * 1000)
    assert week and week.validity > 6 * 24 * 3600 * 1000
    dlm.unlock(week)
    eons = (2**53 - 1) // 10
    huge = dlm.lock("ttl", eons)
    # The engine's deadlines are nanoseconds on a u64: validity saturates at about 584 years.
    assert huge and huge.validity > 10**13
    dlm.unlock(huge)
    # Too small to leave validity after the drift allowance: False, not an exception.
    assert dlm.lock("ttl", 1) is False
    with pytest.raises(ValueError):
        dlm.lock("ttl", 0)


def test_bytes_resources(plain: Cluster):
    dlm = Redlock(plain.urls)
    lock = dlm.lock(b"bytes:res", 1000)
    assert lock and lock.resource == b"bytes:res"
    plain.wait_values(b"bytes:res", [lock.key] * 3)
    dlm.unlock(lock)
    assert plain.values(b"bytes:res") == [None] * 3


def test_every_node_down_returns_false():
    dlm = Redlock([DOWN, "redis://127.0.0.1:2", "redis://127.0.0.1:3"], retry_count=1)
    assert dlm.lock("down", 1000) is False


def test_fixed_retry_delay(plain: Cluster):
    dlm = Redlock(plain.urls, retry_count=3, retry_delay=0.3)
    held = dlm.lock("retry", 5000)
    assert held
    t0 = time.monotonic()
    assert dlm.lock("retry", 1000) is False
    # Three attempts, two fixed 0.3 s sleeps between them: no jitter.
    assert 0.59 <= time.monotonic() - t0 < 0.9
    dlm.unlock(held)


def test_node_errors_with_quorum_raise_multiple_redlock_exception(plain: Cluster):
    dlm = Redlock([*plain.urls[:2], DOWN], retry_count=1)
    with pytest.raises(MultipleRedlockException) as info:
        dlm.lock("partial", 1000)
    assert [type(e) for e in info.value.errors] == [redis.exceptions.ConnectionError]
    assert "127.0.0.1:1" in str(info.value)
    # Unlike redlock-py, the lock is not left behind.
    plain.wait_values(b"partial", [None] * 3)
    exc = MultipleRedlockException([Exception("connection error"), Exception("timed out")])
    assert str(exc) == repr(exc) == "connection error :: timed out"


def test_unlock_logs_node_errors_and_never_raises(plain: Cluster, caplog):
    dlm = Redlock([*plain.urls[:2], DOWN])
    stale = Lock(100, "unlock", b"0" * 32)  # a value nobody holds
    dlm.unlock(stale)
    assert "Error unlocking resource unlock" in caplog.text
    assert caplog.records[-1].levelno == logging.ERROR


def test_unlock_a_lock_taken_by_redlock_py(plain: Cluster):
    # redlock-py's value: 22 letters and digits (Redlock.get_unique_id), set with SET NX PX.
    key = "".join(random.choice(string.ascii_letters + string.digits) for _ in range(22))
    for a in plain.addrs:
        resp(a, "SET", "peer", key, "NX", "PX", "5000")
    dlm = Redlock(plain.urls, retry_count=1)
    assert dlm.lock("peer", 1000) is False
    dlm.unlock(Lock(4000, "peer", key.encode()))
    assert plain.values(b"peer") == [None] * 3
    assert dlm.lock("peer", 1000)


def test_lock_outlives_its_manager(plain: Cluster):
    def take() -> Lock:
        lock = Redlock(plain.urls).lock("outlive", 5000)
        assert lock
        return lock

    lock = take()
    gc.collect()
    time.sleep(0.1)
    plain.wait_values(b"outlive", [lock.key] * 3)
    # Another manager (or process) unlocks by value.
    Redlock(plain.urls).unlock(lock)
    assert plain.values(b"outlive") == [None] * 3


def test_quorumlock_settings_opt_in(plain: Cluster):
    # The restart quarantine is opt-in: these servers just started without durable writes.
    assert Redlock(plain.urls, retry_count=1, quarantine="on").lock("opt", 1000) is False
    capped = Redlock(plain.urls, max_ttl=60.0)
    with pytest.raises(ValueError, match="max_ttl"):
        capped.lock("opt", 120_000)
    fenced = Redlock(plain.urls, fenced=True).lock("opt", 1000)
    assert fenced
    Redlock(plain.urls).unlock(fenced)
    with pytest.raises(TypeError):
        Redlock(plain.urls, no_such_setting=1)
