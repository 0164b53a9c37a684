//! Extend, auto-extension and the lost signal (REDLOCK.md §5).
// Test helpers outside #[test] functions panic on failure by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::*;
use quorumlock::{ErrorKind, LostReason, NodeKind};

#[tokio::test]
async fn rule6_extend_after_expiry_never_recreates_keys() {
    let c = cluster(3);
    let client = client(&c).await;
    let lock = client.acquire_with(["e"], &opts(300)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(400)).await;
    let e = lock.extend(Duration::from_secs(5)).await.unwrap_err();
    assert!(e.is_lost(), "{e}");
    assert_eq!(e.lost_reason(), Some(LostReason::Expired));
    assert!(
        e.report().nodes().is_empty(),
        "the local deadline check sends nothing"
    );
    assert_eq!(present(&c, &client.key("e")), 0);
    // Lost is terminal.
    assert!(
        lock.extend(Duration::from_secs(5))
            .await
            .unwrap_err()
            .is_lost()
    );
    assert!(lock.lost_signal().get().is_some());
}

#[tokio::test]
async fn rule6_rule8_extend_of_keys_deleted_behind_its_back_reports_lost() {
    let c = cluster(3);
    let client = client(&c).await;
    let lock = client.acquire(["gone"]).await.unwrap();
    let key = client.key("gone");
    for i in 0..3 {
        del(&c, i, &key);
    }
    let e = lock.extend(Duration::from_secs(10)).await.unwrap_err();
    assert!(e.is_lost(), "{e}");
    assert_eq!(e.lost_reason(), Some(LostReason::Expired));
    assert!(e.report().count(NodeKind::NotHeld) >= 2);
    assert_eq!(present(&c, &key), 0, "extend never re-creates a key");
}

#[tokio::test]
async fn extend_of_a_taken_lock_is_lost_taken_and_leaves_the_new_holder_alone() {
    let c = cluster(3);
    let client = client(&c).await;
    let lock = client.acquire(["taken"]).await.unwrap();
    let key = client.key("taken");
    for i in 0..3 {
        del(&c, i, &key);
        set_foreign(&c, i, &key, 30_000);
    }
    let e = lock.extend(Duration::from_secs(10)).await.unwrap_err();
    assert_eq!(e.lost_reason(), Some(LostReason::Taken), "{e}");
    tokio::time::sleep(Duration::from_millis(100)).await;
    for i in 0..3 {
        assert_eq!(get(&c, i, &key).unwrap(), b"someone-else");
    }
}

#[tokio::test]
async fn rule7_failed_extend_keeps_keys_and_deadline() {
    let c = cluster(5);
    let client = client(&c).await;
    let lock = client.acquire(["keep"]).await.unwrap();
    let before = lock.valid_until();
    for i in 0..3 {
        c.pause(i).unwrap();
    }
    let e = lock.extend(Duration::from_secs(30)).await.unwrap_err();
    for i in 0..3 {
        c.resume(i).unwrap();
    }
    assert_eq!(e.kind(), ErrorKind::QuorumNotReached, "{e}");
    assert_eq!(
        lock.valid_until(),
        before,
        "the previous deadline stays in force"
    );
    assert!(lock.is_held());
    let key = client.key("keep");
    assert_eq!(
        wait_holders(&c, &key, lock.value(), 5).await,
        5,
        "nothing was deleted"
    );
    // Extend never shortens a key.
    lock.extend(Duration::from_secs(1)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await; // let every node run the script
    for i in 0..5 {
        let pttl = c.command(i, &[b"PTTL", &key]).unwrap().as_int().unwrap();
        assert!(pttl > 5_000, "node {i} pttl {pttl}");
    }
    lock.release().await.unwrap();
}

#[tokio::test]
async fn auto_extension_holds_for_five_ttls_then_signals_loss() {
    let c = cluster(3);
    let client = client(&c).await;
    let opts = opts(1_000).auto_extend(true);
    let lock = client.acquire_with(["auto"], &opts).await.unwrap();
    let key = client.key("auto");
    tokio::time::sleep(Duration::from_millis(5_000)).await;
    assert!(lock.is_held(), "still held after 5 x ttl");
    assert!(lock.extensions() >= 10, "extensions {}", lock.extensions());
    assert_eq!(wait_holders(&c, &key, lock.value(), 3).await, 3);
    let mut lost = lock.lost_signal();
    assert!(lost.get().is_none());
    for i in 0..3 {
        del(&c, i, &key);
    }
    let e = tokio::time::timeout(Duration::from_millis(1_500), lost.wait())
        .await
        .expect("the lost signal fires within the validity")
        .expect("lost, not released");
    assert!(e.is_lost());
    assert!(!lock.is_held());
    assert_eq!(present(&c, &key), 0);
    // Release after loss still works and reports.
    let report = lock.release().await.unwrap();
    assert_eq!(report.count(NodeKind::NotHeld), 3);
}

#[tokio::test]
async fn auto_extension_retries_after_a_failed_round() {
    let c = cluster(5);
    let client = client(&c).await;
    // Extended every second; a failed round is retried within 100 ms + U(0, 20 ms).
    let opts = opts(3_000).auto_extend(true);
    let lock = client.acquire_with(["retry"], &opts).await.unwrap();
    // The first extension (at 1 s) meets three stopped nodes and fails at its 250 ms node
    // timeout; its retry goes out while they are stopped or just back, and is answered.
    tokio::time::sleep(Duration::from_millis(300)).await;
    for i in 0..3 {
        c.pause(i).unwrap();
    }
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    for i in 0..3 {
        c.resume(i).unwrap();
    }
    assert_eq!(
        lock.extensions(),
        0,
        "the round with three nodes stopped failed"
    );
    // Past the acquisition's validity: only a retry in time kept the lock.
    tokio::time::sleep(Duration::from_millis(1_900)).await;
    assert!(lock.is_held(), "{:?}", lock.lost_signal().get());
    assert!(lock.extensions() >= 1, "extensions {}", lock.extensions());
    lock.release().await.unwrap();
}

#[tokio::test]
async fn rule15_extension_cap_ends_in_loss() {
    let c = cluster(3);
    let client = client(&c).await;
    let opts = opts(600).auto_extend(true).max_extensions(2);
    let lock = client.acquire_with(["cap"], &opts).await.unwrap();
    let mut lost = lock.lost_signal();
    let e = tokio::time::timeout(Duration::from_secs(3), lost.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(e.lost_reason(), Some(LostReason::ExtensionLimit));
    assert_eq!(lock.extensions(), 2);
    assert!(
        lock.extend(Duration::from_secs(1))
            .await
            .unwrap_err()
            .is_lost()
    );
}

#[tokio::test]
async fn rule16_no_extension_after_release() {
    let c = cluster(3);
    let client = client(&c).await;
    let opts = opts(300).auto_extend(true);
    let lock = client.acquire_with(["stop"], &opts).await.unwrap();
    tokio::time::sleep(Duration::from_millis(250)).await;
    lock.release().await.unwrap();
    let calls = |c: &Cluster| -> i64 { (0..3).map(|i| calls(c, i, &["evalsha", "eval"])).sum() };
    let before = calls(&c);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(calls(&c), before, "no script call after release");
    // The lost signal never fires after a successful release; waiting ends with None.
    let mut lost = lock.lost_signal();
    let waited = tokio::time::timeout(Duration::from_millis(200), lost.wait()).await;
    assert!(matches!(waited, Ok(None)), "{waited:?}");
    assert!(lost.get().is_none() && lost.is_released());
}

#[tokio::test]
async fn auto_extension_can_be_started_and_stopped() {
    let c = cluster(3);
    let client = client(&c).await;
    let lock = client.acquire_with(["toggle"], &opts(600)).await.unwrap();
    assert!(!lock.is_auto_extending());
    lock.set_auto_extend(true).unwrap();
    lock.set_auto_extend(true).unwrap(); // idempotent: one watchdog
    assert!(lock.is_auto_extending());
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    assert!(lock.is_held(), "kept alive past its ttl");
    let extensions = lock.extensions();
    assert!((3..=8).contains(&extensions), "extensions {extensions}");
    lock.set_auto_extend(false).unwrap();
    assert!(!lock.is_auto_extending());
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(lock.extensions(), extensions, "no extension after stop");
    let mut lost = lock.lost_signal();
    let e = tokio::time::timeout(Duration::from_secs(2), lost.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(e.lost_reason(), Some(LostReason::Expired));
    assert!(
        lock.set_auto_extend(true)
            .unwrap_err()
            .is_invalid_argument()
    );
}

#[tokio::test]
async fn plain_lock_signals_loss_at_its_deadline() {
    let c = cluster(1);
    let client = client(&c).await;
    let lock = client.acquire_with(["plain"], &opts(300)).await.unwrap();
    let mut lost = lock.lost_signal();
    let t0 = quorumlock::MonoTime::now();
    let e = tokio::time::timeout(Duration::from_secs(2), lost.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(e.lost_reason(), Some(LostReason::Expired));
    assert!(quorumlock::MonoTime::now() >= lock.valid_until());
    assert!(quorumlock::MonoTime::now() - t0 < Duration::from_millis(600));
}

#[tokio::test]
async fn extend_and_release_by_a_given_value() {
    let c = cluster(3);
    let client = client(&c).await;
    // A caller-chosen value (aioredlock's lock_identifier is a UUID) is stored as given.
    let id = "6f1c9a52-0d3e-4b8e-9a77-3c2d1e0f4a5b";
    let lock = client
        .acquire_with(["v"], &opts(2_000).value(id))
        .await
        .unwrap();
    assert_eq!(lock.value(), id);
    assert_eq!(wait_holders(&c, &client.key("v"), id, 3).await, 3);
    // Another process extends by value: keys are lengthened on every node.
    let left = client
        .extend_value(["v"], id, Duration::from_secs(20))
        .await
        .unwrap();
    assert!(left > Duration::from_secs(19), "{left:?}");
    // At the return a quorum has the new TTL; the call returned at the quorum, so the last
    // node's request may still be on its way (a CI run read 1998 ms on node 0 right away).
    let key = client.key("v");
    let pttls = || -> Vec<i64> {
        (0..3)
            .map(|i| c.command(i, &[b"PTTL", &key]).unwrap().as_int().unwrap())
            .collect()
    };
    let extended = || pttls().iter().filter(|&&p| p > 10_000).count();
    assert!(extended() >= 2, "{:?}", pttls());
    assert!(eventually(|| extended() == 3).await, "{:?}", pttls());
    // A wrong value is refused as lost (held by another value) and changes nothing.
    let e = client
        .extend_value(["v"], "someone-else-entirely", Duration::from_secs(30))
        .await
        .unwrap_err();
    assert_eq!(e.lost_reason(), Some(LostReason::Taken), "{e}");
    assert!(
        client
            .release_value(["v"], id)
            .await
            .unwrap()
            .was_held_by_quorum()
    );
    // Gone keys are never re-created by an extend.
    let e = client
        .extend_value(["v"], id, Duration::from_secs(5))
        .await
        .unwrap_err();
    assert_eq!(e.lost_reason(), Some(LostReason::Expired), "{e}");
    assert_eq!(present(&c, &client.key("v")), 0);
    drop(lock);
    let bad = client
        .acquire_with(["v"], &opts(2_000).value("short"))
        .await;
    assert_eq!(bad.unwrap_err().kind(), ErrorKind::InvalidArgument);
}

#[tokio::test]
async fn reports_of_every_attempt_and_of_the_last_extend() {
    let c = cluster(3);
    let client = client(&c).await;
    let key = client.key("reports");
    set_foreign(&c, 0, &key, 300);
    set_foreign(&c, 1, &key, 300);
    let patient = opts(5_000)
        .retry_count(50)
        .retry_delay(Duration::from_millis(50))
        .retry_jitter(Duration::from_millis(10));
    let lock = client.acquire_with(["reports"], &patient).await.unwrap();
    let reports = lock.attempt_reports();
    assert_eq!(reports.len(), lock.attempts() as usize);
    assert!(reports.len() >= 2, "the first attempt met the foreign keys");
    assert!(
        reports[0].count(NodeKind::HeldByOther) >= 1,
        "{}",
        reports[0]
    );
    assert_eq!(reports.last(), Some(lock.report()));
    assert!(lock.extend_report().is_none());
    lock.extend(Duration::from_secs(8)).await.unwrap();
    let r = lock.extend_report().unwrap();
    assert!(r.count(NodeKind::Ok) >= 2, "{r}");
    lock.release().await.unwrap();
}

#[tokio::test]
async fn ttls_up_to_the_max_ttl_limit() {
    let c = cluster(3);
    let huge = Duration::from_millis((1 << 53) / 10);
    let client = quorumlock::Client::builder()
        .nodes(c.urls())
        .max_ttl(quorumlock::MAX_TTL_LIMIT)
        .lock_options(opts(10_000))
        .connect()
        .await
        .unwrap();
    let lock = client
        .acquire_with(["long"], &opts(0).ttl(huge))
        .await
        .unwrap();
    let pttl = c.command(0, &[b"PTTL", &client.key("long")]).unwrap();
    assert!(pttl.as_int().unwrap() > 9_000_000_000_000, "{pttl:?}");
    lock.extend(huge * 3).await.unwrap();
    // Deadlines are nanoseconds on a u64: they saturate at about 584 years.
    assert!(lock.remaining() > Duration::from_secs(100 * 365 * 86_400));
    lock.release().await.unwrap();
    let too_long = quorumlock::Client::builder()
        .nodes(c.urls())
        .max_ttl(quorumlock::MAX_TTL_LIMIT + Duration::from_millis(1))
        .connect()
        .await;
    assert!(too_long.unwrap_err().is_invalid_argument());
}
