//! many_locks: one client holding many auto-extended locks (issue 20 goal 6).
//!
//! On 5 `redis-server` nodes (started by the test harness, or `$QL_NODES`), one `Client` on
//! a single-threaded tokio runtime (one core) acquires `--locks` (100 000) distinct resources
//! with `auto_extend(true)` and ttl `--ttl-ms` (30 000: the engine extends each every
//! `ttl / 3` = 10 s; node timeout 200 ms), `--conc` (64) acquisitions at a time, then holds them for
//! `--hold-secs` (30 s) and releases them all.
//!
//! Reported: the process CPU time (user + system, `/proc/self/stat`) while holding, per
//! lock-second and per extension; the nodes' requests (script calls) and CPU time (`INFO`,
//! summed over the nodes) per extension while holding; the resident set size (`VmRSS`) per held lock (after
//! acquiring minus after connecting); extensions done against the expected count; locks lost
//! (client counter, and every lock checked held at the end), which must be 0.
//!
//! With `--redis-cluster` the one quorum member is a Redis Cluster of 3 primaries instead
//! (`redis+cluster://`; each lock's braced key has its own hash slot, so a batch of
//! extensions becomes one request per slot); its node figures are summed over the primaries.
//!
//! ```text
//! cargo run --release -p quorumlock-bench --bin many_locks -- [--locks 100000]
//!     [--ttl-ms 30000] [--hold-secs 30] [--conc 256] [--redis-cluster] [--json FILE]
//! ```
#![forbid(unsafe_code)]

#[path = "../common.rs"]
mod common;

use std::time::Duration;

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use quorumlock::{Client, Lock, LockOptions, MonoTime, Quarantine};
use quorumlock_harness::{Cluster, Persist};
use serde_json::json;

/// Any error of set-up.
type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Nodes started when `$QL_NODES` is not set.
const NODES: usize = 5;
/// Printed for `--help` and bad arguments.
const USAGE: &str = "usage: many_locks [--locks N] [--ttl-ms MS] [--hold-secs S] [--conc N] [--redis-cluster] [--json FILE]";

struct Args {
    locks: usize,
    ttl: Duration,
    hold: Duration,
    conc: usize,
    redis_cluster: bool,
    json: Option<String>,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        locks: 100_000,
        ttl: Duration::from_secs(30),
        hold: Duration::from_secs(30),
        conc: 64,
        redis_cluster: false,
        json: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value\n{USAGE}"));
        let num = |v: String| v.parse::<u64>().map_err(|e| format!("{flag}: {e}"));
        match flag.as_str() {
            "--locks" => a.locks = num(value()?)? as usize,
            "--ttl-ms" => a.ttl = Duration::from_millis(num(value()?)?),
            "--hold-secs" => a.hold = Duration::from_secs(num(value()?)?),
            "--conc" => a.conc = num(value()?)? as usize,
            "--redis-cluster" => a.redis_cluster = true,
            "--json" => a.json = Some(value()?),
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    if a.locks == 0 || a.conc == 0 || a.hold.is_zero() {
        return Err("--locks, --conc and --hold-secs must be positive".into());
    }
    Ok(a)
}

/// CPU time of this process so far (user + system), from `/proc/self/stat`.
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which ends at the last ')'): utime is the 12th, stime
    // the 13th, in clock ticks (100 per second on Linux).
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<u64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    let ticks = f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0);
    Duration::from_millis(ticks * 10)
}

/// The nodes' work so far, summed over every node: requests (script calls: `EVALSHA` and
/// `EVAL`, from `INFO commandstats`) and CPU time, user + system (`INFO cpu`), in seconds.
async fn node_work(urls: &[String]) -> Result<(u64, f64), BoxError> {
    let (mut requests, mut cpu) = (0u64, 0.0f64);
    for url in urls {
        let client = redis::Client::open(url.as_str())?;
        let mut conn = client.get_multiplexed_async_connection().await?;
        let info: String = redis::cmd("INFO")
            .arg("commandstats")
            .arg("cpu")
            .query_async(&mut conn)
            .await?;
        for line in info.lines() {
            let Some((name, value)) = line.trim().split_once(':') else {
                continue;
            };
            match name {
                "cmdstat_evalsha" | "cmdstat_eval" => {
                    let calls = value
                        .split(',')
                        .find_map(|f| f.strip_prefix("calls="))
                        .and_then(|n| n.parse::<u64>().ok());
                    requests += calls.unwrap_or(0);
                }
                "used_cpu_user" | "used_cpu_sys" => cpu += value.parse::<f64>().unwrap_or(0.0),
                _ => {}
            }
        }
    }
    Ok((requests, cpu))
}

/// Resident set size in bytes (`VmRSS`).
fn rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// `urls`: the quorum members; `stats`: the plain nodes whose work is summed.
async fn bench(
    args: &Args,
    urls: &[String],
    stats: &[String],
) -> Result<serde_json::Value, BoxError> {
    // A node timeout of 200 ms (the default would be 50 ms at this ttl): one thread serves
    // every lock's extensions, and the measure is their CPU, not a tight deadline.
    let opts = LockOptions::default()
        .ttl(args.ttl)
        .retry_count(3)
        .node_timeout(Duration::from_millis(200))
        .auto_extend(true);
    let client = Client::builder()
        .nodes(urls.iter().cloned())
        .lock_options(opts.clone())
        .require_quorum(true)
        .quarantine(Quarantine::Off)
        .connect()
        .await?;
    let rss0 = rss();
    let t0 = MonoTime::now();
    let mut locks: Vec<Lock> = Vec::with_capacity(args.locks);
    let mut pending = FuturesUnordered::new();
    let mut next = 0usize;
    let mut failed = 0usize;
    while locks.len() + failed < args.locks {
        while pending.len() < args.conc && next < args.locks {
            let (c, o, name) = (client.clone(), opts.clone(), format!("many:{next}"));
            pending.push(async move { c.acquire_with([name.as_str()], &o).await });
            next += 1;
        }
        match pending.next().await {
            Some(Ok(lock)) => locks.push(lock),
            Some(Err(e)) => {
                failed += 1;
                if failed <= 3 {
                    eprintln!("  acquire failed: {e}");
                }
            }
            None => break,
        }
    }
    let acquire_secs = (MonoTime::now() - t0).as_secs_f64();
    let rss1 = rss();
    let held = locks.len();
    eprintln!(
        "  acquired {held} locks in {acquire_secs:.1} s ({failed} failed); RSS {} MiB -> {} MiB",
        rss0 >> 20,
        rss1 >> 20
    );
    // Hold: the first extensions of the earliest locks are under way by now.
    let m0 = client.metrics();
    let work0 = node_work(stats).await?;
    let (cpu0, h0) = (cpu_time(), MonoTime::now());
    tokio::time::sleep(args.hold).await;
    let (cpu1, h1) = (cpu_time(), MonoTime::now());
    let work1 = node_work(stats).await?;
    let m1 = client.metrics();
    let rss2 = rss();
    let hold_secs = (h1 - h0).as_secs_f64();
    let cpu = (cpu1 - cpu0).as_secs_f64();
    let extends_ok = m1.extend.ok - m0.extend.ok;
    let failed_sum = |m: &quorumlock::Metrics| m.extend.failed.iter().map(|(_, n)| n).sum::<u64>();
    let extends_failed = failed_sum(&m1) - failed_sum(&m0);
    let interval = args.ttl.as_secs_f64() / 3.0;
    let expected = held as f64 * hold_secs / interval;
    let not_held = locks.iter().filter(|l| !l.is_held()).count();
    let lost = m1.lost;
    // Release everything.
    let t2 = MonoTime::now();
    let mut rel_failed = 0usize;
    let mut pending = FuturesUnordered::new();
    let mut it = locks.into_iter();
    loop {
        while pending.len() < args.conc {
            let Some(lock) = it.next() else { break };
            pending.push(async move { lock.release().await });
        }
        match pending.next().await {
            Some(Ok(r)) if r.was_held_by_quorum() => {}
            Some(_) => rel_failed += 1,
            None => break,
        }
    }
    let release_secs = (MonoTime::now() - t2).as_secs_f64();
    let per_lock_sec_us = cpu * 1e6 / (held as f64 * hold_secs);
    let per_extend_us = cpu * 1e6 / extends_ok.max(1) as f64;
    let node_requests = work1.0 - work0.0;
    let node_cpu = work1.1 - work0.1;
    let node_requests_per_extend = node_requests as f64 / extends_ok.max(1) as f64;
    let node_cpu_per_extend_us = node_cpu * 1e6 / extends_ok.max(1) as f64;
    let rss_per_lock = (rss1.saturating_sub(rss0)) as f64 / held.max(1) as f64;
    eprintln!(
        "  held {hold_secs:.1} s: CPU {cpu:.2} s ({:.0}% of a core), {extends_ok} extensions ok ({expected:.0} expected), {extends_failed} failed; lost {lost}, not held at the end {not_held}; nodes: {node_requests} script calls, CPU {node_cpu:.2} s; released in {release_secs:.1} s ({rel_failed} failed)",
        100.0 * cpu / hold_secs
    );
    Ok(json!({
        "locks": args.locks, "held": held, "acquire_failed": failed,
        "ttl_ms": args.ttl.as_millis() as u64, "extend_every_ms": (interval * 1e3).round(),
        "acquire_secs": acquire_secs, "hold_secs": hold_secs,
        "cpu_secs": cpu, "cpu_pct_of_core": 100.0 * cpu / hold_secs,
        "cpu_us_per_lock_second": per_lock_sec_us, "cpu_us_per_extension": per_extend_us,
        "extensions_ok": extends_ok, "extensions_expected": expected.round(),
        "extensions_failed": extends_failed,
        "rss_connected_bytes": rss0, "rss_held_bytes": rss1, "rss_after_hold_bytes": rss2,
        "rss_bytes_per_lock": rss_per_lock,
        "lost": lost, "not_held_at_end": not_held,
        "node_requests": node_requests, "node_requests_per_extension": node_requests_per_extend,
        "node_cpu_secs": node_cpu, "node_cpu_us_per_extension": node_cpu_per_extend_us,
        "release_secs": release_secs, "release_failed": rel_failed,
    }))
}

fn main() -> Result<(), BoxError> {
    let args = parse_args().unwrap_or_else(|msg| {
        eprintln!("{msg}");
        std::process::exit(2);
    });
    let (urls, stats, cluster) = match std::env::var("QL_NODES") {
        _ if args.redis_cluster => {
            let cluster = Cluster::builder()
                .nodes(3)
                .redis_cluster(0)
                .persist(Persist::None)
                .start()?;
            let url = cluster.cluster_url().ok_or("no Redis Cluster URL")?;
            (vec![url], cluster.urls(), Some(cluster))
        }
        Ok(nodes) if !nodes.is_empty() => {
            let urls: Vec<String> = nodes.split(',').map(String::from).collect();
            (urls.clone(), urls, None)
        }
        _ => {
            let cluster = Cluster::builder()
                .nodes(NODES)
                .persist(Persist::None)
                .start()?;
            (cluster.urls(), cluster.urls(), Some(cluster))
        }
    };
    let load_before = common::loadavg();
    // One core: everything (the locks' timers, the connections) on this thread.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut result = rt.block_on(bench(&args, &urls, &stats))?;
    drop(rt);
    drop(cluster);
    if let Some(o) = result.as_object_mut() {
        o.insert("load_before".into(), json!(load_before));
        o.insert("load_after".into(), json!(common::loadavg()));
        o.insert("nodes".into(), json!(urls.len()));
        o.insert("redis_cluster".into(), json!(args.redis_cluster));
    }
    let r = &result;
    println!(
        "many locks: {} held on {} nodes{}, ttl {} ms (extended every {} ms), held {:.1} s, one thread; load average {} before, {} after",
        r["held"],
        r["nodes"],
        if args.redis_cluster {
            " (a Redis Cluster of 3 primaries)"
        } else {
            ""
        },
        r["ttl_ms"],
        r["extend_every_ms"],
        r["hold_secs"].as_f64().unwrap_or(0.0),
        r["load_before"].as_str().unwrap_or("?"),
        r["load_after"].as_str().unwrap_or("?")
    );
    println!(
        "| locks | acquire s | CPU % of a core | CPU µs per lock-second | CPU µs per extension | extensions ok / expected | failed | node requests per extension | node CPU µs per extension | RSS bytes per lock | lost |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    println!(
        "| {} | {:.1} | {:.1} | {:.2} | {:.1} | {} / {} | {} | {:.2} | {:.1} | {:.0} | {} |",
        r["held"],
        r["acquire_secs"].as_f64().unwrap_or(0.0),
        r["cpu_pct_of_core"].as_f64().unwrap_or(0.0),
        r["cpu_us_per_lock_second"].as_f64().unwrap_or(0.0),
        r["cpu_us_per_extension"].as_f64().unwrap_or(0.0),
        r["extensions_ok"],
        r["extensions_expected"],
        r["extensions_failed"],
        r["node_requests_per_extension"].as_f64().unwrap_or(0.0),
        r["node_cpu_us_per_extension"].as_f64().unwrap_or(0.0),
        r["rss_bytes_per_lock"].as_f64().unwrap_or(0.0),
        r["lost"].as_u64().unwrap_or(0) + r["not_held_at_end"].as_u64().unwrap_or(0),
    );
    if let Some(path) = &args.json {
        std::fs::write(path, result.to_string())?;
    }
    Ok(())
}
