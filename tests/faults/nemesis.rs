//! Seeded random nemesis runs (`docs/TESTING.md` §6, safe mode): workers contend while a fault
//! schedule generated up front from a seed pauses, kills and restarts durable nodes, bends
//! node clocks within the drift budget, jumps them backwards, and switches proxies between
//! delays, blackholes, resets, half-open and slow replies. Expected: zero overlaps and zero
//! lost updates. The same seed always gives the same schedule.
//!
//! Must-fail mode adds the one unsafe fault class a node clock can have: five forward jumps
//! of +10 s on a random majority (and no safe faults, so the other workers can always reach a
//! quorum). It must be flagged: at least one overlap.
//!
//! `QL_SEED=0x…` runs one seed; `QL_SEEDS=N` runs seeds 0x5eed0001..; `QL_SECS` sets the
//! length of each run (default 8 s; 20 s with `QL_FAULTS_FULL=1`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../harness/src/workload.rs"]
mod workload;

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{Bench, ClientCfg, RESOURCE, Setup, TTL_MS, blocking, connect, opts};
use quorumlock::MonoTime;
use quorumlock_harness::history::{Recorder, Row};
use quorumlock_harness::{Mode, Persist};
use workload::{Behaviour, Job};

/// SplitMix64: a small, fully specified generator, so a seed means the same schedule forever.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }
}

/// One scheduled fault event.
#[derive(Debug, Clone, PartialEq)]
enum Ev {
    Pause(usize),
    Resume(usize),
    KillRestart(usize),
    Proxy(usize, Mode),
    Skew(usize, i64, f64),
}

/// Five forward jumps of +10 s each, on a random majority of 3 nodes, spread over the run
/// (one jump can fall between two holders; five make a miss of all of them negligible).
fn unsafe_schedule(seed: u64, secs: u64) -> Vec<(u64, Ev)> {
    let mut rng = Rng(seed);
    let mut offset = [0i64; 5];
    let mut out = Vec::new();
    let span = (secs * 1000).saturating_sub(2 * TTL_MS).max(5_000) / 5;
    for k in 0..5 {
        let t = 500 + k * span + rng.range(0, span / 2);
        let skip = usize::try_from(rng.range(0, 4)).unwrap_or(0);
        let other = (skip + 1 + usize::try_from(rng.range(0, 3)).unwrap_or(0)) % 5;
        for n in (0..5).filter(|&n| n != skip && n != other) {
            offset[n] += 10_000;
            out.push((t, Ev::Skew(n, offset[n], 1.0)));
        }
    }
    out
}

/// The whole schedule for `seed` over `secs`: `(t_ms, event)`, sorted by time. Every fault is
/// healed 2 × ttl before the end.
fn schedule(seed: u64, secs: u64) -> Vec<(u64, Ev)> {
    let mut rng = Rng(seed);
    let heal_at = (secs * 1000).saturating_sub(2 * TTL_MS);
    let mut busy = [0u64; 5];
    let mut offset = [0i64; 5];
    let mut out = Vec::new();
    let mut t = 200;
    while t < heal_at {
        let n = usize::try_from(rng.range(0, 4)).unwrap_or(0);
        if busy[n] <= t {
            let len = rng.range(200, 2 * TTL_MS).min(heal_at - t);
            let end = t + len;
            match rng.range(0, 5) {
                0 => {
                    out.push((t, Ev::Pause(n)));
                    out.push((end, Ev::Resume(n)));
                }
                1 => out.push((t, Ev::KillRestart(n))),
                2 => {
                    let mode = match rng.range(0, 5) {
                        0 => Mode::Delay {
                            c2s: Duration::from_millis(rng.range(0, 200)),
                            s2c: Duration::from_millis(rng.range(0, 300)),
                        },
                        1 => Mode::Blackhole,
                        2 => Mode::Reset,
                        3 => Mode::DropReplies,
                        4 => Mode::HalfOpen,
                        _ => Mode::SlowReplies {
                            chunk: 1,
                            gap: Duration::from_millis(rng.range(1, 20)),
                        },
                    };
                    out.push((t, Ev::Proxy(n, mode)));
                    out.push((end, Ev::Proxy(n, Mode::Pass)));
                }
                3 => {
                    // Only rates inside the drift budget; back to 1 bends, never jumps.
                    let rate =
                        [0.5, 0.8, 0.99, 1.0, 1.005][usize::try_from(rng.range(0, 4)).unwrap_or(0)];
                    out.push((t, Ev::Skew(n, offset[n], rate)));
                    out.push((end, Ev::Skew(n, offset[n], 1.0)));
                }
                _ => {
                    // Backward jumps only cost liveness; offsets only ever decrease.
                    offset[n] -= i64::try_from(rng.range(100, 3_000)).unwrap_or(0);
                    out.push((t, Ev::Skew(n, offset[n], 1.0)));
                }
            }
            busy[n] = end + 1;
        }
        t += rng.range(100, 800);
    }
    out.sort_by_key(|(t, _)| *t);
    out
}

fn apply(bench: &Bench, ev: &Ev) {
    match ev {
        Ev::Pause(i) => bench.nodes().pause(*i).unwrap(),
        Ev::Resume(i) => bench.nodes().resume(*i).unwrap(),
        Ev::KillRestart(i) => {
            let mut nodes = bench.nodes();
            nodes.kill(*i);
            nodes.restart(*i, Persist::Always).unwrap();
        }
        Ev::Proxy(i, mode) => bench.proxies[*i].set(*mode),
        Ev::Skew(i, off, rate) => bench.nodes().skew(*i, *off, *rate).unwrap(),
    }
}

async fn run_seed(seed: u64, secs: u64, must_fail: bool) -> Row {
    let plan = if must_fail {
        unsafe_schedule(seed, secs)
    } else {
        schedule(seed, secs)
    };
    println!(
        "QL_SEED={seed:#x} QL_SECS={secs}: {} fault events",
        plan.len()
    );
    let bench = Arc::new(blocking(Bench::start));
    let rec = Arc::new(Recorder::new());
    let t0 = MonoTime::now();
    let until = t0 + Duration::from_secs(secs);
    let mut tasks = Vec::new();
    for k in 0..4 {
        let client = connect(bench.worker_urls(), ClientCfg::default()).await;
        let job = Job {
            name: format!("w{k}"),
            resource: RESOURCE.into(),
            opts: opts(),
            hold: Duration::from_millis(if must_fail { 400 } else { 150 }),
            until,
            pause: Duration::from_millis(10),
            counter: Some(bench.resource.addr(0)),
            behaviour: Behaviour::Respectful,
        };
        tasks.push(tokio::spawn(workload::run_worker(
            client,
            job,
            Arc::clone(&rec),
        )));
    }
    for (t, ev) in &plan {
        let at = t0 + Duration::from_millis(*t);
        tokio::time::sleep(at.saturating_since(MonoTime::now())).await;
        let b = Arc::clone(&bench);
        let ev2 = ev.clone();
        blocking(move || apply(&b, &ev2));
    }
    for t in tasks {
        t.await.expect("worker");
    }
    let lost = rec
        .writes_acked()
        .saturating_sub(blocking(|| bench.counter()));
    let mode = if must_fail { "must-fail" } else { "safe" };
    let mut row = Row {
        scenario: format!(
            "nemesis {mode} seed={seed:#x} {secs}s {} events",
            plan.len()
        ),
        expect: if must_fail { "MUST-FAIL" } else { "MUST-PASS" }.into(),
        ..Row::default()
    };
    row.add_run(&rec, Some(lost));
    row.report();
    if (row.violations > 0 || lost > 0) != must_fail {
        for (t, ev) in &plan {
            println!("  {t:>6} ms {ev:?}");
        }
        for v in rec.violations().iter().take(5) {
            println!("  violation: {v:?}");
        }
    }
    row
}

fn seeds() -> Vec<u64> {
    if let Some(s) = std::env::var("QL_SEED").ok().filter(|s| !s.is_empty()) {
        let s = s.trim_start_matches("0x");
        return vec![u64::from_str_radix(s, 16).expect("QL_SEED is hex")];
    }
    let n: u64 = std::env::var("QL_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    (1..=n).map(|k| 0x5eed_0000 + k).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nemesis_safe_mode_finds_no_violation() {
    let default_secs = if common::full() { 20 } else { 8 };
    let secs = std::env::var("QL_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default_secs);
    for seed in seeds() {
        let row = run_seed(seed, secs, false).await;
        let how = format!("reproduce: make soak SEEDS=1 SEED={seed:#x} SECS={secs}");
        assert_eq!(row.violations, 0, "overlaps; {how}");
        assert_eq!(row.lost_updates, Some(0), "lost updates; {how}");
        assert!(row.acquisitions > 0, "no acquisition at all; {how}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nemesis_must_fail_mode_is_flagged() {
    let seed = seeds()[0];
    let row = run_seed(seed, 8, true).await;
    assert!(
        row.violations >= 1,
        "forward jumps on a majority must be flagged; reproduce: QL_SEED={seed:#x}"
    );
}

#[test]
fn a_seed_always_gives_the_same_schedule() {
    let a = schedule(0x5eed_0001, 20);
    assert_eq!(a, schedule(0x5eed_0001, 20));
    assert_ne!(a, schedule(0x5eed_0002, 20));
    assert!(a.len() >= 10, "a 20 s schedule has faults: {a:?}");
    let heal_at = 20_000 - 2 * TTL_MS;
    assert!(
        a.iter().all(|(t, _)| *t <= heal_at),
        "healed before the end"
    );
}
