//! Fencing tokens (REDLOCK.md §7): strictly increasing per resource, phase 2 on diverged
//! counters, the fence check at the protected resource.
// Test helpers outside #[test] functions panic on failure by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use quorumlock::{FENCE_CHECK_SCRIPT, LockOptions};

/// The tests of this file run one at a time: the 32-client test saturates two cores, and the
/// others' 250 ms node timeout would not survive running next to it.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn fenced(ttl_ms: u64) -> LockOptions {
    opts(ttl_ms).fenced(true)
}

fn counter(c: &Cluster, i: usize, key: &[u8]) -> u64 {
    let mut k = key.to_vec();
    k.extend_from_slice(b":fence");
    get(c, i, &k).map_or(0, |v| String::from_utf8(v).unwrap().parse().unwrap())
}

fn set_counter(c: &Cluster, i: usize, key: &[u8], value: u64) {
    let mut k = key.to_vec();
    k.extend_from_slice(b":fence");
    c.command(i, &[b"SET", &k, value.to_string().as_bytes()])
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_strictly_increase_across_concurrent_clients() {
    let _serial = SERIAL.lock().await;
    // Issue 8: 32 concurrent clients and 10k acquisitions of one resource in the long suite
    // (`QL_FAULTS_FULL=1`, `make test-faults`); 32 x 15 in `make test`.
    const CLIENTS: usize = 32;
    let each = if std::env::var_os("QL_FAULTS_FULL").is_some() {
        313
    } else {
        15
    };
    let c = cluster(5);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for _ in 0..CLIENTS {
        let (client, seen) = (client(&c).await, seen.clone());
        tasks.push(tokio::spawn(async move {
            let o = fenced(2_000)
                .retry_forever()
                .retry_delay(Duration::from_millis(50))
                .retry_jitter(Duration::from_millis(50));
            for _ in 0..each {
                let lock = client.acquire_with(["fenced"], &o).await.unwrap();
                let token = lock.token().unwrap();
                seen.lock().unwrap().push((lock.acquired_at(), token));
                lock.release().await.unwrap();
            }
            // Every call succeeded, after at least one attempt each.
            let m = client.metrics();
            assert_eq!(m.acquire.ok, each as u64);
            assert!(m.acquire_attempts >= each as u64);
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let mut seen = Arc::try_unwrap(seen).unwrap().into_inner().unwrap();
    assert_eq!(seen.len(), CLIENTS * each);
    seen.sort();
    for pair in seen.windows(2) {
        assert!(pair[1].1 > pair[0].1, "token regression: {pair:?}");
    }
    // The upper bits carry the node's clock in seconds: about 1.9e15 in 2026.
    assert!(seen[0].1 > 1 << 50, "{}", seen[0].1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_keep_increasing_across_crashes_and_delayed_restarts() {
    let _serial = SERIAL.lock().await;
    let mut c = cluster(5);
    // Operator discipline instead of the quarantine: a crashed node comes back empty, but
    // only after every lock it could have held has expired (TESTING.md P2).
    let client = quorumlock::Client::builder()
        .nodes(c.urls())
        .lock_options(opts(10_000))
        .quarantine(quorumlock::Quarantine::Off)
        .connect()
        .await
        .unwrap();
    let o = fenced(500).retry_count(20);
    let mut last = 0u64;
    let mut taken = 0;
    let take = async |n: usize, last: &mut u64| {
        for _ in 0..n {
            let lock = client.acquire_with(["crash"], &o).await.unwrap();
            let token = lock.token().unwrap();
            assert!(token > *last, "token {token} after {last}");
            *last = token;
            lock.release().await.unwrap();
        }
        n
    };
    for round in 0..3 {
        taken += take(20, &mut last).await;
        // A minority crashes, each time another pair: over the rounds every counter but
        // one's is lost once.
        let pair = [round, round + 1];
        for i in pair {
            c.kill(i);
        }
        taken += take(20, &mut last).await;
        tokio::time::sleep(Duration::from_millis(700)).await;
        for i in pair {
            c.restart(i, Persist::None).unwrap();
        }
        taken += take(20, &mut last).await;
    }
    assert_eq!(taken, 180);
}

#[tokio::test]
async fn phase_two_raises_a_lagging_node_so_the_next_holder_gets_more() {
    let _serial = SERIAL.lock().await;
    // REDLOCK.md §7.5, first history: a failed attempt left node 0's counter ahead.
    let c = cluster(3);
    let client = client(&c).await;
    let key = client.key("diverged");
    let ahead = counter(&c, 1, &key).max(1 << 52) + 5_000_000;
    set_counter(&c, 0, &key, ahead);
    c.pause(2).unwrap();
    let x = client
        .acquire_with(["diverged"], &fenced(5_000))
        .await
        .unwrap();
    c.resume(2).unwrap();
    let t_x = x.token().unwrap();
    assert_eq!(t_x, ahead + 1);
    assert_eq!(counter(&c, 1, &key), t_x, "phase 2 raised node 1 to t_X");
    x.release().await.unwrap();
    c.pause(0).unwrap();
    let y = client
        .acquire_with(["diverged"], &fenced(5_000))
        .await
        .unwrap();
    c.resume(0).unwrap();
    let t_y = y.token().unwrap();
    assert!(t_y > t_x, "t_Y {t_y} must exceed t_X {t_x}");
    y.release().await.unwrap();
}

#[tokio::test]
async fn multi_resource_locks_get_one_token_per_resource() {
    let _serial = SERIAL.lock().await;
    let c = cluster(3);
    let client = client(&c).await;
    let a = client
        .acquire_with(["b", "a"], &fenced(5_000))
        .await
        .unwrap();
    let first = a.tokens().unwrap().to_vec();
    assert_eq!(first.len(), 2);
    a.release().await.unwrap();
    let b = client.acquire_with(["a"], &fenced(5_000)).await.unwrap();
    assert!(b.token().unwrap() > first[0]);
    b.release().await.unwrap();
    // Unfenced locks carry no token.
    let plain = client.acquire(["a"]).await.unwrap();
    assert_eq!(plain.token(), None);
    plain.release().await.unwrap();
}

#[tokio::test]
async fn a_stale_holder_is_refused_by_the_fence_check() {
    let _serial = SERIAL.lock().await;
    // The pause-after-the-validity-check scenario: C1's lease runs out while it stalls, C2
    // takes over and registers its token; C1's late write carries a lower token.
    let c = cluster(4);
    let client = quorumlock::Client::builder()
        .nodes(c.urls()[..3].to_vec())
        .lock_options(opts(10_000))
        .connect()
        .await
        .unwrap();
    let fence = |token: u64| -> i64 {
        let t = token.to_string();
        let r = c.command(
            3,
            &[
                b"EVAL",
                FENCE_CHECK_SCRIPT.as_bytes(),
                b"1",
                b"invoice:7:fence",
                t.as_bytes(),
            ],
        );
        r.unwrap().as_int().unwrap()
    };
    let c1 = client
        .acquire_with(["invoice:7"], &fenced(500))
        .await
        .unwrap();
    let t1 = c1.token().unwrap();
    assert_eq!(fence(t1), 1, "C1 registers");
    tokio::time::sleep(Duration::from_millis(600)).await; // C1 stalls past its validity
    let c2 = client
        .acquire_with(["invoice:7"], &fenced(5_000))
        .await
        .unwrap();
    let t2 = c2.token().unwrap();
    assert_eq!(fence(t2), 1, "C2 registers its token first");
    assert_eq!(fence(t1), 0, "C1's late write is rejected");
    assert_eq!(fence(t2), 1, "the same holder again is fine");
    c2.release().await.unwrap();
}

#[tokio::test]
async fn counter_ttl_must_cover_the_quarantine_period() {
    let _serial = SERIAL.lock().await;
    let c = cluster(1);
    let client = client(&c).await;
    let o = fenced(1_000).fence_counter_ttl(Duration::from_secs(10));
    let e = client.acquire_with(["ttl"], &o).await.unwrap_err();
    assert!(e.is_invalid_argument(), "{e}");
    let o = fenced(1_000).fence_counter_ttl(Duration::from_secs(86_400));
    let lock = client.acquire_with(["ttl"], &o).await.unwrap();
    let mut k = client.key("ttl");
    k.extend_from_slice(b":fence");
    let pttl = c.command(0, &[b"PTTL", &k]).unwrap().as_int().unwrap();
    assert!(pttl > 86_000_000, "pttl {pttl}");
    lock.release().await.unwrap();
}
