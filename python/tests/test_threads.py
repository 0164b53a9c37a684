"""Many threads contending: at most one inside the critical section at any time."""

from __future__ import annotations

import threading

import quorumlock


def test_threads_mutual_exclusion(client: quorumlock.Client):
    threads, rounds = 8, 8
    inside = 0
    max_inside = 0
    done = 0
    guard = threading.Lock()
    errors: list[BaseException] = []

    def worker() -> None:
        nonlocal inside, max_inside, done
        try:
            for _ in range(rounds):
                with client.lock("threads:mutex", ttl=2.0, retry_forever=True):
                    with guard:
                        inside += 1
                        max_inside = max(max_inside, inside)
                    threading.Event().wait(0.002)
                    with guard:
                        inside -= 1
                        done += 1
        except BaseException as e:
            errors.append(e)

    ts = [threading.Thread(target=worker) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    assert not errors, errors
    assert done == threads * rounds
    assert max_inside == 1
