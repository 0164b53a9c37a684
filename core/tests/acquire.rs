//! Acquire and release against real redis-server nodes (REDLOCK.md §3, §4).
// Test helpers outside #[test] functions panic on failure by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::*;
use quorumlock::{ErrorKind, NodeKind};

#[tokio::test]
async fn acquire_release_on_1_3_5_7_nodes() {
    for n in [1usize, 3, 5, 7] {
        let c = cluster(n);
        let client = client(&c).await;
        assert_eq!(client.quorum(), n / 2 + 1);
        let lock = client.acquire(["orders"]).await.unwrap();
        let key = client.key("orders");
        assert_eq!(key, b"quorumlock:{orders}".to_vec());
        assert_eq!(wait_holders(&c, &key, lock.value(), n).await, n, "n={n}");
        let remaining = lock.remaining();
        assert!(
            remaining > Duration::from_millis(9_000) && remaining <= Duration::from_millis(9_898)
        );
        assert_eq!(lock.attempts(), 1);
        lock.extend(Duration::from_secs(20)).await.unwrap();
        assert!(lock.remaining() > Duration::from_secs(19));
        // Decided at the quorum: at least q nodes already carry the longer TTL.
        let extended = (0..n)
            .filter(|&i| c.command(i, &[b"PTTL", &key]).unwrap().as_int().unwrap() > 19_000)
            .count();
        assert!(
            extended >= client.quorum(),
            "{extended} of {n} nodes extended"
        );
        assert_eq!(lock.release_report(), None);
        let report = lock.release().await.unwrap();
        assert_eq!(lock.release_report().as_ref(), Some(&report));
        assert_eq!(report.released_count(), n, "{report}");
        assert!(report.was_held_by_quorum());
        assert_eq!(present(&c, &key), 0);
        // A second release sends nothing and returns the first report.
        assert_eq!(lock.release().await.unwrap(), report);
        // Extend after release is a state error.
        let e = lock.extend(Duration::from_secs(1)).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    }
}

#[tokio::test]
async fn busy_lock_is_reported_as_busy_with_node_detail() {
    let c = cluster(5);
    let client = client(&c).await;
    let held = client.acquire(["r"]).await.unwrap();
    let e = client.acquire(["r"]).await.unwrap_err();
    assert!(e.is_busy(), "{e}");
    assert_eq!(e.attempts(), 1);
    // Decided as soon as a quorum became impossible: at least N - q + 1 = 3 held.
    assert!(e.report().count(NodeKind::HeldByOther) >= 3, "{e}");
    assert_eq!(e.report().count(NodeKind::Ok), 0, "{e}");
    assert_eq!(e.report().nodes().len(), 5);
    // The loser left nothing behind; the holder's keys are intact.
    assert_eq!(wait_holders(&c, &client.key("r"), held.value(), 5).await, 5);
    // retry_count counts retries: 2 means three attempts.
    let opts = opts(10_000)
        .retry_count(2)
        .retry_delay(Duration::from_millis(5))
        .retry_jitter(Duration::from_millis(5));
    let e = client.acquire_with(["r"], &opts).await.unwrap_err();
    assert_eq!(e.attempts(), 3);
    // One report per attempt, each of its own round; the last is the final report.
    assert_eq!(e.attempt_reports().len(), 3);
    for r in e.attempt_reports() {
        assert_eq!(r.nodes().len(), 5);
        assert!(r.count(NodeKind::HeldByOther) >= 3, "{r}");
    }
    assert_eq!(
        e.attempt_reports().last().map(ToString::to_string),
        Some(e.report().to_string())
    );
    held.release().await.unwrap();
    lock_and_release(&client, "r").await;
}

#[tokio::test]
async fn rule5_partial_keys_are_cleaned_after_a_failed_attempt() {
    let c = cluster(5);
    let client = client(&c).await;
    let key = client.key("partial");
    for i in 0..3 {
        set_foreign(&c, i, &key, 30_000);
    }
    let opts = opts(10_000)
        .retry_count(2)
        .retry_delay(Duration::from_millis(5))
        .retry_jitter(Duration::ZERO);
    let e = client.acquire_with(["partial"], &opts).await.unwrap_err();
    assert!(e.is_busy(), "{e}");
    assert_eq!(e.attempts(), 3);
    // Nodes 3 and 4 voted for in every attempt; no key of any attempt remains there.
    assert_eq!(present(&c, &key), 3, "{e}");
    for i in 0..3 {
        assert_eq!(get(&c, i, &key).unwrap(), b"someone-else");
    }
}

#[tokio::test]
async fn multi_resource_is_all_or_nothing() {
    let c = cluster(3);
    let client = client(&c).await;
    // Duplicates and order do not matter.
    let lock = client.acquire(["b", "a", "b"]).await.unwrap();
    assert_eq!(lock.resources(), &[b"a".to_vec(), b"b".to_vec()]);
    assert_eq!(wait_holders(&c, &client.key("a"), lock.value(), 3).await, 3);
    assert_eq!(wait_holders(&c, &client.key("b"), lock.value(), 3).await, 3);
    // A set and a single lock on one of its members exclude each other.
    assert!(client.acquire(["a"]).await.unwrap_err().is_busy());
    assert!(client.acquire(["c", "b"]).await.unwrap_err().is_busy());
    assert_eq!(
        present(&c, &client.key("c")),
        0,
        "no member of a failed set remains"
    );
    // Extend covers every key.
    lock.extend(Duration::from_secs(15)).await.unwrap();
    // One key gone on one node: release reports Partial there.
    del(&c, 0, &client.key("a"));
    let report = lock.release().await.unwrap();
    assert_eq!(report.nodes()[0].kind, NodeKind::Partial);
    assert_eq!(report.released_count(), 2, "{report}");
    assert_eq!(
        present(&c, &client.key("a")) + present(&c, &client.key("b")),
        0
    );
}

#[tokio::test]
async fn rule12_minority_of_dead_nodes_still_acquires() {
    let mut c = cluster(5);
    let client = client(&c).await;
    c.kill(0);
    c.kill(1);
    let lock = client.acquire(["dead"]).await.unwrap();
    let r = lock.report();
    // A dead node failed, or had not answered yet when the live nodes made the quorum (its
    // broken connection can be found after their replies, on a loaded machine).
    let failed_or_undecided = |k: NodeKind| k.is_error() || k == NodeKind::Pending;
    assert!(
        failed_or_undecided(r.nodes()[0].kind) && failed_or_undecided(r.nodes()[1].kind),
        "{r}"
    );
    assert!(r.count(NodeKind::Ok) >= 3);
    lock.release().await.unwrap();
}

#[tokio::test]
async fn majority_of_dead_nodes_is_quorum_not_reached() {
    let mut c = cluster(5);
    let client = client(&c).await;
    for i in 0..3 {
        c.kill(i);
    }
    let e = client.acquire(["dead"]).await.unwrap_err();
    assert!(e.is_quorum_not_reached(), "{e}");
    for n in &e.report().nodes()[0..3] {
        assert!(
            matches!(
                n.kind,
                NodeKind::ConnectionRefused | NodeKind::ConnectionLost | NodeKind::NotConnected
            ),
            "{n:?}"
        );
    }
    let key = client.key("dead");
    for i in 3..5 {
        assert_eq!(get(&c, i, &key), None, "cleanup reached the live node {i}");
    }
    // Refused nodes answer at once, before the live ones: every request must still be
    // written before the round is decided, or a SET lands after its cleanup (rule 5).
    let retrying = opts(10_000)
        .retry_count(2)
        .retry_delay(Duration::from_millis(5));
    for _ in 0..5 {
        let e = client.acquire_with(["dead"], &retrying).await.unwrap_err();
        assert_eq!(e.attempts(), 3);
        assert_eq!(e.report().count(NodeKind::HeldByOther), 0, "{e}");
        tokio::time::sleep(Duration::from_millis(20)).await;
        for i in 3..5 {
            assert_eq!(get(&c, i, &key), None, "no key left on live node {i}");
        }
    }
}

/// An attempt decided by refusals while two nodes are still silent waits for their answers
/// (as long again as the round took): a late refusal gets no cleanup script, a late write
/// does (REDLOCK.md §3.2). Every node is paused; the refusing ones resume after 300 ms, the
/// other two 20 ms later.
#[tokio::test]
async fn rule5_silent_nodes_are_cleaned_only_if_they_wrote() {
    let c = cluster(5);
    let client = client(&c).await;
    let key = client.key("silent");
    let slow = opts(10_000).node_timeout(Duration::from_secs(3));
    for (foreign, written) in [(5, false), (3, true)] {
        for i in 0..foreign {
            set_foreign(&c, i, &key, 30_000);
        }
        let scripts = |i| calls(&c, i, &["evalsha", "eval"]);
        let before = [scripts(3), scripts(4)];
        for i in 0..5 {
            c.pause(i).unwrap();
        }
        let resume = async {
            tokio::time::sleep(Duration::from_millis(300)).await;
            for i in 0..3 {
                c.resume(i).unwrap();
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
            for i in 3..5 {
                c.resume(i).unwrap();
            }
        };
        let (result, ()) = tokio::join!(client.acquire_with(["silent"], &slow), resume);
        let e = result.unwrap_err();
        assert!(e.is_busy(), "{e}");
        for (n, i) in [3, 4].into_iter().enumerate() {
            assert_eq!(
                get(&c, i, &key).as_deref(),
                (foreign == 5).then_some(&b"someone-else"[..]),
                "node {i}"
            );
            // A script may count twice: EVALSHA, then EVAL on a node that had not loaded it.
            assert_eq!(
                scripts(i) > before[n],
                written,
                "node {i}: a cleanup script where the late SET wrote, none where it was refused"
            );
        }
        for i in 0..5 {
            del(&c, i, &key);
        }
    }
}

#[tokio::test]
async fn rule5_requests_are_written_before_refused_nodes_decide_the_round() {
    // Refused nodes answer at once; the live ones come first and last in node order, so
    // whichever order requests are polled in, a live node's request must be written before
    // the round is decided, or its SET lands after the cleanup and leaves a key behind.
    let mut c = cluster(5);
    let client = client(&c).await;
    for i in 1..4 {
        c.kill(i);
    }
    let key = client.key("order");
    let retrying = opts(10_000)
        .retry_count(2)
        .retry_delay(Duration::from_millis(5));
    for _ in 0..5 {
        let e = client.acquire_with(["order"], &retrying).await.unwrap_err();
        assert!(e.is_quorum_not_reached(), "{e}");
        assert_eq!(e.report().count(NodeKind::HeldByOther), 0, "{e}");
        tokio::time::sleep(Duration::from_millis(20)).await;
        for i in [0, 4] {
            assert_eq!(get(&c, i, &key), None, "no key left on live node {i}");
        }
    }
}

#[tokio::test]
async fn rule13_paused_minority_costs_one_node_timeout_at_most() {
    let c = cluster(5);
    let client = client(&c).await;
    c.pause(3).unwrap();
    c.pause(4).unwrap();
    let t0 = quorumlock::MonoTime::now();
    let lock = client.acquire(["paused"]).await.unwrap();
    let took = quorumlock::MonoTime::now() - t0;
    // Decided at the quorum: the frozen nodes are never awaited.
    assert!(took < Duration::from_millis(500), "took {took:?}");
    for i in [3, 4] {
        assert!(matches!(
            lock.report().nodes()[i].kind,
            NodeKind::Pending | NodeKind::Timeout
        ));
    }
    lock.release().await.unwrap();
    c.resume(3).unwrap();
    c.resume(4).unwrap();
}

#[tokio::test]
async fn rule4_no_lock_when_the_attempt_outlived_the_ttl() {
    let c = cluster(3);
    let client = client(&c).await;
    c.debug_sleep(1, 1.5).unwrap();
    c.debug_sleep(2, 1.5).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    let opts = opts(1_000)
        .node_timeout(Duration::from_secs(3))
        .min_validity(Duration::ZERO);
    let e = client.acquire_with(["slow"], &opts).await.unwrap_err();
    assert!(e.is_validity_too_short(), "{e}");
    let v = e.validity_us().unwrap();
    assert!(v < 0, "validity {v}");
    assert_eq!(e.validity(), None);
    // The failed attempt's keys were released everywhere.
    assert_eq!(present(&c, &client.key("slow")), 0);
}

#[tokio::test]
async fn rule17_cancelled_acquire_leaves_no_key() {
    let c = cluster(3);
    let client = client(&c).await;
    c.debug_sleep(1, 0.6).unwrap();
    c.debug_sleep(2, 0.6).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    let opts = opts(10_000).node_timeout(Duration::from_secs(2));
    let fut = client.acquire_with(["cancel"], &opts);
    let r = tokio::time::timeout(Duration::from_millis(150), fut).await;
    assert!(
        r.is_err(),
        "the acquire should still be waiting on the sleeping nodes"
    );
    let key = client.key("cancel");
    // The cleanup is queued behind the sleeping nodes' SETs and runs after them.
    tokio::time::sleep(Duration::from_millis(900)).await;
    assert_eq!(present(&c, &key), 0);
}

#[tokio::test]
async fn rule8_release_of_expired_or_taken_locks() {
    let c = cluster(3);
    let client = client(&c).await;
    let lock = client.acquire_with(["exp"], &opts(300)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(400)).await;
    let report = lock.release().await.unwrap();
    assert_eq!(report.count(NodeKind::NotHeld), 3, "{report}");
    assert!(!report.was_held_by_quorum());

    let lock = client.acquire_with(["taken"], &opts(300)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(400)).await;
    let other = client.acquire(["taken"]).await.unwrap();
    let report = lock.release().await.unwrap();
    assert_eq!(report.count(NodeKind::HeldByOther), 3, "{report}");
    assert_eq!(
        wait_holders(&c, &client.key("taken"), other.value(), 3).await,
        3,
        "the new holder's keys remain"
    );
    other.release().await.unwrap();
}

#[tokio::test]
async fn release_by_value_and_drop_release() {
    let c = cluster(3);
    let client = client(&c).await;
    let lock = client.acquire(["byvalue"]).await.unwrap();
    let value = lock.value().to_owned();
    let report = client.release_value(["byvalue"], &value).await.unwrap();
    assert_eq!(report.released_count(), 3, "{report}");
    drop(lock);
    // A lock dropped while held is released in the background.
    let lock = client.acquire(["dropped"]).await.unwrap();
    drop(lock);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(present(&c, &client.key("dropped")), 0);
}

#[tokio::test]
async fn script_flush_falls_back_to_eval() {
    let c = cluster(3);
    let client = client(&c).await;
    let lock = client.acquire(["x", "y"]).await.unwrap();
    for i in 0..3 {
        c.script_flush(i).unwrap();
    }
    lock.extend(Duration::from_secs(10)).await.unwrap();
    for i in 0..3 {
        c.script_flush(i).unwrap();
    }
    assert_eq!(lock.release().await.unwrap().released_count(), 3);
}

#[tokio::test]
async fn wrong_password_is_reported_as_auth_without_leaking_it() {
    let c = cluster(3);
    for i in 0..3 {
        c.command(i, &[b"CONFIG", b"SET", b"requirepass", b"right-pass"])
            .unwrap();
    }
    let urls: Vec<String> = (0..3)
        .map(|i| format!("redis://:wr0ng-s3cret@{}", c.addr(i)))
        .collect();
    let client = quorumlock::Client::builder()
        .nodes(urls.clone())
        .lock_options(opts(10_000))
        .connect()
        .await
        .unwrap();
    let e = client.acquire(["auth"]).await.unwrap_err();
    assert!(e.is_quorum_not_reached(), "{e}");
    assert!(e.report().count(NodeKind::Auth) >= 2, "{e}");
    assert_eq!(e.report().count(NodeKind::Ok), 0, "{e}");
    let e = quorumlock::Client::builder()
        .nodes(urls)
        .require_quorum(true)
        .connect()
        .await
        .unwrap_err();
    assert!(e.is_auth(), "{e}");
    for text in [e.to_string(), format!("{e:?}")] {
        assert!(!text.contains("wr0ng-s3cret"), "{text}");
    }
    // The right password works.
    let urls: Vec<String> = (0..3)
        .map(|i| format!("redis://:right-pass@{}", c.addr(i)))
        .collect();
    let client = quorumlock::Client::connect(urls).await.unwrap();
    lock_and_release(&client, "auth").await;
}

#[tokio::test]
async fn unreachable_nodes_with_require_quorum_is_a_connection_error() {
    let mut c = cluster(3);
    let urls = c.urls();
    for i in 0..3 {
        c.kill(i);
    }
    let e = quorumlock::Client::builder()
        .nodes(urls)
        .connect_timeout(Duration::from_millis(300))
        .require_quorum(true)
        .connect()
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
    assert_eq!(e.report().nodes().len(), 3);
}

#[tokio::test]
async fn node_restart_reconnects() {
    let mut c = cluster(3);
    let client = client(&c).await;
    lock_and_release(&client, "r1").await;
    c.kill(0);
    c.restart(0, Persist::Always).unwrap();
    // The first request after the restart may see the broken connection; a later one works.
    let mut ok = false;
    for _ in 0..50 {
        if let Ok(lock) = client.acquire(["r2"]).await {
            let r = lock.release().await.unwrap();
            if r.released_count() == 3 {
                ok = true;
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(ok, "node 0 never rejoined");
}
