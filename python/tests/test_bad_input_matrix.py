"""The bad-input matrix (``bad_input_matrix.py``) in its own process: a crash of the
interpreter (a segfault, an abort, a panic across the extension) fails this test by its exit
status, not just a case."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from conftest import Cluster

SCRIPT = Path(__file__).with_name("bad_input_matrix.py")


def test_bad_input_matrix_in_a_subprocess(cluster: Cluster) -> None:
    started = time.monotonic()
    out = subprocess.run(
        [sys.executable, str(SCRIPT), ",".join(cluster.urls)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    took = time.monotonic() - started
    print(out.stdout.splitlines()[-1] if out.stdout else "", f"in {took:.1f} s")
    assert out.returncode == 0, f"exit status {out.returncode}\n{out.stdout}\n{out.stderr[-4000:]}"
    assert "cases: " in out.stdout
