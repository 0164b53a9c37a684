"""Cancellation cleans up: asyncio task cancel and Ctrl-C during a blocking acquire leave no
key of the abandoned attempt on any node."""

from __future__ import annotations

import _thread
import asyncio
import signal
import threading
import time

import pytest

import quorumlock

from conftest import Cluster, resp


def _foreign_on_two(cluster: Cluster, key: bytes) -> None:
    """Another owner on nodes 0 and 1: every attempt wins node 2 only, fails, cleans up,
    retries, so an attempt is always in flight or being cleaned up."""
    for a in cluster.addrs[:2]:
        resp(a, "SET", key, "foreign", "PX", "30000")


def test_asyncio_cancel_leaves_no_key(aclient: quorumlock.AsyncClient, cluster: Cluster):
    key = aclient.key("cancel:async")
    _foreign_on_two(cluster, key)

    async def main() -> None:
        task = asyncio.ensure_future(
            aclient.acquire("cancel:async", retry_forever=True, retry_delay=0.0, retry_jitter=0.005)
        )
        await asyncio.sleep(0.3)
        assert not task.done()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    cluster.wait_values(key, [b"foreign", b"foreign", None])
    cluster.delete(key)


def test_keyboard_interrupt_during_acquire_leaves_no_key(
    client: quorumlock.Client, cluster: Cluster
):
    key = client.key("cancel:sync")
    _foreign_on_two(cluster, key)
    fired_at: list[float] = []

    def interrupt() -> None:
        fired_at.append(time.monotonic())
        _thread.interrupt_main()

    # A process started in the background by a non-interactive shell inherits SIGINT as
    # ignored, and then interrupt_main() does nothing: install Python's handler for the test.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.3, interrupt)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            client.acquire("cancel:sync", retry_forever=True, retry_delay=0.0, retry_jitter=0.005)
    finally:
        signal.signal(signal.SIGINT, previous)
    seen_after = time.monotonic() - fired_at[0]
    timer.join()
    assert seen_after < 0.5, seen_after
    cluster.wait_values(key, [b"foreign", b"foreign", None])
    cluster.delete(key)
    client.acquire("cancel:sync", ttl=1.0).release()  # the client is still usable
