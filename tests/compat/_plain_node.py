"""What the peer-suite runners share: one plain redis-server (no AOF, just started) from
ql-harness on a free port, its port, and stopping it by its run folder."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HARNESS = os.environ.get("QL_HARNESS") or str(ROOT / "target" / "debug" / "ql-harness")


@contextmanager
def plain_node() -> Iterator[str]:
    """Starts one plain node for the duration of the block and yields its port."""
    out = subprocess.run(
        [
            HARNESS,
            "start",
            "--nodes",
            "1",
            "--persist",
            "none",
            "--parent",
            str(os.getpid()),
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    run = json.loads(out)
    try:
        yield run["nodes"][0]["addr"].rsplit(":", 1)[1]
    finally:
        subprocess.run(
            [HARNESS, "stop", run["run_dir"]], check=True, stdout=subprocess.DEVNULL
        )
