#!/usr/bin/env python3
"""Runs redlock-py's own test suite against quorumlock.compat.redlock on plain Redis servers.

    tests/compat/redlock_py.py CHECKOUT [--python PY] [--real]

CHECKOUT is a checkout of SPSCommerce/redlock-py (its tests/test_redlock.py is used, never
copied into this repository). A shim package ``redlock`` that re-exports
``quorumlock.compat.redlock`` goes first on PYTHONPATH; with ``--real`` there is no shim and
PY must have redlock-py installed (``pip install redlock-py==1.0.8``), to check the suite
itself. One plain redis-server (no AOF, just started) comes from ql-harness on a free port.

The only change to the suite, in a temporary copy: its node ``{"host": "localhost"}`` gets
the port of that server (``{"host": "localhost", "port": PORT}``). Prints the unittest
output and a last line ``N passed, N failed``; exits 0 only if every test passed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import arguments, plain_node

SHIM = "from quorumlock.compat.redlock import *  # noqa: F403\n"
NODE = '{"host": "localhost"}'


def main() -> int:
    args = arguments(__doc__.splitlines()[0], "redlock-py")

    suite = (args.checkout / "tests" / "test_redlock.py").read_text()
    if suite.count(NODE) != 1:
        sys.exit(
            f"expected one {NODE} node in the suite; it changed, update this script"
        )
    with plain_node() as port, tempfile.TemporaryDirectory() as tmp:
        tests = Path(tmp, "tests")
        tests.mkdir()
        node = f'{{"host": "localhost", "port": {port}}}'
        (tests / "test_redlock.py").write_text(suite.replace(NODE, node))
        env = dict(os.environ)
        if not args.real:
            Path(tmp, "redlock").mkdir()
            Path(tmp, "redlock", "__init__.py").write_text(SHIM)
            env["PYTHONPATH"] = tmp
        done = subprocess.run(
            [args.python, "-m", "unittest", "-v", "test_redlock"],
            check=False,
            cwd=tests,
            env=env,
            capture_output=True,
            text=True,
        )
    print(done.stderr, end="")
    ran = re.search(r"^Ran (\d+) tests?", done.stderr, re.MULTILINE)
    if ran is None:
        sys.exit("the suite did not run")
    total = int(ran.group(1))
    bad = sum(int(n) for n in re.findall(r"(?:failures|errors)=(\d+)", done.stderr))
    print(
        f"redlock-py suite ({'real redlock-py' if args.real else 'quorumlock.compat'}): "
        f"{total - bad}/{total}"
    )
    print(f"{total - bad} passed, {bad} failed")
    return 0 if bad == 0 and done.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
