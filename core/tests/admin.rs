//! Cancellation handles and the administration calls (ping, inspect, force_break).
// Test helpers outside #[test] functions panic on failure by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::*;
use quorumlock::{CancelToken, ErrorKind, NodeKind};

#[tokio::test]
async fn rule17_cancel_token_abandons_the_attempt_and_cleans_up() {
    let c = cluster(3);
    let client = client(&c).await;
    c.debug_sleep(1, 0.6).unwrap();
    c.debug_sleep(2, 0.6).unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    let token = CancelToken::new();
    let canceller = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        canceller.cancel();
    });
    let opts = opts(10_000).node_timeout(Duration::from_secs(2));
    let e = client
        .acquire_cancellable(["tok"], &opts, &token)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Cancelled, "{e}");
    // The call returned after its cleanup ran: nothing is left, without waiting.
    assert_eq!(present(&c, &client.key("tok")), 0);
    // A token cancelled before the call sends nothing.
    let e = client
        .acquire_cancellable(["tok2"], &opts, &token)
        .await
        .unwrap_err();
    assert!(e.is_cancelled());
    assert!(e.report().nodes().is_empty());
    // A token that is never cancelled does not get in the way.
    let lock = client
        .acquire_cancellable(["tok3"], &opts, &CancelToken::new())
        .await
        .unwrap();
    lock.release().await.unwrap();
}

#[test]
fn blocking_ping_and_inspect() {
    let c = cluster(3);
    let client = quorumlock::blocking::Client::connect(c.urls()).unwrap();
    let infos = client.ping().unwrap();
    assert_eq!(infos.len(), 3);
    let lock = client.acquire(["bp"]).unwrap();
    let seen = client.inspect("bp").unwrap();
    assert_eq!(seen.holder(), Some(lock.value()), "{seen:?}");
    lock.release().unwrap();
    assert_eq!(client.inspect("bp").unwrap().holder(), None);
}

#[test]
fn blocking_acquire_cancelled_from_another_thread() {
    let c = cluster(3);
    let client = quorumlock::blocking::Client::connect(c.urls()).unwrap();
    let held = client.acquire_with(["bt"], &opts(10_000)).unwrap();
    let token = CancelToken::new();
    let canceller = token.clone();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(150));
        canceller.cancel();
    });
    let waiting = opts(10_000)
        .retry_forever()
        .retry_delay(Duration::from_millis(20));
    let e = client
        .acquire_cancellable(["bt"], &waiting, &token)
        .unwrap_err();
    t.join().unwrap();
    assert!(e.is_cancelled(), "{e}");
    let key = client.as_async().key("bt");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    assert_eq!(rt.block_on(wait_holders(&c, &key, held.value(), 3)), 3);
    held.release().unwrap();
}

#[tokio::test]
async fn ping_reports_settings_and_warnings() {
    let mut c = cluster(3);
    let client = client(&c).await;
    let infos = client.ping().await.unwrap();
    assert_eq!(infos.len(), 3);
    for i in &infos {
        assert_eq!(i.kind, Some(NodeKind::Ok));
        assert!(i.durable(), "the harness starts durable nodes: {i:?}");
        assert_eq!(i.role.as_deref(), Some("master"));
        assert_eq!(i.maxmemory_policy.as_deref(), Some("noeviction"));
        assert!(i.version.is_some() && i.uptime.is_some() && i.latency.is_some());
        assert!(i.warnings.is_empty(), "{:?}", i.warnings);
    }
    c.command(0, &[b"CONFIG", b"SET", b"maxmemory", b"100mb"])
        .unwrap();
    c.command(
        0,
        &[b"CONFIG", b"SET", b"maxmemory-policy", b"volatile-ttl"],
    )
    .unwrap();
    c.command(1, &[b"CONFIG", b"SET", b"appendfsync", b"everysec"])
        .unwrap();
    let infos = client.ping().await.unwrap();
    assert!(
        infos[0].warnings.iter().any(|w| w.contains("volatile-ttl")),
        "{:?}",
        infos[0]
    );
    assert!(!infos[1].durable());
    assert!(infos[1].warnings.iter().any(|w| w.contains("not durable")));
    c.kill(1);
    c.kill(2);
    let e = client.ping().await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
    assert_eq!(e.report().nodes().len(), 3);
}

#[tokio::test]
async fn inspect_and_force_break() {
    let c = cluster(3);
    let client = client(&c).await;
    let empty = client.inspect("ins").await.unwrap();
    assert_eq!(empty.holder(), None);
    let lock = client.acquire(["ins"]).await.unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    let seen = client.inspect("ins").await.unwrap();
    assert_eq!(seen.holder(), Some(lock.value()));
    for n in &seen.nodes {
        assert_eq!(n.kind, NodeKind::Ok);
        assert!(n.ttl.unwrap() > Duration::from_secs(9));
    }
    let report = client.force_break("ins").await.unwrap();
    assert_eq!(report.count(NodeKind::Released), 3, "{report}");
    assert_eq!(present(&c, &client.key("ins")), 0);
    assert_eq!(
        client
            .force_break("ins")
            .await
            .unwrap()
            .count(NodeKind::NotHeld),
        3
    );
    assert!(client.inspect("").await.unwrap_err().is_invalid_argument());
    assert!(
        client
            .force_break("")
            .await
            .unwrap_err()
            .is_invalid_argument()
    );
    // The holder learns of it on its next extend.
    assert!(
        lock.extend(Duration::from_secs(10))
            .await
            .unwrap_err()
            .is_lost()
    );
}
