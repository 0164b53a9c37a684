//! fanout: how acquire+release latency grows with the number of nodes when every link has
//! latency (issue 20 goal 4).
//!
//! For N = 3, 5, 7, 9 `redis-server` nodes (started by the test harness), each behind its
//! own fault proxy (`tests/harness/src/proxy.rs`) that delays every request by `--delay-ms`
//! (1 ms) on the way to the node, one task loops for `--secs` (3 s) per N, rotating over:
//!
//! - `limit`: the physical limit. Two rounds of `PING` sent to every node in parallel, each
//!   timed until the quorum-th reply: one round trip to the quorum-th fastest node for the
//!   acquire, one for the release.
//! - `floor`: `SET NX PX` on every node in parallel, then the compare-and-delete script on
//!   every node in parallel, each waiting for every node (redis-rs, by hand).
//! - `quorumlock`: `acquire` + `release` (timed separately too).
//!
//! ```text
//! cargo run --release -p quorumlock-bench --bin fanout -- [--secs 3] [--delay-ms 1]
//!     [--nodes 3,5,7,9] [--json FILE]
//! ```
//!
//! The proxy's timer has tokio's 1 ms resolution, so a 1 ms delay lasts 1 to 2 ms; the limit
//! goes through the same proxies and includes that.
#![forbid(unsafe_code)]

#[path = "../common.rs"]
mod common;

use std::time::Duration;

use futures_util::StreamExt;
use futures_util::future::join_all;
use futures_util::stream::FuturesUnordered;
use quorumlock::{Client, LockOptions, MonoTime, Quarantine};
use quorumlock_harness::{Cluster, FaultProxy, Mode, Persist};
use redis::aio::MultiplexedConnection;
use serde_json::{Value as Json, json};

/// Any error of set-up; the benchmark itself counts failed operations instead.
type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// TTL of every lock in milliseconds.
const TTL_MS: u64 = 10_000;
/// Warm-up cycles of each implementation per N.
const WARMUP: usize = 20;
/// Goal: p50(N=9) / p50(N=3) at most this.
const GROWTH_GOAL: f64 = 1.2;
/// Goal: quorumlock's p50 at most this multiple of the limit's.
const LIMIT_GOAL: f64 = 1.1;
/// The floor's release: the canonical single-key compare-and-delete.
const RELEASE_LUA: &str = "if redis.call('GET', KEYS[1]) == ARGV[1] then \
                           return redis.call('DEL', KEYS[1]) else return 0 end";
/// Printed for `--help` and bad arguments.
const USAGE: &str = "usage: fanout [--secs S] [--delay-ms MS] [--nodes 3,5,7,9] [--json FILE]";

/// Command-line settings.
struct Args {
    secs: f64,
    delay: Duration,
    nodes: Vec<usize>,
    json: Option<String>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        secs: 3.0,
        delay: Duration::from_millis(1),
        nodes: vec![3, 5, 7, 9],
        json: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value\n{USAGE}"));
        match flag.as_str() {
            "--secs" => args.secs = value()?.parse().map_err(|e| format!("--secs: {e}"))?,
            "--delay-ms" => {
                let ms: f64 = value()?.parse().map_err(|e| format!("--delay-ms: {e}"))?;
                if !(ms.is_finite() && ms >= 0.0) {
                    return Err("--delay-ms must be a non-negative number".into());
                }
                args.delay = Duration::from_secs_f64(ms / 1000.0);
            }
            "--nodes" => {
                let v: Result<Vec<usize>, _> = value()?.split(',').map(str::parse).collect();
                args.nodes = v.map_err(|e| format!("--nodes: {e}"))?;
            }
            "--json" => args.json = Some(value()?),
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    if !(args.secs.is_finite() && args.secs > 0.0) || args.nodes.contains(&0) {
        return Err("--secs must be positive and --nodes list positive counts".into());
    }
    Ok(args)
}

/// µs since `t0`.
fn us_since(t0: MonoTime) -> u64 {
    u64::try_from((MonoTime::now() - t0).as_micros()).unwrap_or(u64::MAX)
}

/// `PING` on every node in parallel; µs until the `q`-th reply.
async fn ping_round(conns: &[MultiplexedConnection], q: usize) -> Option<u64> {
    let t0 = MonoTime::now();
    let mut pending: FuturesUnordered<_> = conns
        .iter()
        .map(|c| {
            let mut c = c.clone();
            async move { redis::cmd("PING").query_async::<String>(&mut c).await }
        })
        .collect();
    let mut ok = 0;
    while let Some(r) = pending.next().await {
        ok += usize::from(r.is_ok());
        if ok == q {
            let t = us_since(t0);
            // The rest finish in the background (the next round queues behind them).
            tokio::spawn(async move { while pending.next().await.is_some() {} });
            return Some(t);
        }
    }
    None
}

/// The floor's cycle (every node, both phases); true if every node granted and released.
async fn floor_op(
    conns: &[MultiplexedConnection],
    script: &redis::Script,
    key: &str,
    value: &str,
) -> bool {
    let sets = join_all(conns.iter().map(|c| {
        let mut c = c.clone();
        async move {
            let mut cmd = redis::cmd("SET");
            cmd.arg(&[key, value, "NX", "PX"]).arg(TTL_MS);
            cmd.query_async::<redis::Value>(&mut c).await
        }
    }))
    .await;
    let dels = join_all(conns.iter().map(|c| {
        let mut c = c.clone();
        async move { script.key(key).arg(value).invoke_async::<i64>(&mut c).await }
    }))
    .await;
    sets.iter().all(|r| matches!(r, Ok(redis::Value::Okay)))
        && dels.iter().all(|r| matches!(r, Ok(1)))
}

/// Median of `v` (sorted here); 0 when empty.
fn p50(v: &mut [u64]) -> u64 {
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(0)
}

/// One N: the nodes behind delaying proxies, the three implementations in rotation.
async fn one_n(n: usize, args: &Args) -> Result<Json, BoxError> {
    let cluster = Cluster::builder().nodes(n).persist(Persist::None).start()?;
    let proxies: Vec<FaultProxy> = (0..n)
        .map(|i| FaultProxy::start(cluster.addr(i)))
        .collect::<Result<_, _>>()?;
    let mode = Mode::Delay {
        c2s: args.delay,
        s2c: Duration::ZERO,
    };
    for p in &proxies {
        p.set(mode);
    }
    let urls: Vec<String> = proxies.iter().map(FaultProxy::url).collect();
    let mut conns = Vec::with_capacity(n);
    for url in &urls {
        conns.push(
            redis::Client::open(url.as_str())?
                .get_multiplexed_async_connection()
                .await?,
        );
    }
    let opts = LockOptions::default()
        .ttl(Duration::from_millis(TTL_MS))
        .retry_count(0)
        .node_timeout(Duration::from_millis(200));
    let client = Client::builder()
        .nodes(urls.iter().cloned())
        .lock_options(opts.clone())
        .require_quorum(true)
        .quarantine(Quarantine::Off)
        .connect()
        .await?;
    let q = n / 2 + 1;
    let script = redis::Script::new(RELEASE_LUA);
    let key = format!("fanout:{n}");
    let (mut limit, mut floor, mut ql, mut acq, mut rel) = (vec![], vec![], vec![], vec![], vec![]);
    let mut errors = [0usize; 3];
    let end = MonoTime::now() + Duration::from_secs_f64(args.secs);
    let mut i = 0usize;
    while MonoTime::now() < end {
        let warm = i >= WARMUP;
        // limit: two quorum rounds.
        match (ping_round(&conns, q).await, ping_round(&conns, q).await) {
            (Some(a), Some(b)) if warm => limit.push(a + b),
            (Some(_), Some(_)) => {}
            _ => errors[0] += 1,
        }
        let value = format!("{n:08x}{i:032x}");
        let t0 = MonoTime::now();
        let ok = floor_op(&conns, &script, &key, &value).await;
        match (ok, warm) {
            (true, true) => floor.push(us_since(t0)),
            (true, false) => {}
            (false, _) => errors[1] += 1,
        }
        let t0 = MonoTime::now();
        match client.acquire_with([key.as_str()], &opts).await {
            Ok(lock) => {
                let a = us_since(t0);
                let t1 = MonoTime::now();
                let released = lock.release().await.is_ok_and(|r| r.was_held_by_quorum());
                if !released {
                    errors[2] += 1;
                } else if warm {
                    ql.push(us_since(t0));
                    acq.push(a);
                    rel.push(us_since(t1));
                }
            }
            Err(_) => errors[2] += 1,
        }
        i += 1;
    }
    let (lim, flo, qlp) = (p50(&mut limit), p50(&mut floor), p50(&mut ql));
    let (a50, r50) = (p50(&mut acq), p50(&mut rel));
    eprintln!(
        "  N={n} (q={q}): limit p50 {lim} µs, floor {flo} µs, quorumlock {qlp} µs (acquire {a50}, release {r50}), x{:.2} the limit; errors {errors:?}",
        qlp as f64 / lim.max(1) as f64
    );
    drop(client);
    drop(conns);
    drop(proxies);
    drop(cluster);
    Ok(json!({
        "nodes": n, "quorum": q, "cycles": ql.len(),
        "limit_p50_us": lim, "floor_p50_us": flo, "quorumlock_p50_us": qlp,
        "acquire_p50_us": a50, "release_p50_us": r50,
        "vs_limit": qlp as f64 / lim.max(1) as f64,
        "floor_vs_limit": flo as f64 / lim.max(1) as f64,
        "errors": {"limit": errors[0], "floor": errors[1], "quorumlock": errors[2]},
    }))
}

fn main() -> Result<(), BoxError> {
    let args = parse_args().unwrap_or_else(|msg| {
        eprintln!("{msg}");
        std::process::exit(2);
    });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let load_before = common::loadavg();
    let mut rows = Vec::new();
    for &n in &args.nodes {
        rows.push(rt.block_on(one_n(n, &args))?);
    }
    let load_after = common::loadavg();
    let p = |n: u64, k: &str| {
        rows.iter()
            .find(|r| r["nodes"].as_u64() == Some(n))
            .and_then(|r| r[k].as_f64())
    };
    let growth = |k: &str| match (p(9, k), p(3, k)) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    };
    println!(
        "fan-out: {} ms added per link (request direction), {} s per N; load average {load_before} before, {load_after} after",
        args.delay.as_secs_f64() * 1e3,
        args.secs
    );
    println!(
        "| nodes | quorum | limit p50 µs | floor p50 µs | quorumlock p50 µs | acquire p50 µs | release p50 µs | quorumlock vs limit | floor vs limit |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in &rows {
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | x{:.2} | x{:.2} |",
            r["nodes"],
            r["quorum"],
            r["limit_p50_us"],
            r["floor_p50_us"],
            r["quorumlock_p50_us"],
            r["acquire_p50_us"],
            r["release_p50_us"],
            r["vs_limit"].as_f64().unwrap_or(0.0),
            r["floor_vs_limit"].as_f64().unwrap_or(0.0)
        );
    }
    let g = growth("quorumlock_p50_us");
    if let Some(g) = g {
        println!(
            "quorumlock p50(N=9)/p50(N=3) x{g:.2} (goal <= {GROWTH_GOAL}); floor x{:.2}, limit x{:.2}; vs limit goal <= x{LIMIT_GOAL}",
            growth("floor_p50_us").unwrap_or(0.0),
            growth("limit_p50_us").unwrap_or(0.0)
        );
    }
    let result = json!({
        "delay_ms": args.delay.as_secs_f64() * 1e3, "secs": args.secs,
        "load_before": load_before, "load_after": load_after, "rows": rows,
        "growth_9_over_3": g, "growth_goal": GROWTH_GOAL, "limit_goal": LIMIT_GOAL,
    });
    if let Some(path) = &args.json {
        std::fs::write(path, result.to_string())?;
    }
    Ok(())
}
