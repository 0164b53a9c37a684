"""fork(): parent locks are refused in the child, the client reconnects there, and parent
and child draw different values."""

from __future__ import annotations

import os

import pytest

import quorumlock


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_fork_child(client: quorumlock.Client):
    parent_lock = client.acquire("fork:parent", ttl=5.0)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: report through the pipe, never return into pytest
        code = 1
        try:
            os.close(r)
            try:
                parent_lock.release()
                refused = "no"
            except quorumlock.InvalidArgument:
                refused = "yes"
            child_lock = client.acquire("fork:child", ttl=5.0)
            os.write(w, f"{refused} {child_lock.value}".encode())
            child_lock.release()
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        answer = f.read().decode()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    refused, child_value = answer.split()
    assert refused == "yes"
    assert child_value != parent_lock.value
    assert parent_lock.is_held()  # the child did not release it
    parent_lock.release()
    client.acquire("fork:child", retry_count=0).release()  # released by the child
