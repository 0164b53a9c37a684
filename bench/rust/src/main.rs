//! quorumlock-bench: acquire+release latency and throughput of quorumlock against the raw
//! Redis floor (the same `SET NX PX` and compare-and-delete sent by hand), on 5 local
//! `redis-server` nodes started by the test harness.
//!
//! ```text
//! cargo run --release -p quorumlock-bench -- [--secs 3] [--persist none|always|everysec]
//!                                           [--rounds 2] [--conc 1,16,64] [--callgrind]
//!                                           [--no-notify] [--json] [--nodes URL,URL,...]
//! ```
//!
//! `--no-notify` turns quorumlock's release notification off (`ClientBuilder::notify`): its
//! release script then does not `PUBLISH`, like the floor's, which measures what the
//! notification costs the nodes.
//!
//! `--nodes` measures on running nodes instead of starting 5 (the Python and Node benchmarks
//! run it on theirs, between their own runs).
//!
//! For each concurrency the implementations alternate (floor, quorumlock, floor, ...) for
//! `--rounds` rounds each; the reported run of each is its best by throughput. The exit
//! status is 0 whether the goals are met or not.
//!
//! `--callgrind` adds the client's CPU cost per acquire+release, free of load noise: this
//! binary runs itself under `valgrind --tool=callgrind` (`--count floor|quorumlock --cycles
//! N --conc C`, on the same nodes) for two cycle counts, and the difference of the
//! instruction totals divided by the difference of the cycles is the instruction count of
//! one cycle (start-up, connection and warm-up cancel out), at c=1 and at c=64. The count
//! mode also serves `perf record` and `strace -c` of one implementation alone.
#![forbid(unsafe_code)]

#[path = "common.rs"]
mod common;

use std::time::Duration;

use futures_util::future::join_all;
use quorumlock::{Client, LockOptions, MonoTime, Quarantine};
use quorumlock_harness::{Cluster, Persist};
use redis::aio::MultiplexedConnection;
use serde_json::{Value as Json, json};

/// Any error of set-up; the benchmark itself counts failed operations instead.
type BoxError = Box<dyn std::error::Error + Send + Sync>;
/// Instructions per acquire+release under callgrind: per concurrency, floor and quorumlock.
type Instr = Vec<(usize, [f64; 2])>;

/// Number of lock nodes.
const NODES: usize = 5;
/// Tokio worker threads.
const WORKERS: usize = 2;
/// Concurrencies measured, in order (c=1 is the unloaded latency).
const CONCURRENCY: [usize; 3] = [1, 16, 64];
/// Goal: quorumlock instructions per cycle at most this multiple of the floor's.
const INSTR_GOAL: f64 = 1.15;
/// The callgrind runs: per concurrency, the cycles of the two runs of each implementation
/// (their difference is measured). At c=64 the work that only shows under concurrency
/// (requests still in flight when a round is decided, replies batched per wake-up) counts.
const CALLGRIND_RUNS: [(usize, [u64; 2]); 2] = [(1, [200, 1200]), (64, [640, 3200])];
/// Warm-up of every run before latencies are recorded.
const WARMUP: Duration = Duration::from_millis(500);
/// TTL of every lock in milliseconds, floor and quorumlock alike.
const TTL_MS: u64 = 10_000;
/// Goal: quorumlock p50 at most this multiple of the floor's.
const P50_GOAL: f64 = 1.05;
/// Goal: quorumlock throughput at least this multiple of the floor's.
const TPUT_GOAL: f64 = 1.0;
/// Names of the implementations: index 0 is the floor, 1 is quorumlock.
const IMPLS: [&str; 2] = ["floor", "quorumlock"];
/// The floor's release: the canonical single-key compare-and-delete.
const RELEASE_LUA: &str = "if redis.call('GET', KEYS[1]) == ARGV[1] then \
                           return redis.call('DEL', KEYS[1]) else return 0 end";
/// Printed for `--help` and bad arguments.
const USAGE: &str = "usage: quorumlock-bench [--secs S] [--persist none|always|everysec] \
[--rounds N] [--conc 1,16,64] [--callgrind] [--no-notify] [--json] [--nodes URL,URL,...]
       quorumlock-bench --count floor|quorumlock --cycles N [--conc C] [--no-notify] --nodes URL,...";

/// Command-line settings.
struct Args {
    /// Measured seconds per run (after the warm-up).
    secs: f64,
    /// Persistence of the nodes (default none: fsync noise would dominate).
    persist: Persist,
    /// Runs per implementation and concurrency.
    rounds: usize,
    /// Concurrencies to measure, in order.
    conc: Vec<usize>,
    /// Print one JSON object instead of the table.
    json: bool,
    /// Also count instructions per cycle under callgrind.
    callgrind: bool,
    /// Count mode (run under callgrind by `--callgrind`): the implementation (0 floor,
    /// 1 quorumlock) and the cycles, on `nodes`.
    count: Option<(usize, u64)>,
    /// Running nodes to use instead of starting `NODES` (comma-separated URLs).
    nodes: Option<Vec<String>>,
    /// quorumlock's release notification (`--no-notify` turns it off).
    notify: bool,
}

/// Parses the command line; `Err` holds the message to print.
fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        secs: 3.0,
        persist: Persist::None,
        rounds: 2,
        conc: CONCURRENCY.to_vec(),
        json: false,
        callgrind: false,
        count: None,
        nodes: None,
        notify: true,
    };
    let (mut count_impl, mut cycles) = (None, 0u64);
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value\n{USAGE}"));
        match flag.as_str() {
            "--secs" => args.secs = value()?.parse().map_err(|e| format!("--secs: {e}"))?,
            "--persist" => args.persist = value()?.parse()?,
            "--rounds" => args.rounds = value()?.parse().map_err(|e| format!("--rounds: {e}"))?,
            "--conc" => {
                args.conc = value()?
                    .split(',')
                    .map(|c| {
                        c.trim()
                            .parse::<usize>()
                            .map_err(|e| format!("--conc: {e}"))
                    })
                    .collect::<Result<_, _>>()?;
            }
            "--json" => args.json = true,
            "--callgrind" => args.callgrind = true,
            "--no-notify" => args.notify = false,
            "--count" => {
                let v = value()?;
                count_impl = Some(
                    IMPLS
                        .iter()
                        .position(|i| *i == v)
                        .ok_or(format!("--count: {v:?} is neither floor nor quorumlock"))?,
                );
            }
            "--cycles" => cycles = value()?.parse().map_err(|e| format!("--cycles: {e}"))?,
            "--nodes" => args.nodes = Some(value()?.split(',').map(str::to_owned).collect()),
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    if !(args.secs.is_finite() && args.secs > 0.0) || args.rounds == 0 {
        return Err("--secs and --rounds must be positive".into());
    }
    if args.conc.is_empty() || args.conc.contains(&0) {
        return Err("--conc must list positive concurrencies".into());
    }
    if let Some(which) = count_impl {
        if args.nodes.is_none() {
            return Err(format!("--count needs --nodes\n{USAGE}"));
        }
        args.count = Some((which, cycles));
    }
    Ok(args)
}

/// What the operations of both implementations share.
struct Env {
    /// One multiplexed connection per node for the floor, cloned into every task.
    conns: Vec<MultiplexedConnection>,
    /// The quorumlock client over the same nodes.
    client: Client,
    /// quorumlock's options.
    opts: LockOptions,
}

/// The outcome of one run.
#[derive(Clone, Debug, Default)]
struct Stats {
    /// Successful operations started in the measured window.
    ops: usize,
    /// Failed operations started in the measured window.
    errors: usize,
    /// Successful operations per second.
    tput: f64,
    /// Median latency, µs.
    p50: u64,
    /// 99th percentile latency, µs.
    p99: u64,
    /// Client CPU time (user + system, all threads) per operation in the window, µs.
    cpu_us: f64,
    /// Client context switches per operation in the window.
    csw: f64,
}

impl Stats {
    /// Latency percentiles and throughput of one run.
    fn new(mut lat_us: Vec<u64>, errors: usize, window: Duration) -> Stats {
        lat_us.sort_unstable();
        let n = lat_us.len();
        let pct = |p: usize| lat_us.get((n * p / 100).min(n.saturating_sub(1))).copied();
        let (p50, p99) = (pct(50).unwrap_or(0), pct(99).unwrap_or(0));
        let tput = n as f64 / window.as_secs_f64();
        Stats {
            ops: n,
            errors,
            tput,
            p50,
            p99,
            cpu_us: 0.0,
            csw: 0.0,
        }
    }

    /// The run as JSON.
    fn json(&self) -> Json {
        json!({"ops": self.ops, "errors": self.errors, "ops_per_sec": self.tput.round(),
               "p50_us": self.p50, "p99_us": self.p99,
               "client_cpu_us_per_op": self.cpu_us, "client_switches_per_op": self.csw})
    }
}

/// One floor operation: SET NX PX on every node in parallel, then the compare-and-delete
/// script on every node in parallel. True if every node granted and released.
async fn floor_op(
    conns: &mut [MultiplexedConnection],
    script: &redis::Script,
    key: &str,
    value: &str,
) -> bool {
    let set = |c| async move {
        let mut cmd = redis::cmd("SET");
        cmd.arg(&[key, value, "NX", "PX"]).arg(TTL_MS);
        cmd.query_async::<redis::Value>(c).await
    };
    let sets = join_all(conns.iter_mut().map(set)).await;
    // Release on every node even after a partial grant, so that no key lingers.
    let del = |c| async move { script.key(key).arg(value).invoke_async::<i64>(c).await };
    let dels = join_all(conns.iter_mut().map(del)).await;
    sets.iter().all(|r| matches!(r, Ok(redis::Value::Okay)))
        && dels.iter().all(|r| matches!(r, Ok(1)))
}

/// One quorumlock operation: acquire, then release. True if acquired and released on a
/// quorum.
async fn quorumlock_op(client: &Client, opts: &LockOptions, key: &str) -> bool {
    match client.acquire_with([key], opts).await {
        Ok(lock) => lock.release().await.is_ok_and(|r| r.was_held_by_quorum()),
        Err(_) => false,
    }
}

/// One task's handles on both implementations, on its own key.
struct Worker {
    conns: Vec<MultiplexedConnection>,
    client: Client,
    opts: LockOptions,
    script: redis::Script,
    key: String,
    /// 16 hex characters that make this task's floor values unique.
    tag: String,
    /// Floor operations so far.
    n: u64,
}

impl Worker {
    fn new(env: &Env, script: &redis::Script, key: String, tag: String) -> Worker {
        let (conns, client, opts) = (env.conns.clone(), env.client.clone(), env.opts.clone());
        let script = script.clone();
        Worker {
            conns,
            client,
            opts,
            script,
            key,
            tag,
            n: 0,
        }
    }

    /// One acquire+release of quorumlock (`ql`) or of the floor; true if it succeeded.
    async fn op(&mut self, ql: bool) -> bool {
        if ql {
            return quorumlock_op(&self.client, &self.opts, &self.key).await;
        }
        self.n += 1;
        // A unique 40-hex value; the floor does not need randomness.
        let value = format!("{}{:024x}", self.tag, self.n);
        floor_op(&mut self.conns, &self.script, &self.key, &value).await
    }
}

/// Runs `conc` tasks of the floor (`ql` false) or quorumlock for the warm-up plus
/// `window`; each task loops on its own key. Only operations started after the warm-up
/// and before the end of the window are recorded.
async fn run(env: &Env, ql: bool, conc: usize, run_id: usize, window: Duration) -> Stats {
    let warm_end = MonoTime::now() + WARMUP;
    let end = warm_end + window;
    // The client's CPU time and context switches over the measured window.
    let usage = tokio::spawn(async move {
        tokio::time::sleep(WARMUP).await;
        let (cpu0, csw0) = process_usage();
        tokio::time::sleep(window).await;
        let (cpu1, csw1) = process_usage();
        (cpu1.saturating_sub(cpu0), csw1.saturating_sub(csw0))
    });
    let script = redis::Script::new(RELEASE_LUA);
    let tasks = (0..conc).map(|task| {
        let key = format!("bench:{run_id}:{task}");
        let mut worker = Worker::new(env, &script, key, format!("{run_id:08x}{task:08x}"));
        tokio::spawn(async move {
            let (mut lat, mut errors) = (Vec::with_capacity(1 << 14), 0);
            loop {
                let t0 = MonoTime::now();
                if t0 >= end {
                    break (lat, errors);
                }
                let ok = worker.op(ql).await;
                let us = u64::try_from((MonoTime::now() - t0).as_micros()).unwrap_or(u64::MAX);
                match (t0 >= warm_end, ok) {
                    (true, true) => lat.push(us),
                    (true, false) => errors += 1,
                    _ => {}
                }
            }
        })
    });
    let (mut lat, mut errors) = (Vec::new(), 0);
    for (l, e) in join_all(tasks.collect::<Vec<_>>())
        .await
        .into_iter()
        .flatten()
    {
        lat.extend(l);
        errors += e;
    }
    let (cpu_us, csw) = usage.await.unwrap_or_default();
    let mut stats = Stats::new(lat, errors, window);
    let ops = (stats.ops + stats.errors).max(1) as f64;
    (stats.cpu_us, stats.csw) = (cpu_us as f64 / ops, csw as f64 / ops);
    stats
}

/// Results of one concurrency: every run of each implementation, in order.
struct Case {
    /// Number of tasks.
    conc: usize,
    /// Runs of the floor (index 0) and of quorumlock (index 1).
    runs: [Vec<Stats>; 2],
}

impl Case {
    /// The picked floor and quorumlock runs (best by throughput) and the ratios of
    /// quorumlock to the floor: `(floor, quorumlock, p50 ratio, throughput ratio)`.
    fn pick(&self) -> (Stats, Stats, f64, f64) {
        let best = |runs: &[Stats]| {
            let max = runs.iter().max_by(|a, b| a.tput.total_cmp(&b.tput));
            max.cloned().unwrap_or_default()
        };
        let (f, q) = (best(&self.runs[0]), best(&self.runs[1]));
        let (p50r, tr) = (q.p50 as f64 / f.p50.max(1) as f64, q.tput / f.tput.max(1.0));
        (f, q, p50r, tr)
    }
}

/// "goal met" / "goal missed".
fn verdict(met: bool) -> &'static str {
    if met { "goal met" } else { "goal missed" }
}

/// Prints the table of all cases to stdout.
fn print_table(args: &Args, cases: &[Case], instr: Option<Instr>, load: &[String; 2]) {
    let (p, s, r) = (args.persist, args.secs, args.rounds);
    let notify = if args.notify {
        ""
    } else {
        ", quorumlock's notification off"
    };
    println!("quorumlock bench: {NODES} nodes (persist {p}), {s} s per case{notify}");
    println!("load average {} before, {} after", load[0], load[1]);
    println!("(floor and quorumlock alternate, {r} runs each; best run by throughput shown)");
    let h = [
        "case",
        "impl",
        "ops/s",
        "p50 µs",
        "p99 µs",
        "errors",
        "cpu µs/op",
        "csw/op",
    ];
    println!(
        "{:<15} {:<11} {:>9} {:>8} {:>8} {:>7} {:>10} {:>7}",
        h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7]
    );
    for c in cases {
        let (f, q, p50r, tr) = c.pick();
        let case = format!("c={}", c.conc);
        for (name, s) in IMPLS.iter().zip([&f, &q]) {
            let (t, p50, p99, e) = (s.tput, s.p50, s.p99, s.errors);
            let (cpu, csw) = (s.cpu_us, s.csw);
            println!(
                "{case:<15} {name:<11} {t:>9.0} {p50:>8} {p99:>8} {e:>7} {cpu:>10.1} {csw:>7.1}"
            );
        }
        let (v1, v2) = (verdict(p50r <= P50_GOAL), verdict(tr >= TPUT_GOAL));
        println!(
            "{:<15} p50 x{p50r:.2} (goal <= {P50_GOAL}: {v1})  throughput x{tr:.2} (goal >= {TPUT_GOAL:.1}: {v2})",
            format!("{case} ratio")
        );
    }
    for (conc, [f, q]) in instr.unwrap_or_default() {
        let r = q / f.max(1.0);
        println!(
            "instructions per acquire+release at c={conc} (callgrind, client process): floor {f:.0}, quorumlock {q:.0}: x{r:.2} (goal <= {INSTR_GOAL}: {})",
            verdict(r <= INSTR_GOAL)
        );
    }
}

/// All numbers as one JSON object.
fn to_json(args: &Args, cases: &[Case], instr: Option<Instr>, load: &[String; 2]) -> Json {
    let runs = |r: &[Stats]| r.iter().map(Stats::json).collect::<Vec<_>>();
    let cases: Vec<Json> = cases
        .iter()
        .map(|c| {
            let (f, q, p50r, tr) = c.pick();
            json!({
                "concurrency": c.conc, "floor": f.json(), "quorumlock": q.json(),
                "floor_runs": runs(&c.runs[0]), "quorumlock_runs": runs(&c.runs[1]),
                "p50_ratio": p50r, "p50_goal": P50_GOAL, "p50_goal_met": p50r <= P50_GOAL,
                "throughput_ratio": tr, "throughput_goal": TPUT_GOAL,
                "throughput_goal_met": tr >= TPUT_GOAL,
            })
        })
        .collect();
    json!({
        "nodes": NODES, "persist": args.persist.as_str(), "secs_per_run": args.secs,
        "notify": args.notify,
        "warmup_secs": WARMUP.as_secs_f64(), "rounds": args.rounds,
        "pick": "best run by throughput", "worker_threads": WORKERS, "cases": cases,
        "load_before": load[0], "load_after": load[1],
        "instructions_per_cycle": instr.map(|runs| runs.iter().zip(CALLGRIND_RUNS).map(
            |(&(conc, [f, q]), (_, cycles))| json!({
                "concurrency": conc, "floor": f, "quorumlock": q, "ratio": q / f.max(1.0),
                "goal": INSTR_GOAL, "cycles": cycles,
            })).collect::<Vec<_>>()),
    })
}

/// Connects both implementations to the nodes.
async fn connect(urls: &[String], persist: Persist, notify: bool) -> Result<Env, BoxError> {
    let mut conns = Vec::with_capacity(urls.len());
    for url in urls {
        let client = redis::Client::open(url.as_str())?;
        conns.push(client.get_multiplexed_async_connection().await?);
    }
    let opts = LockOptions::default()
        .ttl(Duration::from_millis(TTL_MS))
        .retry_count(0)
        .node_timeout(Duration::from_millis(200));
    let client = Client::builder()
        .nodes(urls.iter().cloned())
        .lock_options(opts.clone())
        .require_quorum(true)
        // Fresh nodes without durable writes would sit in the restart quarantine for
        // max_ttl + 5 s; the benchmark measures the algorithm, not the quarantine.
        .quarantine(if persist == Persist::Always {
            Quarantine::On
        } else {
            Quarantine::Off
        })
        .notify(notify)
        .connect()
        .await?;
    Ok(Env {
        conns,
        client,
        opts,
    })
}

/// Connects both implementations to the nodes and runs every case, alternating them.
async fn bench(args: &Args, urls: &[String]) -> Result<Vec<Case>, BoxError> {
    let env = connect(urls, args.persist, args.notify).await?;
    let window = Duration::from_secs_f64(args.secs);
    let (mut cases, mut run_id) = (Vec::new(), 0);
    for &conc in &args.conc {
        let mut case = Case {
            conc,
            runs: [Vec::new(), Vec::new()],
        };
        for round in 1..=args.rounds {
            for (which, name) in IMPLS.iter().enumerate() {
                run_id += 1;
                let s = run(&env, which == 1, conc, run_id, window).await;
                let (t, p50, p99, e) = (s.tput, s.p50, s.p99, s.errors);
                let (cpu, csw) = (s.cpu_us, s.csw);
                eprintln!(
                    "  c={conc} {name:<10} run {round}: {t:>7.0} ops/s  p50 {p50:>6} µs  p99 {p99:>6} µs  errors {e}  cpu {cpu:.1} µs/op  csw {csw:.1}/op"
                );
                case.runs[which].push(s);
            }
        }
        cases.push(case);
    }
    Ok(cases)
}

/// Count mode (the program under callgrind or `perf`): `conc` tasks (the first `--conc`
/// value, default 1), each on its own key, run 20 warm-up cycles and then their share of
/// `cycles` acquire+release cycles of one implementation. Fails on a failed cycle.
async fn count(args: &Args, which: usize, cycles: u64, urls: &[String]) -> Result<(), BoxError> {
    let conc = args.conc[0];
    let env = connect(urls, Persist::None, args.notify).await?;
    let script = redis::Script::new(RELEASE_LUA);
    let share = cycles.div_ceil(conc as u64);
    let pid = std::process::id();
    let tasks = (0..conc).map(|task| {
        let key = format!("bench:count:{pid}:{task}");
        let mut worker = Worker::new(&env, &script, key, format!("{pid:08x}{task:08x}"));
        tokio::spawn(async move {
            for i in 0..20 + share {
                if !worker.op(which == 1).await {
                    return Err(format!("cycle {i} of {} failed", IMPLS[which]));
                }
            }
            Ok(())
        })
    });
    for r in join_all(tasks.collect::<Vec<_>>()).await {
        r??;
    }
    Ok(())
}

/// Instructions per cycle of each implementation (floor, quorumlock) under callgrind, per
/// concurrency of [`CALLGRIND_RUNS`]: `(I(b) - I(a)) / (b - a)` for its two cycle counts.
/// Keeps the output files in `$QL_CALLGRIND_DIR` when set (for `callgrind_annotate`).
fn callgrind(urls: &[String], notify: bool) -> Result<Instr, BoxError> {
    CALLGRIND_RUNS
        .iter()
        .map(|&(conc, cycles)| Ok((conc, callgrind_at(urls, conc, cycles, notify)?)))
        .collect()
}

/// [`callgrind`] at one concurrency.
fn callgrind_at(
    urls: &[String],
    conc: usize,
    cycle_counts: [u64; 2],
    notify: bool,
) -> Result<[f64; 2], BoxError> {
    let exe = std::env::current_exe()?;
    let keep = std::env::var_os("QL_CALLGRIND_DIR").map(std::path::PathBuf::from);
    let dir = keep.clone().unwrap_or_else(std::env::temp_dir);
    std::fs::create_dir_all(&dir)?;
    let mut per_cycle = [0.0; 2];
    for (which, name) in IMPLS.iter().enumerate() {
        let mut totals = [0u64; 2];
        for (k, cycles) in cycle_counts.iter().enumerate() {
            let pid = std::process::id();
            let out = dir.join(format!("callgrind.{name}.c{conc}.{cycles}.{pid}"));
            let status = std::process::Command::new("valgrind")
                .arg("--tool=callgrind")
                .arg(format!("--callgrind-out-file={}", out.display()))
                .arg(&exe)
                .args(["--count", name, "--cycles", &cycles.to_string()])
                .args(["--conc", &conc.to_string()])
                .args((!notify).then_some("--no-notify"))
                .arg("--nodes")
                .arg(urls.join(","))
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status()?;
            if !status.success() {
                return Err(format!("valgrind on {name} x{cycles} failed: {status}").into());
            }
            let text = std::fs::read_to_string(&out)?;
            totals[k] = text
                .lines()
                .find_map(|l| l.strip_prefix("summary:").or(l.strip_prefix("totals:")))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
                .ok_or("no instruction total in the callgrind output")?;
            if keep.is_none() {
                let _ = std::fs::remove_file(&out);
            }
            eprintln!(
                "  callgrind {name} c={conc} x{cycles}: {} instructions",
                totals[k]
            );
        }
        let d = (cycle_counts[1] - cycle_counts[0]) as f64;
        per_cycle[which] = totals[1].saturating_sub(totals[0]) as f64 / d;
    }
    Ok(per_cycle)
}

fn main() -> Result<(), BoxError> {
    let args = parse_args().unwrap_or_else(|msg| {
        eprintln!("{msg}");
        std::process::exit(2);
    });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(WORKERS)
        .enable_all()
        .build()?;
    if let (Some((which, cycles)), Some(urls)) = (args.count, &args.nodes) {
        return rt.block_on(count(&args, which, cycles, urls));
    }
    let cluster = match args.nodes {
        Some(_) => None,
        None => {
            eprintln!(
                "starting {NODES} redis-server nodes (persist {})",
                args.persist
            );
            Some(
                Cluster::builder()
                    .nodes(NODES)
                    .persist(args.persist)
                    .start()?,
            )
        }
    };
    let urls = match (&args.nodes, &cluster) {
        (Some(urls), _) => urls.clone(),
        (None, Some(cluster)) => cluster.urls(),
        (None, None) => Vec::new(),
    };
    let load_before = common::loadavg();
    let cases = rt.block_on(bench(&args, &urls))?;
    let load_after = common::loadavg();
    drop(rt);
    let instr = if args.callgrind {
        Some(callgrind(&urls, args.notify)?)
    } else {
        None
    };
    drop(cluster);
    let load = [load_before, load_after];
    if args.json {
        println!("{}", to_json(&args, &cases, instr, &load));
    } else {
        print_table(&args, &cases, instr, &load);
    }
    Ok(())
}

/// The process's CPU time (user + system, µs) and context switches (voluntary and not) so
/// far, from /proc/self; zeros where /proc is missing.
fn process_usage() -> (u64, u64) {
    let ticks = |s: &str| -> u64 {
        // Fields after the parenthesized command name: utime and stime are the 12th and 13th.
        let rest = s.rsplit_once(')').map_or("", |(_, r)| r);
        let f: Vec<&str> = rest.split_whitespace().collect();
        let n = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        n(11) + n(12)
    };
    // The kernel's USER_HZ is 100 on Linux: one tick is 10 ms.
    let cpu = std::fs::read_to_string("/proc/self/stat").map_or(0, |s| ticks(&s) * 10_000);
    // Per thread in /proc/self/task/*/status (the process's own status counts its main
    // thread only); threads that already ended are not counted.
    let status = |path: std::path::PathBuf| -> u64 {
        std::fs::read_to_string(path.join("status")).map_or(0, |s| {
            s.lines()
                .filter(|l| l.contains("ctxt_switches:"))
                .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
                .sum()
        })
    };
    let csw = std::fs::read_dir("/proc/self/task").map_or(0, |d| {
        d.filter_map(|e| e.ok()).map(|e| status(e.path())).sum()
    });
    (cpu, csw)
}
