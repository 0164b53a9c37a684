"""The asyncio completion path: every loop gets its own queue, loops that end leave no file
descriptors behind, and an interpreter that exits with engine work in flight exits cleanly
(engine threads never enter Python)."""

from __future__ import annotations

import asyncio
import gc
import os
import subprocess
import sys
import threading

import quorumlock

from conftest import Cluster

EXIT_SCRIPT = r"""
import asyncio, sys
import quorumlock

urls = sys.argv[1].split(",")

async def main():
    client = quorumlock.AsyncClient(urls, node_timeout=0.25)
    lock = await client.acquire("exit:held", ttl=5.0)
    lock.set_auto_extend(True)
    done = await client.acquire("exit:done", ttl=5.0)
    await done.release()
    # Left in flight when asyncio.run returns and the interpreter exits: a release, an
    # acquisition that keeps retrying, a wait for a loss.
    asyncio.ensure_future(lock.release())
    asyncio.ensure_future(client.acquire("exit:held", retry_forever=True, retry_delay=0.001))
    asyncio.ensure_future(lock.lost.wait())
    await asyncio.sleep(0)

asyncio.run(main())
print("ran", flush=True)
"""


def test_exit_with_work_in_flight(cluster: Cluster):
    for _ in range(3):
        out = subprocess.run(
            [sys.executable, "-c", EXIT_SCRIPT, ",".join(cluster.urls)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode == 0, out.stderr
        assert out.stdout == "ran\n"
        assert "Fatal Python error" not in out.stderr, out.stderr


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_loops_leave_no_descriptors(aclient: quorumlock.AsyncClient):
    async def once() -> None:
        lock = await aclient.acquire("aio:fds", ttl=2.0)
        await lock.release()

    asyncio.run(once())
    gc.collect()
    before = _fds()
    for _ in range(20):
        asyncio.run(once())
    gc.collect()
    assert _fds() <= before


def test_loops_in_threads(aclient: quorumlock.AsyncClient):
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        async def main() -> None:
            for _ in range(10):
                lock = await aclient.acquire(f"aio:thread:{n}", ttl=2.0)
                report = await lock.release()
                assert sum(r.kind == "Released" for r in report) >= aclient.quorum

        try:
            asyncio.run(main())
        except BaseException as e:
            errors.append(e)

    ts = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    assert not errors, errors


def test_error_reaches_the_awaiting_task(aclient: quorumlock.AsyncClient, cluster: Cluster):
    async def main() -> None:
        held = await aclient.acquire("aio:busy", ttl=5.0)
        try:
            try:
                await aclient.acquire("aio:busy", retry_count=0)
            except quorumlock.LockBusy as e:
                assert e.code == "QL_BUSY"
                assert len(e.nodes) == len(cluster.urls)
            else:
                raise AssertionError("acquired a held lock")
        finally:
            await held.release()

    asyncio.run(main())
