"""Python benchmark: acquire+release latency and throughput of quorumlock (sync API on
threads, asyncio API on tasks) against redlock-py, pottery, aioredlock and a raw redis-py
floor, on the same 5 local redis-server nodes (ql-harness), in one run.

    python bench/python/bench.py [--secs 3] [--rounds 2] [--conc 1,16,64]
                                 [--rust-bin FILE] [--json FILE] [--only a,b]

Each worker loops on its own key for a warm-up and then ``--secs`` measured seconds; only
operations started in the measured window count. This process's CPU time (user + system, every
thread) and context switches over that window are divided by its operations, as in bench/rust.
Implementations alternate for ``--rounds`` rounds and the best run of each by throughput is
shown, as in bench/rust. A failed
operation (exception, refusal or a 10 s timeout) is counted, never fatal. ``--rust-bin`` is
the release ``quorumlock-bench`` binary (bench/run builds it): each round first runs it on
the same nodes at the same concurrency (rows "rust" and "rust-floor": the Rust engine and the
raw floor of bench/rust), and at c=1 the Rust engine's p50 is the reference of the p50 goals
(x1.3 for the sync API, x1.6 for asyncio). Nodes: $QL_NODES (comma-separated URLs) if
set, else 5 started with ql-harness ($QL_HARNESS, --persist $QL_BENCH_PERSIST or always:
the Python binding has no quarantine option, so the nodes must be durable).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path

from impls import IMPLS

ROOT = Path(__file__).resolve().parents[2]
WARMUP = 0.5
OP_TIMEOUT = 10.0
# Goals (issues 20 and 22): p50 at c=1 against the Rust engine's p50 at c=1, and throughput
# against aioredlock's.
P50_GOAL = {"quorumlock-sync": 1.3, "quorumlock-async": 1.6}
TPUT_GOAL = {"quorumlock-sync": 10.0, "quorumlock-async": 5.0}


def process_usage() -> tuple[float, int]:
    """This process's CPU seconds (user + system, every thread) and context switches."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime, r.ru_nvcsw + r.ru_nivcsw


class Stats:
    """One run: successful ops in the window, failures, ops/s, p50/p99 in µs, and the client's
    CPU µs and context switches per operation in the window."""

    def __init__(self, lat_ns: list[int], errors: int, window: float,
                 usage: tuple[float, int] = (0.0, 0)) -> None:
        lat_ns.sort()
        n = len(lat_ns)

        def pct(p: int) -> int:
            return lat_ns[min(n * p // 100, n - 1)] // 1000 if n else 0

        self.ops, self.errors, self.tput = n, errors, n / window
        self.p50, self.p99 = pct(50), pct(99)
        ops = max(n + errors, 1)
        self.cpu_us, self.csw = usage[0] * 1e6 / ops, usage[1] / ops

    @classmethod
    def of_rust(cls, run: dict) -> Stats:
        """A run of quorumlock-bench (its JSON), with its latencies already reduced."""
        s = cls([], run["errors"], 1.0)
        s.ops, s.tput, s.p50, s.p99 = run["ops"], run["ops_per_sec"], run["p50_us"], run["p99_us"]
        s.cpu_us, s.csw = run["client_cpu_us_per_op"], run["client_switches_per_op"]
        return s

    def json(self) -> dict[str, float]:
        return {"ops": self.ops, "errors": self.errors, "ops_per_sec": round(self.tput),
                "p50_us": self.p50, "p99_us": self.p99,
                "client_cpu_us_per_op": round(self.cpu_us, 1),
                "client_switches_per_op": round(self.csw, 2)}


class Recorder:
    """Latencies of operations started in the measured window, failures, first messages."""

    def __init__(self, warm_end: float, end: float) -> None:
        self.warm_end, self.end = warm_end, end
        self.lat: list[int] = []
        self.errors = 0
        self.messages: dict[str, int] = {}
        self.usage = (0.0, 0)

    def window_usage(self, before: tuple[float, int]) -> None:
        """Keeps the CPU time and switches since ``before``, read at the window's start."""
        after = process_usage()
        self.usage = (after[0] - before[0], after[1] - before[1])

    def record(self, t0: float, t1: float, ok: bool, exc: BaseException | None = None) -> None:
        if exc is not None:
            msg = f"{type(exc).__name__}: {str(exc)[:120]}"
            self.messages[msg] = self.messages.get(msg, 0) + 1
        if t0 < self.warm_end:
            return
        if ok:
            self.lat.append(int((t1 - t0) * 1e9))
        else:
            self.errors += 1


def run_threads(cls, urls: list[str], conc: int, run_id: int, secs: float) -> Recorder:
    impl = cls(urls)
    start = time.perf_counter()
    rec = Recorder(start + WARMUP, start + WARMUP + secs)
    lock = threading.Lock()

    def worker(key: str) -> None:
        local: list[tuple[float, float, bool, BaseException | None]] = []
        while True:
            t0 = time.perf_counter()
            if t0 >= rec.end:
                break
            try:
                ok, exc = bool(impl.op(key)), None
            except Exception as e:
                ok, exc = False, e
            local.append((t0, time.perf_counter(), ok, exc))
        with lock:
            for r in local:
                rec.record(*r)

    threads = [threading.Thread(target=worker, args=(f"bench:{run_id}:{i}",), daemon=True)
               for i in range(conc)]
    for t in threads:
        t.start()
    time.sleep(max(0.0, rec.warm_end - time.perf_counter()))
    before = process_usage()
    time.sleep(max(0.0, rec.end - time.perf_counter()))
    rec.window_usage(before)
    for t in threads:
        t.join(timeout=max(0.0, rec.end + OP_TIMEOUT - time.perf_counter()))
    stuck = sum(t.is_alive() for t in threads)
    if stuck:
        rec.errors += stuck
        rec.messages[f"{stuck} threads stuck past the window"] = stuck
    else:
        impl.close()
    return rec


async def run_tasks(cls, urls: list[str], conc: int, run_id: int, secs: float) -> Recorder:
    impl = cls(urls)
    start = time.perf_counter()
    rec = Recorder(start + WARMUP, start + WARMUP + secs)

    async def worker(key: str) -> None:
        while True:
            t0 = time.perf_counter()
            if t0 >= rec.end:
                break
            try:
                ok, exc = bool(await asyncio.wait_for(impl.op(key), OP_TIMEOUT)), None
            except Exception as e:
                ok, exc = False, e
            rec.record(t0, time.perf_counter(), ok, exc)

    async def usage() -> None:
        await asyncio.sleep(max(0.0, rec.warm_end - time.perf_counter()))
        before = process_usage()
        await asyncio.sleep(max(0.0, rec.end - time.perf_counter()))
        rec.window_usage(before)

    await asyncio.gather(usage(), *(worker(f"bench:{run_id}:{i}") for i in range(conc)))
    try:
        await asyncio.wait_for(impl.close(), OP_TIMEOUT)
    except Exception as e:
        rec.messages[f"close: {type(e).__name__}: {e}"] = 1
    return rec


def run_one(cls, urls: list[str], conc: int, run_id: int, secs: float) -> tuple[Stats, dict]:
    try:
        if cls.mode == "thread":
            rec = run_threads(cls, urls, conc, run_id, secs)
        else:
            rec = asyncio.run(run_tasks(cls, urls, conc, run_id, secs))
    except Exception as e:  # set-up failure: the whole run counts as one failure
        return Stats([], 1, secs), {f"set-up: {type(e).__name__}: {e}": 1}
    return Stats(rec.lat, rec.errors, secs, rec.usage), rec.messages


def start_nodes() -> tuple[list[str], str | None]:
    if os.environ.get("QL_NODES"):
        return os.environ["QL_NODES"].split(","), None
    harness = os.environ.get("QL_HARNESS") or str(ROOT / "target" / "debug" / "ql-harness")
    persist = os.environ.get("QL_BENCH_PERSIST", "always")
    out = subprocess.run(
        [harness, "start", "--nodes", "5", "--persist", persist, "--parent", str(os.getpid())],
        check=True, capture_output=True, text=True, timeout=60,
    ).stdout
    info = json.loads(out)
    return [n["url"] for n in info["nodes"]], info["run_dir"]


def stop_nodes(run_dir: str | None) -> None:
    if run_dir is not None:
        harness = os.environ.get("QL_HARNESS") or str(ROOT / "target" / "debug" / "ql-harness")
        subprocess.run([harness, "stop", run_dir], check=False, capture_output=True, timeout=60)


def run_rust(binary: str, urls: list[str], conc: int, secs: float) -> tuple[Stats, Stats]:
    """One run of the Rust engine and of the Rust raw floor (quorumlock-bench, on our nodes)."""
    persist = os.environ.get("QL_BENCH_PERSIST", "always")
    try:
        out = subprocess.run(
            [binary, "--json", "--nodes", ",".join(urls), "--conc", str(conc), "--rounds", "1",
             "--secs", str(secs), "--persist", persist],
            check=True, capture_output=True, text=True, timeout=60 + 4 * secs,
        ).stdout
        case = json.loads(out)["cases"][0]
        return Stats.of_rust(case["quorumlock"]), Stats.of_rust(case["floor"])
    except (subprocess.SubprocessError, OSError, ValueError, KeyError, IndexError) as e:
        print(f"  rust bench failed: {e}", file=sys.stderr)
        return Stats([], 1, secs), Stats([], 1, secs)


def ratio(a: float, b: float) -> str:
    return f"x{a / b:.2f}" if b > 0 else "n/a"


def verdict(met: bool) -> str:
    return "goal met" if met else "goal missed"


def print_table(args, results: dict[int, dict[str, Stats]]) -> None:
    load = os.getloadavg()
    print(f"quorumlock Python bench: 5 nodes, {args.secs} s per case, {args.rounds} runs each "
          f"(best by throughput), load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"{'case':<8} {'impl':<17} {'mode':<7} {'ops/s':>9} {'p50 µs':>8} {'p99 µs':>8} "
          f"{'errors':>7} {'cpu µs/op':>10} {'csw/op':>7}")
    modes = {c.name: c.mode for c in IMPLS} | {"rust": "tokio", "rust-floor": "tokio"}
    for conc, row in results.items():
        for name, s in row.items():
            print(f"c={conc:<6} {name:<17} {modes[name]:<7} {s.tput:>9.0f} {s.p50:>8} "
                  f"{s.p99:>8} {s.errors:>7} {s.cpu_us:>10.1f} {s.csw:>7.2f}")
        floor, aio = row.get("floor"), row.get("aioredlock")
        for name in ("quorumlock-sync", "quorumlock-async"):
            q = row.get(name)
            if q is None:
                continue
            parts = []
            rq, rf = row.get("rust"), row.get("rust-floor")
            if rq is not None and rf is not None:
                p50r = f"p50 vs rust {ratio(q.p50, rq.p50)}"
                if conc == 1:
                    met = rq.p50 > 0 and q.p50 / rq.p50 <= P50_GOAL[name]
                    p50r += f" (goal <= {P50_GOAL[name]}: {verdict(met)})"
                parts.append(p50r)
                parts.append(f"vs rust floor {ratio(q.p50, rf.p50)}")
                parts.append(f"ops/s vs rust {ratio(q.tput, rq.tput)}")
            if floor is not None:
                parts.append(f"p50 vs py floor {ratio(q.p50, floor.p50)}")
            if aio is not None:
                met = aio.tput > 0 and q.tput / aio.tput >= TPUT_GOAL[name]
                parts.append(f"ops/s vs aioredlock {ratio(q.tput, aio.tput)} "
                             f"(goal >= {TPUT_GOAL[name]:.0f}: {verdict(met)})")
            for peer in ("redlock-py", "pottery"):
                if peer in row:
                    parts.append(f"vs {peer} {ratio(q.tput, row[peer].tput)}")
            print(f"c={conc:<6} {name}: " + "; ".join(parts))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--secs", type=float, default=float(os.environ.get("QL_BENCH_SECS", "3")))
    p.add_argument("--rounds", type=int, default=int(os.environ.get("QL_BENCH_ROUNDS", "2")))
    p.add_argument("--conc", default="1,16,64")
    p.add_argument("--only", default="", help="comma-separated implementation names")
    p.add_argument("--rust-bin", default=os.environ.get("QL_BENCH_RUST_BIN"))
    p.add_argument("--json", help="also write the results as JSON to this file")
    args = p.parse_args()
    if not (args.secs > 0 and args.rounds > 0):
        p.error("--secs and --rounds must be positive")
    only = set(filter(None, args.only.split(",")))
    impls = [c for c in IMPLS if not only or c.name in only]
    urls, run_dir = start_nodes()
    results: dict[int, dict[str, Stats]] = {}
    messages: dict[str, dict[str, int]] = {}
    run_id = 0
    try:
        for conc in (int(c) for c in args.conc.split(",")):
            runs: dict[str, list[Stats]] = {c.name: [] for c in impls}
            if args.rust_bin:
                runs = {"rust": [], "rust-floor": []} | runs
            for rnd in range(1, args.rounds + 1):
                if args.rust_bin:
                    for name, s in zip(("rust", "rust-floor"),
                                       run_rust(args.rust_bin, urls, conc, args.secs)):
                        runs[name].append(s)
                        print(f"  c={conc} {name:<17} run {rnd}: {s.tput:>7.0f} ops/s  "
                              f"p50 {s.p50:>6} µs  p99 {s.p99:>6} µs  errors {s.errors}",
                              file=sys.stderr, flush=True)
                for cls in impls:
                    run_id += 1
                    s, msgs = run_one(cls, urls, conc, run_id, args.secs)
                    runs[cls.name].append(s)
                    for m, n in msgs.items():
                        bucket = messages.setdefault(cls.name, {})
                        bucket[m] = bucket.get(m, 0) + n
                    print(f"  c={conc} {cls.name:<17} run {rnd}: {s.tput:>7.0f} ops/s  "
                          f"p50 {s.p50:>6} µs  p99 {s.p99:>6} µs  errors {s.errors}",
                          file=sys.stderr, flush=True)
            results[conc] = {n: max(r, key=lambda s: s.tput) for n, r in runs.items()}
    finally:
        stop_nodes(run_dir)
    for name, msgs in messages.items():
        for m, n in sorted(msgs.items(), key=lambda kv: -kv[1])[:3]:
            print(f"  {name} error x{n}: {m}", file=sys.stderr)
    print_table(args, results)
    if args.json:
        out = {str(c): {n: s.json() for n, s in row.items()} for c, row in results.items()}
        Path(args.json).write_text(json.dumps({"cases": out}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
