//! handoff: how fast one contended lock passes from holder to holder (issue 8 item 4).
//!
//! `--workers` tokio tasks (8) contend for ONE resource; each loops { acquire (a wait budget
//! and a retry count so high that it never gives up), hold `--hold-ms` (1 ms), release } for
//! `--secs` (10 s) after a 0.5 s warm-up, then (with `--outside-ms`, default 0) works that long
//! outside the lock before the next acquire, so a releaser cannot re-take its own lock at once, on 5 `redis-server` nodes: `$QL_NODES` if set
//! (`ql-harness exec`, as `bench/run handoff` does), else started here by the test harness.
//!
//! ```text
//! cargo run --release -p quorumlock-bench --bin handoff -- [--secs 10] [--workers 8]
//!     [--hold-ms 1] [--outside-ms 0] [--persist always|none|everysec] [--short-delay-ms 10]
//!     [--short-jitter-ms 10] [--only floor,on,on-shared,on-2,off,off-short] [--json FILE]
//! ```
//!
//! First, the floor (`handoff_floor.rs`): how soon, on these nodes, a listener hears a quorum
//! of them publish a granting release sent by hand with redis-rs. No hand-off can be quicker.
//!
//! Rows: release notification on (each task its own `Client`, like separate processes; all
//! tasks sharing one `Client`; and `on-2`, not run by default: two `Client`s of four tasks
//! each, like two processes of four workers), and off (pure jittered polling) with the engine's default
//! retry delay `100 ms + uniform(0, 200 ms)` and with a short `10 ms + uniform(0, 10 ms)`.
//!
//! Every task records `(worker, acquire returned, release called, release returned)` on
//! [`MonoTime`]. Afterwards all holds are sorted by acquire time; the hand-off gap is the time
//! from the START of the previous holder's release call to the next holder's acquire
//! returning. A next holder whose acquire returned before the previous holder started its
//! release would be an overlap (a safety violation); `overlaps` counts them and must be 0.
//! Holds whose acquire returned inside the measured window count; gaps are those ending
//! inside it.
#![forbid(unsafe_code)]

#[path = "../common.rs"]
mod common;
#[path = "../handoff_floor.rs"]
mod handoff_floor;

use std::collections::BTreeMap;
use std::time::Duration;

use futures_util::future::join_all;
use quorumlock::{
    Client, DEFAULT_RETRY_DELAY, DEFAULT_RETRY_JITTER, LockOptions, MonoTime, Quarantine,
};
use quorumlock_harness::{Cluster, Persist};
use serde_json::{Value as Json, json};

/// Any error of set-up; the benchmark itself counts failed operations instead.
type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Number of lock nodes started when `$QL_NODES` is not set.
const NODES: usize = 5;
/// Tokio worker threads (the machine has 2 cores, shared with the 5 nodes).
const THREADS: usize = 2;
/// Warm-up of every run before holds are counted.
const WARMUP: Duration = Duration::from_millis(500);
/// TTL of every lock (the engine default).
const TTL: Duration = Duration::from_secs(10);
/// Retries after the first attempt: high enough that an acquire never gives up on count.
const RETRY_COUNT: u32 = 1_000_000;
/// The wait budget of every acquire call.
const WAIT: Duration = Duration::from_secs(30);
/// Measured seconds of the floor (at most).
const FLOOR_SECS: f64 = 3.0;
/// Printed for `--help` and bad arguments.
const USAGE: &str = "usage: handoff [--secs S] [--workers N] [--hold-ms MS] [--outside-ms MS] \
[--persist always|none|everysec] [--short-delay-ms MS] [--short-jitter-ms MS] \
[--only floor,on,on-shared,on-2,off,off-short] [--json FILE]";

/// Command-line settings.
struct Args {
    /// Measured seconds per row (after the warm-up).
    secs: f64,
    /// Contending tasks.
    workers: usize,
    /// How long each holder keeps the lock.
    hold: Duration,
    /// How long each worker works outside the lock after releasing, before its next acquire.
    outside: Duration,
    /// Persistence of the nodes (decides the restart quarantine, as in the main bench).
    persist: Persist,
    /// The short polling row's retry delay.
    short_delay: Duration,
    /// The short polling row's retry jitter.
    short_jitter: Duration,
    /// Rows to run (by id); empty means all.
    only: Vec<String>,
    /// Where to write the results as JSON.
    json: Option<String>,
}

/// Parses a number of milliseconds.
fn millis(flag: &str, v: &str) -> Result<Duration, String> {
    let ms: f64 = v.parse().map_err(|e| format!("{flag}: {e}"))?;
    if !(ms.is_finite() && ms >= 0.0) {
        return Err(format!("{flag} must be a non-negative number"));
    }
    Ok(Duration::from_secs_f64(ms / 1000.0))
}

/// Parses the command line; `Err` holds the message to print.
fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        secs: 10.0,
        workers: 8,
        hold: Duration::from_millis(1),
        outside: Duration::ZERO,
        persist: std::env::var("QL_BENCH_PERSIST")
            .ok()
            .map_or(Ok(Persist::Always), |p| p.parse())?,
        short_delay: Duration::from_millis(10),
        short_jitter: Duration::from_millis(10),
        only: Vec::new(),
        json: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value\n{USAGE}"));
        match flag.as_str() {
            "--secs" => args.secs = value()?.parse().map_err(|e| format!("--secs: {e}"))?,
            "--workers" => {
                args.workers = value()?.parse().map_err(|e| format!("--workers: {e}"))?;
            }
            "--hold-ms" => args.hold = millis(&flag, &value()?)?,
            "--outside-ms" => args.outside = millis(&flag, &value()?)?,
            "--persist" => args.persist = value()?.parse()?,
            "--short-delay-ms" => args.short_delay = millis(&flag, &value()?)?,
            "--short-jitter-ms" => args.short_jitter = millis(&flag, &value()?)?,
            "--only" => {
                args.only = value()?
                    .split(',')
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .collect();
            }
            "--json" => args.json = Some(value()?),
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    if !(args.secs.is_finite() && args.secs > 0.0) || args.workers < 2 {
        return Err("--secs must be positive and --workers at least 2".into());
    }
    Ok(args)
}

/// One measured configuration.
struct Row {
    /// Short id for `--only`.
    id: &'static str,
    /// Release notification on the clients.
    notify: bool,
    /// How many `Client`s the tasks share, task `w` using client `w % clients`; 0: one each.
    clients: usize,
    /// Retry delay of every acquire.
    delay: Duration,
    /// Retry jitter of every acquire.
    jitter: Duration,
}

impl Row {
    /// The row's label in the table.
    fn label(&self) -> String {
        let clients = match self.clients {
            0 => "own clients".to_owned(),
            1 => "1 shared client".to_owned(),
            n => format!("{n} shared clients"),
        };
        let (d, j) = (self.delay.as_millis(), self.jitter.as_millis());
        if self.notify {
            format!("notify on, {clients} (poll {d}+U(0,{j}) ms)")
        } else {
            format!("notify off, poll {d}+U(0,{j}) ms, {clients}")
        }
    }
}

/// One hold of the lock, in nanoseconds on [`MonoTime`].
#[derive(Clone, Copy, Debug)]
struct Hold {
    /// The task that held it.
    worker: usize,
    /// When its acquire call returned.
    acquired: u64,
    /// When it called release.
    release_start: u64,
    /// When release returned.
    release_end: u64,
    /// Attempts the acquire call took.
    attempts: u32,
}

/// What one task brings back.
#[derive(Default)]
struct TaskResult {
    /// Every hold, also those outside the window.
    holds: Vec<Hold>,
    /// Acquire calls that returned an error, by kind (in the window).
    failed: BTreeMap<String, usize>,
    /// Release calls that failed or did not find a quorum.
    release_failures: usize,
}

/// `sorted[p %]`, nearest rank, as the main bench does; 0 when empty.
fn pct(sorted: &[u64], p: usize) -> u64 {
    let n = sorted.len();
    if n == 0 {
        return 0;
    }
    sorted[(n * p / 100).min(n - 1)]
}

/// µs from nanoseconds, rounded.
fn us(ns: u64) -> u64 {
    (ns + 500) / 1000
}

/// The statistics of one row from all holds (see the module docs for the definitions).
fn analyse(mut holds: Vec<Hold>, workers: usize, warm_end: u64, end: u64) -> Json {
    holds.sort_by_key(|h| h.acquired);
    let window = |t: u64| t >= warm_end && t < end;
    let mut per_worker = vec![0usize; workers];
    let (mut hold_ns, mut rel_ns, mut attempts, mut first_try) = (vec![], vec![], 0u64, 0usize);
    for h in holds.iter().filter(|h| window(h.acquired)) {
        per_worker[h.worker] += 1;
        hold_ns.push(h.release_start - h.acquired);
        rel_ns.push(h.release_end - h.release_start);
        attempts += u64::from(h.attempts);
        first_try += usize::from(h.attempts == 1);
    }
    let n = hold_ns.len();
    let (mut gaps, mut other_gaps, mut same, mut overlaps) = (vec![], vec![], 0usize, 0usize);
    let mut idle_max = 0u64;
    for pair in holds.windows(2) {
        let (prev, next) = (pair[0], pair[1]);
        if next.acquired < prev.release_start {
            overlaps += 1;
        }
        // The longest time without a holder touching the window (a lock stuck after a split
        // vote shows here even when no acquisition followed inside the window).
        if prev.release_start < end && next.acquired > warm_end {
            idle_max = idle_max.max(next.acquired.saturating_sub(prev.release_start));
        }
        if !window(next.acquired) {
            continue;
        }
        let gap = next.acquired.saturating_sub(prev.release_start);
        gaps.push(gap);
        if next.worker == prev.worker {
            same += 1;
        } else {
            other_gaps.push(gap);
        }
    }
    for v in [&mut gaps, &mut other_gaps, &mut hold_ns, &mut rel_ns] {
        v.sort_unstable();
    }
    let secs = (end - warm_end) as f64 / 1e9;
    json!({
        "acquisitions": n,
        "acq_per_sec": n as f64 / secs,
        "gaps": gaps.len(),
        "gap_p50_us": us(pct(&gaps, 50)),
        "gap_p99_us": us(pct(&gaps, 99)),
        "gap_max_us": us(idle_max),
        // A split vote's spread is up to 20 ms, a missed wake-up a whole retry delay.
        "gaps_over_5ms": gaps.iter().filter(|&&g| g > 5_000_000).count(),
        "gaps_over_50ms": gaps.iter().filter(|&&g| g > 50_000_000).count(),
        "same_worker_pct": if gaps.is_empty() { 0.0 } else { 100.0 * same as f64 / gaps.len() as f64 },
        "other_gap_p50_us": us(pct(&other_gaps, 50)),
        "other_gap_p99_us": us(pct(&other_gaps, 99)),
        "overlaps": overlaps,
        "hold_p50_us": us(pct(&hold_ns, 50)),
        "release_p50_us": us(pct(&rel_ns, 50)),
        "attempts_per_acq": if n == 0 { 0.0 } else { attempts as f64 / n as f64 },
        "first_try_pct": if n == 0 { 0.0 } else { 100.0 * first_try as f64 / n as f64 },
        "per_worker_min": per_worker.iter().min().copied().unwrap_or(0),
        "per_worker_max": per_worker.iter().max().copied().unwrap_or(0),
    })
}

/// Holds the lock for `hold`. tokio's timer has a 1 ms resolution and rounds up (a 1 ms
/// `sleep` lasts about 2 ms), so the holder sleeps on a blocking thread instead: only one
/// task holds at a time, so one thread of the blocking pool serves all holds.
async fn hold_for(hold: Duration) {
    if !hold.is_zero() {
        let _ = tokio::task::spawn_blocking(move || std::thread::sleep(hold)).await;
    }
}

/// One task's loop until `end`: acquire, hold, release, work outside the lock.
#[allow(clippy::too_many_arguments)]
async fn work(
    client: Client,
    opts: LockOptions,
    key: String,
    worker: usize,
    hold: Duration,
    outside: Duration,
    warm_end: MonoTime,
    end: MonoTime,
) -> TaskResult {
    let mut r = TaskResult::default();
    loop {
        let t0 = MonoTime::now();
        if t0 >= end {
            return r;
        }
        let lock = match client.acquire_with([key.as_str()], &opts).await {
            Ok(lock) => lock,
            Err(e) => {
                if t0 >= warm_end {
                    *r.failed.entry(e.kind().as_str().to_owned()).or_default() += 1;
                }
                continue;
            }
        };
        let acquired = MonoTime::now();
        hold_for(hold).await;
        let release_start = MonoTime::now();
        let released = lock.release().await;
        let release_end = MonoTime::now();
        if !released.is_ok_and(|rep| rep.was_held_by_quorum()) {
            r.release_failures += 1;
        }
        r.holds.push(Hold {
            worker,
            acquired: acquired.as_nanos(),
            release_start: release_start.as_nanos(),
            release_end: release_end.as_nanos(),
            attempts: lock.attempts(),
        });
        // On a blocking thread like the hold (tokio's timer would round 2 ms up to 3 ms).
        hold_for(outside).await;
    }
}

/// Calls per command summed over the nodes (`INFO commandstats`; `info` itself left out), to
/// show what each acquisition costs the nodes (attempts, cleanups, pub/sub).
async fn node_calls(urls: &[String]) -> Result<BTreeMap<String, u64>, BoxError> {
    let mut calls = BTreeMap::new();
    for url in urls {
        let mut conn = redis::Client::open(url.as_str())?
            .get_multiplexed_async_connection()
            .await?;
        let info: String = redis::cmd("INFO")
            .arg("commandstats")
            .query_async(&mut conn)
            .await?;
        for line in info.lines() {
            let Some((name, rest)) = line
                .strip_prefix("cmdstat_")
                .and_then(|l| l.split_once(':'))
            else {
                continue;
            };
            let n = rest
                .split(',')
                .find_map(|kv| kv.strip_prefix("calls="))
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0);
            if name != "info" {
                *calls.entry(name.to_owned()).or_default() += n;
            }
        }
    }
    Ok(calls)
}

/// Commands per acquisition, by command, between two [`node_calls`] snapshots.
fn calls_per_acq(
    before: &BTreeMap<String, u64>,
    after: &BTreeMap<String, u64>,
    acq: usize,
) -> Json {
    let per: BTreeMap<&String, f64> = after
        .iter()
        .map(|(k, &n)| (k, n.saturating_sub(before.get(k).copied().unwrap_or(0))))
        .filter(|&(_, d)| d > 0)
        .map(|(k, d)| (k, d as f64 / acq.max(1) as f64))
        .collect();
    json!(per)
}

/// Connects one client for a row.
async fn connect(urls: &[String], row: &Row, persist: Persist) -> Result<Client, BoxError> {
    let opts = LockOptions::default()
        .ttl(TTL)
        .retry_count(RETRY_COUNT)
        .wait(WAIT)
        .retry_delay(row.delay)
        .retry_jitter(row.jitter);
    let client = Client::builder()
        .nodes(urls.iter().cloned())
        .lock_options(opts)
        .notify(row.notify)
        .require_quorum(true)
        // Fresh nodes without durable writes would sit in the restart quarantine for
        // max_ttl + 5 s; the benchmark measures hand-offs, not the quarantine.
        .quarantine(if persist == Persist::Always {
            Quarantine::On
        } else {
            Quarantine::Off
        })
        .connect()
        .await?;
    Ok(client)
}

/// Runs one row and returns its JSON (settings, statistics, client counters).
async fn run_row(args: &Args, urls: &[String], row: &Row, run_id: usize) -> Result<Json, BoxError> {
    let n_clients = if row.clients == 0 {
        args.workers
    } else {
        row.clients
    };
    let mut clients = Vec::with_capacity(n_clients);
    for _ in 0..n_clients {
        clients.push(connect(urls, row, args.persist).await?);
    }
    let before: Vec<_> = clients.iter().map(Client::metrics).collect();
    let calls_before = node_calls(urls).await?;
    let key = format!("handoff:{}:{run_id}", std::process::id());
    let warm_end = MonoTime::now() + WARMUP;
    let end = warm_end + Duration::from_secs_f64(args.secs);
    let tasks = (0..args.workers).map(|w| {
        let client = clients[w % n_clients].clone();
        let opts = client.lock_options().clone();
        tokio::spawn(work(
            client,
            opts,
            key.clone(),
            w,
            args.hold,
            args.outside,
            warm_end,
            end,
        ))
    });
    let mut all = TaskResult::default();
    for r in join_all(tasks.collect::<Vec<_>>()).await {
        let r = r?;
        all.holds.extend(r.holds);
        for (k, n) in r.failed {
            *all.failed.entry(k).or_default() += n;
        }
        all.release_failures += r.release_failures;
    }
    let calls_after = node_calls(urls).await?;
    let (mut wakeups, mut attempts) = (0, 0);
    for (c, b) in clients.iter().zip(&before) {
        let m = c.metrics();
        wakeups += m.wakeups - b.wakeups;
        attempts += m.acquire_attempts - b.acquire_attempts;
    }
    let all_holds = all.holds.len();
    let mut stats = analyse(all.holds, args.workers, warm_end.as_nanos(), end.as_nanos());
    let failed: usize = all.failed.values().sum();
    // Acquisitions of the whole run (warm-up and drain included), like the command counts.
    let total_acq = all_holds;
    let per_cmd = calls_per_acq(&calls_before, &calls_after, total_acq);
    if let Some(o) = stats.as_object_mut() {
        o.insert("impl".into(), json!("quorumlock (Rust)"));
        o.insert("id".into(), json!(row.id));
        o.insert("label".into(), json!(row.label()));
        o.insert("notify".into(), json!(row.notify));
        o.insert("clients".into(), json!(n_clients));
        o.insert(
            "retry_delay_ms".into(),
            json!(row.delay.as_secs_f64() * 1e3),
        );
        o.insert(
            "retry_jitter_ms".into(),
            json!(row.jitter.as_secs_f64() * 1e3),
        );
        o.insert("jitter_shape".into(), json!("delay + U(0, jitter)"));
        o.insert("failed".into(), json!(failed));
        o.insert("failed_by_kind".into(), json!(all.failed));
        o.insert("release_failures".into(), json!(all.release_failures));
        o.insert("wakeups".into(), json!(wakeups));
        o.insert("attempts_total".into(), json!(attempts));
        let total: f64 = per_cmd
            .as_object()
            .map_or(0.0, |m| m.values().filter_map(Json::as_f64).sum());
        o.insert("node_cmds_per_acq".into(), json!(total));
        o.insert("node_cmds_per_acq_by_cmd".into(), per_cmd);
    }
    Ok(stats)
}

/// Cell `key` of a row as text.
fn cell(s: &Json, key: &str) -> String {
    match &s[key] {
        Json::Number(n) if n.is_f64() => format!("{:.1}", n.as_f64().unwrap_or(0.0)),
        v => v.to_string(),
    }
}

/// One line of progress (stderr) for a finished row.
fn progress(s: &Json) {
    let c = |k| cell(s, k);
    eprintln!(
        "  {}: {} acq/s, gap p50 {} µs p99 {} µs, to another worker {}% (p50 {} µs), failed {}, wakeups {}, attempts/acq {}, overlaps {}, hold p50 {} µs, per worker {}..{}, node commands/acq {} {}",
        c("label"),
        c("acq_per_sec"),
        c("gap_p50_us"),
        c("gap_p99_us"),
        c("same_worker_pct")
            .parse::<f64>()
            .map_or("?".into(), |p| format!("{:.1}", 100.0 - p)),
        c("other_gap_p50_us"),
        c("failed"),
        c("wakeups"),
        c("attempts_per_acq"),
        c("overlaps"),
        c("hold_p50_us"),
        c("per_worker_min"),
        c("per_worker_max"),
        c("node_cmds_per_acq"),
        s["node_cmds_per_acq_by_cmd"],
    );
}

/// Runs every selected row in order.
async fn bench(args: &Args, urls: &[String]) -> Result<Vec<Json>, BoxError> {
    let rows = [
        Row {
            id: "on",
            notify: true,
            clients: 0,
            delay: DEFAULT_RETRY_DELAY,
            jitter: DEFAULT_RETRY_JITTER,
        },
        Row {
            id: "on-shared",
            notify: true,
            clients: 1,
            delay: DEFAULT_RETRY_DELAY,
            jitter: DEFAULT_RETRY_JITTER,
        },
        Row {
            id: "on-2",
            notify: true,
            clients: 2,
            delay: DEFAULT_RETRY_DELAY,
            jitter: DEFAULT_RETRY_JITTER,
        },
        Row {
            id: "on-4",
            notify: true,
            clients: 4,
            delay: DEFAULT_RETRY_DELAY,
            jitter: DEFAULT_RETRY_JITTER,
        },
        Row {
            id: "off",
            notify: false,
            clients: 0,
            delay: DEFAULT_RETRY_DELAY,
            jitter: DEFAULT_RETRY_JITTER,
        },
        Row {
            id: "off-short",
            notify: false,
            clients: 0,
            delay: args.short_delay,
            jitter: args.short_jitter,
        },
    ];
    let mut out = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        let chosen = if args.only.is_empty() {
            !matches!(row.id, "on-2" | "on-4")
        } else {
            args.only.iter().any(|o| o == row.id)
        };
        if !chosen {
            continue;
        }
        let s = run_row(args, urls, row, i).await?;
        progress(&s);
        out.push(s);
    }
    Ok(out)
}

fn main() -> Result<(), BoxError> {
    let args = parse_args().unwrap_or_else(|msg| {
        eprintln!("{msg}");
        std::process::exit(2);
    });
    let (urls, cluster) = match std::env::var("QL_NODES") {
        Ok(nodes) if !nodes.is_empty() => (nodes.split(',').map(String::from).collect(), None),
        _ => {
            eprintln!(
                "starting {NODES} redis-server nodes (persist {})",
                args.persist
            );
            let cluster = Cluster::builder()
                .nodes(NODES)
                .persist(args.persist)
                .start()?;
            (cluster.urls(), Some(cluster))
        }
    };
    let load_before = common::loadavg();
    eprintln!(
        "quorumlock hand-off: {} workers x 1 resource, hold {} µs, outside {} µs, {} s per row, {} nodes, load average {load_before}",
        args.workers,
        args.hold.as_micros(),
        args.outside.as_micros(),
        args.secs,
        urls.len()
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(THREADS)
        .enable_all()
        .build()?;
    let floor = if args.only.is_empty() || args.only.iter().any(|o| o == "floor") {
        let f = rt.block_on(handoff_floor::notice_floor(
            &urls,
            args.secs.min(FLOOR_SECS),
            WARMUP,
            args.hold,
        ))?;
        eprintln!("  floor: {f}");
        f
    } else {
        Json::Null
    };
    let rows = rt.block_on(bench(&args, &urls))?;
    drop(rt);
    drop(cluster);
    let result = json!({
        "workers": args.workers, "hold_ms": args.hold.as_secs_f64() * 1e3,
        "outside_ms": args.outside.as_secs_f64() * 1e3, "secs": args.secs,
        "warmup_secs": WARMUP.as_secs_f64(), "nodes": urls.len(), "persist": args.persist.as_str(),
        "ttl_ms": TTL.as_millis() as u64, "retry_count": RETRY_COUNT, "wait_ms": WAIT.as_millis() as u64,
        "tokio_threads": THREADS, "load_before": load_before, "load_after": common::loadavg(),
        "gap": "start of the previous holder's release call -> next holder's acquire returned",
        "floor": floor,
        "rows": rows,
    });
    match &args.json {
        Some(path) => std::fs::write(path, result.to_string())?,
        None => println!("{result:#}"),
    }
    Ok(())
}
