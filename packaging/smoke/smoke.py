"""test-dist: the installed wheel locks on the nodes in QL_NODES and reports the release version.
Run from outside the repository so that only the installed package can be imported."""

import asyncio
import importlib.metadata
import os

import quorumlock

want = os.environ["QL_EXPECT_VERSION"]
nodes = os.environ["QL_NODES"].split(",")
passed = failed = 0


def check(name: str, ok: bool, detail: object = "") -> None:
    global passed, failed
    passed, failed = passed + ok, failed + (not ok)
    print(f"  {'ok  ' if ok else 'FAIL'} python: {name}" + ("" if ok else f" ({detail})"))


native = quorumlock._quorumlock.__file__
check("imports the installed extension", "site-packages" in native, native)
installed = importlib.metadata.version("quorumlock")
check(
    f"__version__ and the installed metadata are {want}",
    quorumlock.__version__ == installed == want,
    f"{quorumlock.__version__} {installed}",
)

a = quorumlock.Client(nodes)
b = quorumlock.Client(nodes)
with a.lock("dist-smoke", ttl=10.0) as lock:
    check("acquires on every node", len(lock.nodes) == len(nodes), lock.nodes)
    try:
        b.acquire("dist-smoke", ttl=10.0, retry_count=0)
        check("a second client gets LockBusy", False, "acquired twice")
    except quorumlock.LockBusy as e:
        check("a second client gets LockBusy", e.code == "QL_BUSY", e.code)
holder = a.inspect("dist-smoke").holder
check("released on leaving the with block", holder is None, holder)


async def main() -> None:
    c = quorumlock.AsyncClient(nodes)
    async with c.lock("dist-smoke-async", ttl=5.0) as lock:
        check("AsyncClient locks", lock.remaining() > 0, lock.remaining())


asyncio.run(main())
print(f"python: {passed} passed, {failed} failed", flush=True)
# os._exit, not sys.exit: after AsyncClient use, the interpreter's own shutdown crashes now and
# then (SIGSEGV in pyo3_async_runtimes::set_result on an engine thread during finalization; the
# same with the debug build of `make test`). That is a binding bug to fix there, not a packaging
# one, and it would make this check flaky.
os._exit(1 if failed else 0)
