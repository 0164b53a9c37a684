"""Prints the hand-off benchmark side by side (a Markdown table) from the JSON files of
bench/rust/src/bin/handoff.rs and bench/node/handoff.mjs, with the ratios and the goals of
issue 8 item 4 and issue 20 goal 5 (with `--outside-ms`: per-worker counts within 2x of each
other), and each notified row's median gap against the floor of the Rust program's JSON (how
soon a quorum's release messages can be heard on these nodes). Used by `bench/run handoff`; not a test.

    python3 bench/handoff_table.py RUST_JSON NODE_JSON
"""

import json
import sys

# Goals of issue 8 item 4: quorumlock (notify on) vs the best peer.
TPUT_GOAL = 2.0
GAP_P50_GOAL_US = 500
# Goal of issue 20: the busiest worker at most this many times the least busy one.
FAIRNESS_GOAL = 2.0


def handoffs_per_sec(r):
    """Hand-offs to ANOTHER worker per second (a holder re-acquiring its own lock is not one)."""
    return r["acq_per_sec"] * (100.0 - r["same_worker_pct"]) / 100.0


def verdict(met):
    return "goal met" if met else "goal missed"


def main(rust_path, node_path):
    with open(rust_path) as f:
        rust = json.load(f)
    with open(node_path) as f:
        node = json.load(f)
    rows = rust["rows"] + node["rows"]
    print(
        f"Hand-off: {rust['workers']} workers x 1 resource, hold {rust['hold_ms']:g} ms, "
        f"then {rust.get('outside_ms', 0):g} ms of work outside the lock, "
        f"{rust['secs']:g} s per row after a {rust['warmup_secs']:g} s warm-up, "
        f"{rust['nodes']} nodes (persist {rust['persist']}), ttl {rust['ttl_ms']} ms, "
        f"retry count {rust['retry_count']}, quorumlock wait budget {rust['wait_ms']} ms."
    )
    print(
        f"Load average (1/5/15 min): {rust['load_before']} before the Rust rows, "
        f"{node['load_before']} before the Node rows, {node['load_after']} at the end."
    )
    print("Gap: from the start of a holder's release call to the next holder's acquire returning.")
    floor = rust.get("floor") or {}
    if floor.get("p50_us"):
        print(
            f"Floor ({floor['cycles']} cycles by hand with redis-rs, the same pause as the hold): "
            f"{floor['what']}: p50 {floor['p50_us']} µs (p25 {floor['p25_us']}, p75 "
            f"{floor['p75_us']}, p99 {floor['p99_us']})."
        )
    print()
    head = [
        "impl",
        "setting",
        "acq/s",
        "to other worker /s",
        "gap p50 µs",
        "gap p99 µs",
        "gap max ms",
        "gaps > 5 / 50 ms",
        "other-worker gap p50 µs",
        "failed",
        "wakeups",
        "attempts/acq",
        "node cmds/acq",
        "overlaps",
        "hold p50 µs",
        "per worker",
    ]
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---" if i < 2 else "---:" for i in range(len(head))) + "|")
    for r in rows:
        wake = "-" if r.get("wakeups") is None else str(r["wakeups"])
        cells = [
            r["impl"],
            r["label"],
            f"{r['acq_per_sec']:.0f}",
            f"{handoffs_per_sec(r):.0f}",
            str(r["gap_p50_us"]),
            str(r["gap_p99_us"]),
            f"{r['gap_max_us'] / 1000:.1f}",
            f"{r['gaps_over_5ms']} / {r['gaps_over_50ms']}",
            str(r["other_gap_p50_us"]) if r["same_worker_pct"] < 100 else "-",
            str(r["failed"]),
            wake,
            f"{r['attempts_per_acq']:.2f}",
            f"{r['node_cmds_per_acq']:.1f}",
            str(r["overlaps"]),
            str(r["hold_p50_us"]),
            f"{r['per_worker_min']}..{r['per_worker_max']}",
        ]
        print("| " + " | ".join(cells) + " |")
    print()
    overlaps = sum(r["overlaps"] for r in rows)
    print(f"overlaps={overlaps} (over all rows; must be 0)")
    peers = node["rows"]
    ours = [r for r in rust["rows"] if r["notify"]]
    if not peers or not ours:
        return

    def tput(r):
        return r["acq_per_sec"]

    def ratio_of(a, b):
        return a / b if b else float("inf")

    best = max(peers, key=tput)
    best_default = max((r for r in peers if r.get("defaults")), key=tput, default=best)
    best_handoff = max(peers, key=handoffs_per_sec)
    for q in ours:
        name = f"quorumlock notify on, {q['clients']} client{'s' if q['clients'] > 1 else ''}"
        ratio = ratio_of(tput(q), tput(best))
        ratio_d = ratio_of(tput(q), tput(best_default))
        print(
            f"{name}: acq/s x{ratio:.2f} of the best peer ({best['impl']} {best['label']}), "
            f"x{ratio_d:.2f} of the best peer at its defaults ({best_default['impl']}) "
            f"(goal >= {TPUT_GOAL:g}: {verdict(ratio >= TPUT_GOAL)}); "
            f"median gap {q['gap_p50_us']} µs (goal <= {GAP_P50_GOAL_US}: "
            f"{verdict(q['gap_p50_us'] <= GAP_P50_GOAL_US)})"
        )
        spread = ratio_of(q["per_worker_max"], q["per_worker_min"])
        print(
            f"{'':{len(name)}}  per-worker counts {q['per_worker_min']}..{q['per_worker_max']}: "
            f"x{spread:.2f} (goal <= {FAIRNESS_GOAL:g}: {verdict(spread <= FAIRNESS_GOAL)})"
        )
        if floor.get("p50_us"):
            # One holder at a time: each acquisition takes a hold and then a hand-off, which
            # can be no quicker than the floor.
            bound = 1e6 / (q["hold_p50_us"] + floor["p50_us"])
            print(
                f"{'':{len(name)}}  median gap x{ratio_of(q['gap_p50_us'], floor['p50_us']):.2f} "
                f"of the floor's p50 ({q['gap_p50_us'] - floor['p50_us']:+d} µs); with every gap at "
                f"the floor, 1 / (hold p50 + floor p50) = {bound:.0f} acq/s, "
                f"x{ratio_of(bound, tput(best)):.2f} of the best peer"
            )
        h_ratio = ratio_of(handoffs_per_sec(q), handoffs_per_sec(best_handoff))
        print(
            f"{'':{len(name)}}  hand-offs to another worker/s x{h_ratio:.1f} of the best peer "
            f"({best_handoff['impl']} {best_handoff['label']})"
        )


if __name__ == "__main__":
    main(*sys.argv[1:3])
