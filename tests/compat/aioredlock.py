#!/usr/bin/env python3
"""Runs aioredlock's own test suite against quorumlock.compat.aioredlock on a plain Redis server.

    tests/compat/aioredlock.py CHECKOUT [--python PY] [--real]

CHECKOUT is a checkout of joanvila/aioredlock (its tests/ are used, never copied into this
repository). PY needs pytest, pytest-asyncio, pytest-mock and aioredis<2 (the suite imports
aioredis 1, which runs on Python < 3.10 only; on a newer Python put an aioredis 1.3.1 install
on PYTHONPATH and its pool tests fail inside aioredis). A shim package ``aioredlock`` whose
modules re-export ``quorumlock.compat.aioredlock``'s goes first on PYTHONPATH; with ``--real``
PY's own aioredlock is tested instead. One plain redis-server comes from ql-harness on a free
port; the only change to the suite, in a temporary copy, is that port in place of 6379
in tests/acceptance.
Prints pytest's summary and ``N passed, N failed``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import arguments, plain_node

MODULES = ("__init__", "algorithm", "errors", "lock", "sentinel")


def main() -> int:
    args = arguments(__doc__.splitlines()[0], "aioredlock")

    with plain_node() as port, tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(args.checkout / "tests", Path(tmp, "tests"))
        for f in Path(tmp, "tests", "acceptance").rglob("*.py"):
            f.write_text(f.read_text().replace("6379", port))
        env = dict(os.environ)
        if not args.real:
            shim = Path(tmp, "shim", "aioredlock")
            shim.mkdir(parents=True)
            for m in MODULES:
                source = (
                    f"quorumlock.compat.aioredlock{'' if m == '__init__' else '.' + m}"
                )
                (shim / f"{m}.py").write_text(f"from {source} import *  # noqa: F403\n")
            paths = [str(shim.parent), env.get("PYTHONPATH", "")]
            env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
        done = subprocess.run(
            [args.python, "-m", "pytest", "-q", "-rfE", "-p", "no:cacheprovider"]
            + ["--continue-on-collection-errors", "tests"],
            check=False,
            cwd=tmp,
            env=env,
            capture_output=True,
            text=True,
        )
    print(done.stdout[-6000:], end="")
    counts = dict.fromkeys(("passed", "failed", "error"), 0)
    for n, what in re.findall(
        r"(\d+) (passed|failed|error)", done.stdout.splitlines()[-1]
    ):
        counts[what] = int(n)
    bad = counts["failed"] + counts["error"]
    print(f"{counts['passed']} passed, {bad} failed")
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
