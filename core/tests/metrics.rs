//! Metrics (issue 8 item 5): the snapshot counts what real nodes answered.

mod common;

use std::time::Duration;

use common::*;
use quorumlock::{ErrorKind, NodeKind};

#[tokio::test]
async fn metrics_count_outcomes_and_node_replies() {
    let mut c = cluster(3);
    let client = client(&c).await;
    assert_eq!(client.metrics().acquire.ok, 0);

    let lock = client.acquire(["metrics:a"]).await.unwrap();
    lock.extend(Duration::from_secs(10)).await.unwrap();
    let busy = client.acquire(["metrics:a"]).await.unwrap_err();
    assert_eq!(busy.kind(), ErrorKind::Busy);
    lock.release().await.unwrap();
    lock.release().await.unwrap(); // sends nothing, counts nothing
    c.kill(2);
    lock_and_release(&client, "metrics:b").await;

    // Replies that came after a round was decided at the quorum are counted as they land.
    let settled = |m: &quorumlock::Metrics| {
        m.nodes[..2].iter().all(|n| {
            n.replies.contains(&(NodeKind::Ok, 4)) && n.replies.contains(&(NodeKind::Released, 2))
        })
    };
    let mut m = client.metrics();
    for _ in 0..100 {
        if settled(&m) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
        m = client.metrics();
    }
    // A cleanup of the busy attempt still in flight lands within this.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let m = client.metrics();
    assert_eq!(m.acquire.ok, 2);
    assert_eq!(m.acquire.failed, vec![(ErrorKind::Busy, 1)]);
    assert_eq!(m.acquire_attempts, 3, "retry_count(0): one round per call");
    assert_eq!(m.acquire.latency.count(), 3);
    assert_eq!((m.extend.ok, m.extend.failures()), (1, 0));
    assert_eq!(m.release.ok, 2);
    assert_eq!(m.lost, 0);
    assert_eq!(m.nodes.len(), 3);
    // Node 2 is dead for the last acquire and release: both count as node errors there.
    let dead = &m.nodes[2];
    assert_eq!(dead.errors(), 2, "{dead:?}");
    for n in &m.nodes[..2] {
        // Ok: the connect-time ping, two acquires, the extend. HeldByOther: the busy attempt,
        // plus its cleanup where the round was decided before the node's reply came (a
        // node that refused is not cleaned). Released: the two releases.
        let held = n
            .replies
            .iter()
            .find(|(k, _)| *k == NodeKind::HeldByOther)
            .map_or(0, |&(_, c)| c);
        assert!((1..=2).contains(&held), "{n:?}");
        assert_eq!(
            n.replies,
            vec![
                (NodeKind::Ok, 4),
                (NodeKind::HeldByOther, held),
                (NodeKind::Released, 2)
            ],
            "{n:?}"
        );
        assert_eq!((n.requests(), n.errors()), (6 + held, 0), "{n:?}");
        assert_eq!(n.latency.count(), 6 + held, "{n:?}");
    }
    let text = m.to_prometheus();
    assert!(
        text.contains("quorumlock_acquire_total{outcome=\"QL_BUSY\"} 1\n"),
        "{text}"
    );
    assert!(
        text.contains("quorumlock_acquire_total{outcome=\"ok\"} 2\n"),
        "{text}"
    );
}

#[tokio::test]
async fn a_lost_lock_is_counted_once() {
    let c = cluster(3);
    let client = client(&c).await;
    let lock = client
        .acquire_with(["metrics:lost"], &opts(300))
        .await
        .unwrap();
    for i in 0..3 {
        del(&c, i, &client.key("metrics:lost"));
    }
    let e = lock.extend(Duration::from_millis(300)).await.unwrap_err();
    assert!(e.is_lost(), "{e}");
    let _ = lock.extend(Duration::from_millis(300)).await;
    let m = client.metrics();
    assert_eq!(m.lost, 1);
    assert_eq!(m.extend.failed, vec![(ErrorKind::Lost, 2)]);
}
