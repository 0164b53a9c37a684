"""Release notification (REDLOCK.md §9): with ``notify`` on (the default) a release wakes a
waiter long before its 2 s retry delay; with it off the waiter comes back only after it."""

from __future__ import annotations

import threading
import time

import pytest

import quorumlock

from conftest import Cluster


def hand_off(cluster: Cluster, notify: bool, resource: str) -> tuple[float, int]:
    """Seconds from the holder's release to the waiter's acquisition, and its wake-ups."""
    holder = quorumlock.Client(cluster.urls, notify=notify, node_timeout=0.25)
    waiter = quorumlock.Client(cluster.urls, notify=notify, node_timeout=0.25)
    lock = holder.acquire(resource, ttl=10.0)
    acquired_at: list[float] = []

    def wait() -> None:
        got = waiter.acquire(resource, ttl=10.0, retry_count=5, retry_delay=2.0, retry_jitter=0.0)
        acquired_at.append(time.monotonic())
        got.release()

    t = threading.Thread(target=wait)
    t.start()
    time.sleep(0.4)
    released_at = time.monotonic()
    lock.release()
    t.join(10)
    assert acquired_at, "the waiter did not get the lock"
    return acquired_at[0] - released_at, waiter.metrics().wakeups


def test_a_release_wakes_the_waiter_at_once(cluster: Cluster) -> None:
    gap, wakeups = hand_off(cluster, True, "notify:on")
    assert gap < 0.5, f"hand-off took {gap:.3f} s"
    assert wakeups == 1


def test_without_notification_the_waiter_polls(cluster: Cluster) -> None:
    gap, wakeups = hand_off(cluster, False, "notify:off")
    assert gap > 1.0, f"hand-off took {gap:.3f} s"
    assert wakeups == 0


def test_notify_must_be_a_bool(cluster: Cluster) -> None:
    with pytest.raises(TypeError):
        quorumlock.Client(cluster.urls, notify="yes")
