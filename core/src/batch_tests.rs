//! One batch on real nodes: every lock gets its own answer from every node.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a failed unwrap fails the test"
)]

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::join_all;
use quorumlock_harness::{Cluster, Reply};

use crate::clock::MonoTime;
use crate::config::LockOptions;
use crate::report::NodeKind;
use crate::{Client, Lock};

fn script_calls(c: &Cluster, i: usize) -> i64 {
    let Reply::Bulk(b) = c.command(i, &[b"INFO", b"commandstats"]).unwrap() else {
        panic!("INFO commandstats");
    };
    String::from_utf8_lossy(&b)
        .lines()
        .filter(|l| l.starts_with("cmdstat_evalsha:") || l.starts_with("cmdstat_eval:"))
        .filter_map(|l| {
            l.split("calls=")
                .nth(1)?
                .split(',')
                .next()?
                .parse::<i64>()
                .ok()
        })
        .sum()
}

#[tokio::test]
async fn one_batch_answers_each_lock_on_its_own() {
    let c = Cluster::builder().nodes(3).start().unwrap();
    let opts = LockOptions::default()
        .ttl(Duration::from_secs(10))
        .node_timeout(Duration::from_millis(500));
    let client = Client::builder()
        .nodes(c.urls())
        .lock_options(opts)
        .connect()
        .await
        .unwrap();
    let sets: [&[&str]; 5] = [&["kept"], &["gone"], &["taken"], &["typed"], &["p1", "p2"]];
    let mut locks: Vec<Lock> = Vec::new();
    for set in sets {
        locks.push(client.acquire(set.iter()).await.unwrap());
    }
    let key = |r: &str| client.key(r);
    for i in 0..3 {
        c.command(i, &[b"DEL", &key("gone")]).unwrap();
    }
    for i in 0..2 {
        c.command(i, &[b"SET", &key("taken"), b"other"]).unwrap();
        c.command(i, &[b"DEL", &key("typed")]).unwrap();
        c.command(i, &[b"HSET", &key("typed"), b"f", b"v"]).unwrap();
    }
    // Loaded, so that the batch's EVALSHA is not followed by an EVAL after NOSCRIPT.
    let source = quorumlock_proto::scripts::EXTEND_BATCH.as_bytes();
    c.command(0, &[b"SCRIPT", b"LOAD", source]).unwrap();
    let before = script_calls(&c, 0);
    // On this single-threaded runtime every ticket is queued before the batching task runs:
    // one batch.
    let deadline = MonoTime::now() + Duration::from_secs(2);
    let batcher = client.inner.batcher();
    let rounds = join_all(sets.iter().zip(&locks).map(|(set, lock)| {
        let keys: Arc<[Vec<u8>]> = set.iter().map(|r| key(r)).collect();
        let value: Arc<str> = lock.value().into();
        async move { batcher.extend(&keys, &value, 20_000, deadline).await }
    }))
    .await;
    assert_eq!(script_calls(&c, 0) - before, 1, "one request for the batch");
    let kinds: Vec<Vec<NodeKind>> = rounds
        .into_iter()
        .map(|r| r.unwrap().results.iter().map(|n| n.kind).collect())
        .collect();
    use NodeKind::*;
    // A lock's round ends at its quorum (or when it cannot be reached): a node whose answer
    // was not needed may still be Pending.
    let like = |got: &[NodeKind], want: [NodeKind; 3], name: &str| {
        let fits = got.iter().zip(want).all(|(g, w)| *g == w || *g == Pending);
        assert!(fits, "{name}: {got:?}, expected {want:?}");
    };
    like(&kinds[0], [Ok, Ok, Ok], "kept");
    like(&kinds[1], [NotHeld, NotHeld, NotHeld], "gone");
    like(&kinds[2], [HeldByOther, HeldByOther, Ok], "taken");
    like(
        &kinds[3],
        [WrongType, WrongType, Ok],
        "typed: that lock only",
    );
    like(&kinds[4], [Ok, Ok, Ok], "pair");
    // Every node answered in the end: lengthened where the answer was Ok, nowhere else.
    tokio::time::sleep(Duration::from_millis(100)).await;
    // Lengthened where the answer was Ok, and nowhere else.
    let pttl = |i: usize, r: &str| c.command(i, &[b"PTTL", &key(r)]).unwrap().as_int().unwrap();
    for i in 0..3 {
        assert!(pttl(i, "kept") > 15_000 && pttl(i, "p1") > 15_000 && pttl(i, "p2") > 15_000);
    }
    assert!(pttl(2, "typed") > 15_000);
    assert!(pttl(2, "taken") > 15_000 && pttl(0, "taken") == -1);
    assert_eq!(pttl(0, "gone"), -2, "never re-created");
}

/// Every reply or timeout a node's metrics count, summed over kinds.
fn counted(client: &Client, i: usize) -> u64 {
    client.metrics().nodes[i]
        .replies
        .iter()
        .map(|(_, n)| n)
        .sum()
}

#[tokio::test]
async fn a_late_answer_after_a_timeout_is_counted_once() {
    let c = Cluster::builder().nodes(3).start().unwrap();
    let client = Client::builder()
        .nodes(c.urls())
        .lock_options(LockOptions::default().node_timeout(Duration::from_millis(500)))
        .connect()
        .await
        .unwrap();
    let mut locks = Vec::new();
    for r in ["late-a", "late-b"] {
        locks.push(client.acquire([r]).await.unwrap());
    }
    // The acquisitions' replies after their quorum are counted too: let them arrive first.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let before: Vec<u64> = (0..3).map(|i| counted(&client, i)).collect();
    for i in 1..3 {
        c.pause(i).unwrap();
    }
    let deadline = MonoTime::now() + Duration::from_millis(300);
    let batcher = client.inner.batcher();
    let rounds = join_all(["late-a", "late-b"].iter().zip(&locks).map(|(r, lock)| {
        let keys: Arc<[Vec<u8>]> = vec![client.key(r)].into();
        let value: Arc<str> = lock.value().into();
        async move { batcher.extend(&keys, &value, 20_000, deadline).await }
    }))
    .await;
    for r in rounds {
        let kinds: Vec<NodeKind> = r.unwrap().results.iter().map(|n| n.kind).collect();
        assert_eq!(kinds, [NodeKind::Ok, NodeKind::Timeout, NodeKind::Timeout]);
    }
    for i in 1..3 {
        c.resume(i).unwrap();
    }
    // The stopped nodes' answers arrive now and are drained: not counted a second time.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after: Vec<u64> = (0..3).map(|i| counted(&client, i) - before[i]).collect();
    assert_eq!(after, [2, 2, 2], "one count per lock and node");
}
