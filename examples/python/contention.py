"""Several threads contend for one lock; each holds it briefly and reports.

Run with five local nodes: target/debug/ql-harness exec --nodes 5 -- .venv/bin/python
examples/python/contention.py (QL_NODES holds the node URLs).
"""

import os
import threading
import time

import quorumlock

client = quorumlock.Client(os.environ["QL_NODES"].split(","))
print(f"python: {client.node_count} nodes, quorum {client.quorum}")
holders = []


def worker(n: int) -> None:
    for _ in range(2):
        with client.lock("demo:python", ttl=2.0, retry_forever=True, fenced=True) as lock:
            holders.append(n)
            left = lock.remaining()
            print(f"python: worker {n} holds the lock (token {lock.token}, {left:.2f} s left)")
            time.sleep(0.05)


threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(f"python: {len(holders)} turns, one holder at a time")
