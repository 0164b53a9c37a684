//! Shared helpers for the integration tests: real redis-server nodes from the harness and
//! clients with test-friendly timeouts (a raised node_timeout on a loaded 2-core machine,
//! TESTING.md §2.2).
// Each test binary uses a different subset of these helpers; panicking on harness failures
// is what a test helper should do.
#![allow(dead_code, unused_imports, clippy::expect_used, clippy::unwrap_used)]

use std::time::Duration;

use quorumlock::{Client, LockOptions};
pub use quorumlock_harness::{Cluster, Persist, Reply};

// Generous: several tests and their redis-servers share two cores (TESTING.md §2.2 allows
// raising it); tests that are about the timeout set their own.
pub const NODE_TIMEOUT: Duration = Duration::from_millis(250);

pub fn cluster(n: usize) -> Cluster {
    Cluster::builder()
        .nodes(n)
        .start()
        .expect("start redis-server nodes")
}

pub fn opts(ttl_ms: u64) -> LockOptions {
    LockOptions::default()
        .ttl(Duration::from_millis(ttl_ms))
        .node_timeout(NODE_TIMEOUT)
        .retry_count(0)
}

pub async fn client(c: &Cluster) -> Client {
    Client::builder()
        .nodes(c.urls())
        .lock_options(opts(10_000))
        .connect()
        .await
        .expect("connect")
}

/// The value stored under `key` on node `i`, if any.
pub fn get(c: &Cluster, i: usize, key: &[u8]) -> Option<Vec<u8>> {
    match c.command(i, &[b"GET", key]).expect("GET") {
        Reply::Bulk(v) => Some(v),
        _ => None,
    }
}

/// Number of nodes whose `key` holds `value`.
pub fn holders(c: &Cluster, key: &[u8], value: &str) -> usize {
    (0..c.len())
        .filter(|&i| get(c, i, key).as_deref() == Some(value.as_bytes()))
        .count()
}

/// Number of nodes where `key` exists at all.
pub fn present(c: &Cluster, key: &[u8]) -> usize {
    (0..c.len())
        .filter(|&i| c.command(i, &[b"EXISTS", key]).expect("EXISTS").as_int() == Some(1))
        .count()
}

pub fn set_foreign(c: &Cluster, i: usize, key: &[u8], px_ms: u64) {
    let px = px_ms.to_string();
    let r = c
        .command(i, &[b"SET", key, b"someone-else", b"PX", px.as_bytes()])
        .expect("SET");
    assert!(!r.is_error(), "{r:?}");
}

pub fn del(c: &Cluster, i: usize, key: &[u8]) {
    c.command(i, &[b"DEL", key]).expect("DEL");
}

/// `holders`, polled for up to a second until it reaches `n`: acquisitions are decided at
/// the quorum, so the remaining nodes may still be running their request.
pub async fn wait_holders(c: &Cluster, key: &[u8], value: &str, n: usize) -> usize {
    for _ in 0..100 {
        let h = holders(c, key, value);
        if h == n {
            return h;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    holders(c, key, value)
}

/// Polls `check` for up to 2 s.
pub async fn eventually(check: impl Fn() -> bool) -> bool {
    for _ in 0..200 {
        if check() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    check()
}

/// Acquires each of `names` (one lock per resource) at once with `opts`.
pub async fn acquire_each(
    client: &Client,
    names: &[String],
    opts: &LockOptions,
) -> Vec<quorumlock::Lock> {
    let locks = futures_util::future::join_all(
        names
            .iter()
            .map(|n| client.acquire_with([n.as_str()], opts)),
    )
    .await;
    locks.into_iter().map(Result::unwrap).collect()
}

/// Acquires `resource` with the client's defaults and releases it at once.
pub async fn lock_and_release(client: &Client, resource: &str) {
    client
        .acquire([resource])
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
}

/// How many times node `i` ran the commands in `names` (lower case), from `INFO commandstats`.
pub fn calls(c: &Cluster, i: usize, names: &[&str]) -> i64 {
    let Reply::Bulk(b) = c.command(i, &[b"INFO", b"commandstats"]).unwrap() else {
        panic!("INFO commandstats is not a bulk reply");
    };
    String::from_utf8_lossy(&b)
        .lines()
        .filter_map(|l| {
            let (name, stats) = l.strip_prefix("cmdstat_")?.split_once(':')?;
            if !names.contains(&name) {
                return None;
            }
            stats
                .split("calls=")
                .nth(1)?
                .split(',')
                .next()?
                .parse::<i64>()
                .ok()
        })
        .sum()
}
