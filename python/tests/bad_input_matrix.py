"""The bad-input matrix (TESTING.md §8.1, Python), run as its own process by
``test_bad_input_matrix.py`` so a crash shows as an exit status: every public call and
constructor gets each wrong value in each argument, the others valid. Each case must raise a
typed error (``TypeError``, ``ValueError`` such as ``InvalidArgument`` or
``UnicodeEncodeError``, or another ``QuorumlockError``) or, for a value the argument accepts,
return; any other exception fails its case. Prints one line per failure and ``cases: N`` at
the end; exits 1 when a case failed.

Usage: ``python bad_input_matrix.py redis://...,redis://...`` (nodes with durable writes).
"""

from __future__ import annotations

import asyncio
import math
import sys
from collections.abc import Callable
from typing import Any

import quorumlock

TYPED = (TypeError, ValueError, quorumlock.QuorumlockError)


class Opaque:
    """An object of no type the package knows."""


# The wrong values: each argument gets every one of them.
VALUES: list[tuple[str, Any]] = [
    ("None", None),
    ("True", True),
    ("0", 0),
    ("-1", -1),
    ("2**64", 2**64),
    ("2**70", 2**70),
    ("-2**70", -(2**70)),
    ("1.5", 1.5),
    ("nan", math.nan),
    ("inf", math.inf),
    ("-inf", -math.inf),
    ("1e308", 1e308),
    ("''", ""),
    ("'x'", "x"),
    ("lone surrogate", "\ud800"),
    ("NUL str", "a\x00b"),
    ("b''", b""),
    ("invalid UTF-8 bytes", b"\xff\xfe\xfd"),
    ("bytearray", bytearray(b"x")),
    ("memoryview", memoryview(b"x")),
    ("object", Opaque()),
    ("[]", []),
    ("[None]", [None]),
    ("[1]", [1]),
    ("['\\ud800']", ["\ud800"]),
    ("dict", {"a": 1}),
    ("tuple", ("a",)),
    ("set", {"a"}),
    ("1025 bytes", b"x" * 1025),
    ("10 MB str", "x" * 10_000_000),
]

# What an argument of each kind may accept: the values for which returning normally is also a
# right answer. Names are bytes or text (binary names are allowed); a collection of names locks
# them all.
NAMES = {"'x'", "NUL str", "invalid UTF-8 bytes", "bytearray", "memoryview"}
ACCEPTS: dict[str, set[str]] = {
    "resource": NAMES | {"tuple", "set"},
    "name": NAMES,
    # key() only formats: any bytes, also empty or long ones.
    "key": NAMES | {"''", "b''", "1025 bytes", "10 MB str", "tuple", "set"},
    "seconds": {"0", "1.5"},
    "pos_seconds": {"1.5"},
    "seconds_or_none": {"None", "0", "1.5"},
    "ratio": {"0"},
    "flag": {"True", "0"},
    "count": {"True", "0"},
    "key_prefix": {
        "''",
        "'x'",
        "NUL str",
        "b''",
        "invalid UTF-8 bytes",
        "bytearray",
        "1025 bytes",
        "10 MB str",
    },
    # A value that matches nothing releases nothing.
    "release_value": {"10 MB str"},
    # A given value is 16+ printable ASCII characters, with no upper bound: 10 MB is valid (or
    # too slow to keep its validity, a QuorumlockError).
    "value": {"10 MB str"},
    "optional": {"None"},
    "none": set(),
}

# Known defects, each reported: a case listed here must still fail (else remove it from here).
KNOWN: dict[str, str] = {}
# Cases where either outcome is right.
EITHER: set[str] = set()


def accepts(kind: str, name: str) -> bool:
    """Whether returning normally is also a right answer for value ``name`` in an argument
    of ``kind``."""
    return name in ACCEPTS[kind]


class Matrix:
    def __init__(self) -> None:
        self.cases = 0
        self.failures: list[str] = []
        self.known: list[str] = []

    def check(self, call: str, kind: str, name: str, fn: Callable[[], Any]) -> None:
        self.cases += 1
        case = f"{call} with {name}"
        try:
            result = fn()
            if asyncio.iscoroutine(result):
                result = asyncio.run(result)
        except TYPED:
            if case in KNOWN and case not in EITHER:
                self.failures.append(
                    f"{case}: listed as known but passes now; remove it from KNOWN"
                )
            return
        except BaseException as e:  # anything else fails the case
            self.failures.append(f"{case}: {type(e).__name__}: {e}"[:300])
            return
        release(result)
        if case in KNOWN:
            self.known.append(f"{case}: accepted ({KNOWN[case]})")
        elif not accepts(kind, name):
            self.failures.append(f"{case}: accepted ({type(result).__name__})")


def release(result: Any) -> None:
    """Releases a lock a case acquired, so the next case finds the resource free."""
    if isinstance(result, quorumlock.Lock):
        result.release()
    elif isinstance(result, quorumlock.AsyncLock):
        asyncio.run(result.release())


def main() -> int:
    nodes = sys.argv[1].split(",")
    # A generous node timeout: the matrix is about arguments, and the machine may be loaded.
    base = {"quarantine": "off", "node_timeout": 1.0, "retry_count": 0}
    client = quorumlock.Client(nodes, **base)
    aclient = quorumlock.AsyncClient(nodes, **base)
    m = Matrix()

    async def async_lock_then(op: Callable[[quorumlock.AsyncLock], Any]) -> Any:
        lock = await aclient.acquire("matrix:alock", ttl=5.0)
        try:
            r = op(lock)
            return await r if asyncio.iscoroutine(r) else r
        finally:
            await lock.release()

    held = client.acquire("matrix:held", ttl=30.0)
    for name, v in VALUES:
        # Constructors: nodes, then each setting.
        m.check("Client(nodes)", "none", name, lambda v=v: quorumlock.Client(v, **base))
        m.check("AsyncClient(nodes)", "none", name, lambda v=v: quorumlock.AsyncClient(v, **base))
        m.check("Client([v])", "none", name, lambda v=v: quorumlock.Client([v], **base))
        for setting, kind in [
            ("drift_factor", "ratio"),
            ("drift_constant", "seconds"),
            ("max_ttl", "none"),
            ("connect_timeout", "seconds"),
            ("reprobe_every", "pos_seconds"),
            ("key_prefix", "key_prefix"),
            ("key_format", "none"),
            ("require_quorum", "flag"),
            ("quarantine", "none"),
            ("quarantine_margin", "seconds"),
            ("eviction_check", "none"),
            ("notify", "flag"),
            ("ttl", "pos_seconds"),
        ]:
            m.check(
                f"Client({setting}=)",
                kind,
                name,
                lambda v=v, s=setting: quorumlock.Client(nodes, **{**base, s: v}),
            )
        # Calls on a client.
        m.check("acquire(resources)", "resource", name, lambda v=v: client.acquire(v, ttl=5.0))
        m.check("acquire([ok, v])", "name", name, lambda v=v: client.acquire(["matrix:ok", v]))
        for option, kind in [
            ("ttl", "pos_seconds"),
            ("retry_count", "count"),
            ("retry_delay", "seconds"),
            ("retry_jitter", "seconds"),
            ("wait", "seconds"),
            ("min_validity", "seconds"),
            ("node_timeout", "pos_seconds"),
            ("auto_extend", "flag"),
            ("extend_interval", "pos_seconds"),
            ("max_extensions", "count"),
            ("max_hold", "pos_seconds"),
            ("fenced", "flag"),
            ("fence_counter_ttl", "none"),
            ("value", "value"),
            ("on_lost", "optional"),
            ("no_such_option", "none"),
        ]:
            m.check(
                f"acquire({option}=)",
                kind,
                name,
                lambda v=v, o=option: client.acquire("matrix:opt", **{"ttl": 5.0, o: v}),
            )
        m.check("lock(resources)", "none", name, lambda v=v: client.lock(v, ttl=-1).__enter__())
        m.check(
            "release_value(resources)",
            "resource",
            name,
            lambda v=v: client.release_value(v, "x" * 20),
        )
        m.check(
            "release_value(value)",
            "release_value",
            name,
            lambda v=v: client.release_value("matrix:rv", v),
        )
        m.check(
            "extend_value(resources)",
            "none",
            name,
            lambda v=v: client.extend_value(v, "x" * 20, 1.0),
        )
        m.check(
            "extend_value(value)",
            "none",
            name,
            lambda v=v: client.extend_value("matrix:ev", v, 1.0),
        )
        m.check(
            "extend_value(ttl)",
            "none",
            name,
            lambda v=v: client.extend_value("matrix:ev", "x" * 20, v),
        )
        m.check("key(resource)", "key", name, lambda v=v: client.key(v))
        m.check("inspect(resource)", "resource", name, lambda v=v: client.inspect(v))
        m.check(
            "synchronized(resources)",
            "none",
            name,
            lambda v=v: client.synchronized(v, ttl=-1)(lambda: 1)(),
        )
        # A held lock's calls.
        m.check(
            "Lock.extend(ttl)",
            "seconds_or_none",
            name,
            lambda v=v: held.extend(v if v is not None else 30.0),
        )
        m.check("Lock.set_auto_extend(on)", "flag", name, lambda v=v: held.set_auto_extend(v))
        held.set_auto_extend(False)
        # The asyncio client.
        m.check(
            "AsyncClient.acquire(resources)",
            "resource",
            name,
            lambda v=v: aclient.acquire(v, ttl=5.0),
        )
        m.check(
            "AsyncClient.acquire(ttl=)",
            "pos_seconds",
            name,
            lambda v=v: aclient.acquire("matrix:a", ttl=v),
        )
        m.check(
            "AsyncClient.extend_value(ttl)",
            "none",
            name,
            lambda v=v: aclient.extend_value("matrix:ev", "x" * 20, v),
        )
        m.check("AsyncClient.inspect(resource)", "resource", name, lambda v=v: aclient.inspect(v))
        m.check("AsyncClient.holder(resource)", "resource", name, lambda v=v: aclient.holder(v))
        m.check(
            "AsyncLock.extend(ttl)",
            "seconds_or_none",
            name,
            lambda v=v: async_lock_then(lambda lock: lock.extend(v if v is not None else 5.0)),
        )
    # The held lock came through every bad call unharmed.
    if not held.is_held():
        m.failures.append("the held lock was lost during the matrix")
    try:
        held.release()
    except quorumlock.QuorumlockError as e:  # a node error here is no argument's fault
        print("release of the held lock:", e)
    for k in m.known:
        print("KNOWN", k)
    for f in m.failures:
        print("FAIL", f)
    print(f"cases: {m.cases}, known: {len(m.known)}, failures: {len(m.failures)}")
    return 1 if m.failures else 0


if __name__ == "__main__":
    sys.exit(main())
