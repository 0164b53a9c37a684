"""What the peer-suite runners share: their command line, and one plain redis-server (no AOF,
just started) from ql-harness on a free port, stopped by its run folder."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HARNESS = os.environ.get("QL_HARNESS") or str(ROOT / "target" / "debug" / "ql-harness")


def arguments(description: str, peer: str) -> argparse.Namespace:
    """``CHECKOUT [--python PY] [--real]``: the peer's checkout, the interpreter that runs its
    suite, and whether to run it against the real ``peer`` instead of the drop-in."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("checkout", type=Path)
    ap.add_argument("--python", default=str(ROOT / ".venv" / "bin" / "python"))
    ap.add_argument("--real", action="store_true", help=f"run against the real {peer}")
    return ap.parse_args()


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
