"""Where the time of one call goes: acquire and release at c=1 through the blocking API and
through asyncio, split into stages by marks the native module records (a wheel built with
the cargo feature ``stages``: ``make bench-stages``).

    python bench/python/stages.py [--calls 2000]

Stages (medians over the calls, µs): ``py`` the Python side (the wrapper, argument
conversion, and for asyncio the task's wake-up after the result is set), ``entry`` native
entry to the engine future's first poll (blocking: on the calling thread; asyncio: the
hand-off to a runtime worker), ``engine`` the engine future itself (its I/O), ``back`` from
the output being ready to the caller's thread holding it (blocking: the wake-up of the
waiting thread; asyncio: the pipe wake-up of the loop and its drain), ``convert`` building
the Python result. Nodes: $QL_NODES, else 5 started with ql-harness (persist always).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))

import quorumlock
from quorumlock import _quorumlock

from bench import start_nodes, stop_nodes

STAGES = ("py", "entry", "engine", "back", "convert")


def split(t0: int, t1: int, m: list[int]) -> list[float]:
    native = m[4] - m[0]
    return [(t1 - t0 - native) / 1e3] + [(m[i + 1] - m[i]) / 1e3 for i in range(4)]


def table(name: str, rows: dict[str, list[list[float]]]) -> None:
    for op, samples in rows.items():
        med = [statistics.median(s[i] for s in samples) for i in range(len(STAGES))]
        total = statistics.median(sum(s) for s in samples)
        cells = "  ".join(f"{st} {v:6.1f}" for st, v in zip(STAGES, med))
        print(f"{name:<8} {op:<8} total {total:6.1f} µs  {cells}")


def run_sync(urls: list[str], calls: int) -> dict[str, list[list[float]]]:
    client = quorumlock.Client(urls, ttl=10.0, retry_count=0, node_timeout=0.2)
    rows: dict[str, list[list[float]]] = {"acquire": [], "release": []}
    for i in range(calls + 200):
        t0 = time.perf_counter_ns()
        lock = client.acquire(f"stages:sync:{i % 16}")
        t1 = time.perf_counter_ns()
        ma = _quorumlock.stage_marks()
        t2 = time.perf_counter_ns()
        lock.release()
        t3 = time.perf_counter_ns()
        mr = _quorumlock.stage_marks()
        if i >= 200:  # warm-up
            rows["acquire"].append(split(t0, t1, ma))
            rows["release"].append(split(t2, t3, mr))
    return rows


async def run_async(urls: list[str], calls: int) -> dict[str, list[list[float]]]:
    client = quorumlock.AsyncClient(urls, ttl=10.0, retry_count=0, node_timeout=0.2)
    rows: dict[str, list[list[float]]] = {"acquire": [], "release": []}
    for i in range(calls + 200):
        t0 = time.perf_counter_ns()
        lock = await client.acquire(f"stages:async:{i % 16}")
        t1 = time.perf_counter_ns()
        ma = _quorumlock.stage_marks()
        t2 = time.perf_counter_ns()
        await lock.release()
        t3 = time.perf_counter_ns()
        mr = _quorumlock.stage_marks()
        if i >= 200:
            rows["acquire"].append(split(t0, t1, ma))
            rows["release"].append(split(t2, t3, mr))
    return rows


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--calls", type=int, default=2000)
    args = p.parse_args()
    if not hasattr(_quorumlock, "stage_marks"):
        print(
            "this quorumlock was built without the `stages` feature (make bench-stages)",
            file=sys.stderr,
        )
        return 2
    urls, run_dir = start_nodes()
    try:
        sync_rows = run_sync(urls, args.calls)
        async_rows = asyncio.run(run_async(urls, args.calls))
    finally:
        stop_nodes(run_dir)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(
        f"stages of one call at c=1, medians of {args.calls} calls (µs), load average {load}"
    )
    table("sync", sync_rows)
    table("asyncio", async_rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
