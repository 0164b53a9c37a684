//! Automatic extensions sent in batches (REDLOCK.md §5.3): many locks of one client share
//! their requests, and each lock still gets its own answer (held, gone, taken).
// Test helpers outside #[test] functions panic on failure by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::*;
use futures_util::future::join_all;
use quorumlock::LostReason;

#[tokio::test]
async fn many_auto_extended_locks_share_their_requests() {
    let c = cluster(5);
    let client = client(&c).await;
    let opts = opts(900).auto_extend(true);
    let names: Vec<String> = (0..200).map(|i| format!("many-{i}")).collect();
    let locks = acquire_each(&client, &names, &opts).await;
    let scripts = || calls(&c, 0, &["evalsha", "eval"]);
    let before = scripts();
    // Every 300 ms each lock comes due: about six extensions each.
    tokio::time::sleep(Duration::from_millis(2_000)).await;
    let sent = scripts() - before;
    let extensions: u32 = locks.iter().map(|l| l.extensions()).sum();
    for (name, lock) in names.iter().zip(&locks) {
        assert!(
            lock.is_held(),
            "{name} lost: {:?}",
            lock.lost_signal().get()
        );
        assert!(
            lock.extensions() >= 3,
            "{name}: {} extensions",
            lock.extensions()
        );
    }
    // One request per lock and extension without batches; the locks came due within a few
    // milliseconds of each other, so batches of many locks.
    assert!(
        sent * 4 < i64::from(extensions),
        "{sent} script calls on node 0 for {extensions} extensions"
    );
    for (name, lock) in names.iter().zip(&locks) {
        lock.release().await.unwrap();
        assert_eq!(present(&c, &client.key(name)), 0, "{name}");
    }
}

#[tokio::test]
async fn each_lock_of_a_batch_gets_its_own_answer() {
    let c = cluster(5);
    let client = client(&c).await;
    let opts = opts(600).auto_extend(true);
    let sets: [&[&str]; 4] = [&["kept"], &["gone"], &["taken"], &["pair-a", "pair-b"]];
    let locks = join_all(sets.iter().map(|s| client.acquire_with(s.iter(), &opts))).await;
    let [kept, gone, taken, pair] = <[_; 4]>::try_from(locks).ok().unwrap();
    let (kept, gone, taken, pair) = (kept.unwrap(), gone.unwrap(), taken.unwrap(), pair.unwrap());
    for i in 0..3 {
        del(&c, i, &client.key("gone"));
        del(&c, i, &client.key("taken"));
        set_foreign(&c, i, &client.key("taken"), 10_000);
    }
    let (mut gone_signal, mut taken_signal) = (gone.lost_signal(), taken.lost_signal());
    let bound = Duration::from_secs(2);
    let e = tokio::time::timeout(bound, gone_signal.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(e.lost_reason(), Some(LostReason::Expired), "{e}");
    let e = tokio::time::timeout(bound, taken_signal.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(e.lost_reason(), Some(LostReason::Taken), "{e}");
    // The other owner's keys are left alone, and nothing re-created the deleted ones.
    for i in 0..3 {
        assert_eq!(
            get(&c, i, &client.key("taken")).as_deref(),
            Some(&b"someone-else"[..])
        );
    }
    tokio::time::sleep(Duration::from_millis(700)).await;
    for lock in [&kept, &pair] {
        assert!(lock.is_held(), "{:?}", lock.lost_signal().get());
        assert!(lock.extensions() >= 2, "{} extensions", lock.extensions());
    }
    // A lost lock is released in the background: none of its keys is left or re-created.
    assert_eq!(present(&c, &client.key("gone")), 0);
    assert_eq!(holders(&c, &client.key("kept"), kept.value()), 5);
    for name in ["pair-a", "pair-b"] {
        assert_eq!(holders(&c, &client.key(name), pair.value()), 5);
    }
    for lock in [kept, pair] {
        lock.release().await.unwrap();
    }
}
