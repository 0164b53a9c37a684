//! The hand-off's floor on these nodes (included by `bin/handoff.rs` with `#[path]`): how
//! soon a listener can hear a quorum of nodes tell it of a release, with nothing but redis-rs.
//!
//! Each cycle sends, on every node in parallel over one multiplexed connection per node, a
//! script that writes the key to the next holder's value and publishes on its channel (what a
//! release that grants the key to a registered waiter does, REDLOCK.md §9), and a task with one
//! pub/sub connection per node waits for the quorum-th message. The time from the sends to that
//! message is the least any hand-off on these nodes can take: the nodes' script, write (with
//! `appendfsync always`, its fsync) and publish, and the two hops. Cycles are `pause` apart,
//! slept on a blocking thread as the rows' holds are, so that idle CPUs wake up as they do there.

use std::time::Duration;

use futures_util::StreamExt;
use futures_util::future::join_all;
use futures_util::stream::select_all;
use quorumlock::MonoTime;
use serde_json::{Value as Json, json};

/// Writes the key to `ARGV[1]` and publishes `ARGV[2]` on `KEYS[2]`: a granting release's effect.
const GRANT: &str = "redis.call('SET', KEYS[1], ARGV[1], 'PX', 10000) \
redis.call('PUBLISH', KEYS[2], ARGV[2]) return 1";

/// Runs cycles for `secs` after `warmup` and returns `{ cycles, p25_us, p50_us, p75_us,
/// p99_us }` of the time from a cycle's sends to its quorum-th message.
pub async fn notice_floor(
    urls: &[String],
    secs: f64,
    warmup: Duration,
    pause: Duration,
) -> Result<Json, Box<dyn std::error::Error + Send + Sync>> {
    let quorum = urls.len() / 2 + 1;
    let tag = std::process::id();
    let (key, channel) = (
        format!("handoff-floor:{{{tag}}}"),
        format!("handoff-floor:{{{tag}}}:released"),
    );
    let mut conns = Vec::with_capacity(urls.len());
    let mut streams = Vec::with_capacity(urls.len());
    for url in urls {
        let client = redis::Client::open(url.as_str())?;
        conns.push(client.get_multiplexed_async_connection().await?);
        let mut pubsub = client.get_async_pubsub().await?;
        pubsub.subscribe(&channel).await?;
        streams.push(pubsub.into_on_message());
    }
    let mut heard = select_all(streams);
    let script = redis::Script::new(GRANT);
    let start = MonoTime::now();
    let end = start + warmup + Duration::from_secs_f64(secs);
    let mut times = Vec::new();
    for cycle in 0u64.. {
        if MonoTime::now() >= end {
            break;
        }
        let payload = cycle.to_string();
        let t0 = MonoTime::now();
        let sends = join_all(conns.iter().map(|c| {
            let mut inv = script.key(&key);
            inv.key(&channel).arg(&payload).arg(&payload);
            let mut c = c.clone();
            async move { inv.invoke_async::<i64>(&mut c).await }
        }));
        let quorum_heard = async {
            let mut n = 0;
            while let Some(msg) = heard.next().await {
                if msg.get_payload_bytes() == payload.as_bytes() {
                    n += 1;
                    if n == quorum {
                        return Some(MonoTime::now() - t0);
                    }
                }
            }
            None
        };
        let (replies, took) = tokio::join!(sends, quorum_heard);
        for r in replies {
            r?;
        }
        let took = took.ok_or("a pub/sub connection closed")?;
        if t0 >= start + warmup {
            times.push(u64::try_from(took.as_micros()).unwrap_or(u64::MAX));
        }
        // Paced as the rows hold the lock: a sleep on a blocking thread.
        let _ = tokio::task::spawn_blocking(move || std::thread::sleep(pause)).await;
    }
    times.sort_unstable();
    let pct = |p: usize| times.get((times.len() * p / 100).min(times.len().saturating_sub(1)));
    Ok(json!({
        "what": "sends of a granting release on every node -> the quorum-th node's message heard",
        "cycles": times.len(),
        "p25_us": pct(25), "p50_us": pct(50), "p75_us": pct(75), "p99_us": pct(99),
    }))
}
