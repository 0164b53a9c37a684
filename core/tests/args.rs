//! Bad arguments for every public function give `InvalidArgument` with a clear message,
//! never a panic, and nothing is sent.
// Test helpers outside #[test] functions panic on failure by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::*;
use quorumlock::{Client, ErrorKind, LockOptions};

fn invalid<T: std::fmt::Debug>(r: quorumlock::Result<T>, needle: &str) {
    let e = r.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert!(
        e.to_string().contains(needle),
        "{e} should mention {needle:?}"
    );
    assert!(
        e.report().nodes().is_empty(),
        "nothing is sent for bad arguments"
    );
}

#[tokio::test]
async fn bad_client_configuration() {
    invalid(
        Client::connect(Vec::<String>::new()).await,
        "at least one node",
    );
    invalid(Client::connect([""]).await, "must start with");
    invalid(
        Client::connect(["http://127.0.0.1:1"]).await,
        "must start with",
    );
    invalid(
        Client::connect(["redis://127.0.0.1:notaport"]).await,
        "invalid node URL",
    );
    invalid(Client::connect(["redis://[::1"]).await, "invalid node URL");
    // One server listed twice is no error: it counts once (probe.rs tests the warning).
    let twice = Client::connect(["redis://127.0.0.1:7001", "redis://127.0.0.1:7001/1"]).await;
    assert_eq!(twice.unwrap().node_count(), 1);
    let b = || Client::builder().node("redis://127.0.0.1:7001");
    invalid(b().drift_factor(f64::NAN).connect().await, "drift_factor");
    invalid(b().drift_factor(-0.1).connect().await, "drift_factor");
    invalid(b().max_ttl(Duration::ZERO).connect().await, "max_ttl");
    invalid(
        b().connect_timeout(Duration::ZERO).connect().await,
        "connect_timeout",
    );
    invalid(
        b().lock_options(LockOptions::default().ttl(Duration::ZERO))
            .connect()
            .await,
        "ttl",
    );
}

#[tokio::test]
async fn bad_acquire_arguments() {
    let c = cluster(1);
    let client = client(&c).await;
    let o = opts(1_000);
    invalid(
        client.acquire_with(Vec::<&str>::new(), &o).await,
        "at least one resource",
    );
    invalid(client.acquire_with([""], &o).await, "must not be empty");
    invalid(
        client.acquire_with([vec![b'x'; 1025]], &o).await,
        "at most 1024",
    );
    invalid(
        client
            .acquire_with(["r"], &o.clone().ttl(Duration::ZERO))
            .await,
        "ttl must be at least 1 ms",
    );
    invalid(
        client
            .acquire_with(["r"], &o.clone().ttl(Duration::from_micros(1_500)))
            .await,
        "milliseconds",
    );
    invalid(
        client
            .acquire_with(["r"], &o.clone().ttl(Duration::from_secs(61)))
            .await,
        "max_ttl",
    );
    invalid(
        client
            .acquire_with(["r"], &o.clone().ttl(Duration::from_secs(u64::MAX)))
            .await,
        "max_ttl",
    );
    invalid(
        client
            .acquire_with(["r"], &o.clone().ttl(Duration::from_millis(2)))
            .await,
        "no validity",
    );
    invalid(
        client
            .acquire_with(["r"], &o.clone().min_validity(Duration::from_secs(1)))
            .await,
        "no validity",
    );
    invalid(
        client
            .acquire_with(["r"], &o.clone().node_timeout(Duration::ZERO))
            .await,
        "node_timeout",
    );
    invalid(
        client
            .acquire_with(
                ["r"],
                &o.clone().auto_extend(true).extend_interval(Duration::ZERO),
            )
            .await,
        "extend_interval",
    );
    // Arbitrary bytes are fine as resource names.
    client
        .acquire_with([vec![0u8, 0xff, b'{']], &o)
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
    assert_eq!(present(&c, &client.key([0u8, 0xff, b'{'])), 0);
}

#[tokio::test]
async fn bad_extend_and_release_arguments() {
    let c = cluster(1);
    let client = client(&c).await;
    let lock = client.acquire(["r"]).await.unwrap();
    invalid(
        lock.extend(Duration::ZERO).await,
        "ttl must be at least 1 ms",
    );
    invalid(lock.extend(Duration::from_secs(120)).await, "max_ttl");
    assert!(lock.is_held(), "a refused extend leaves the lock alone");
    let fenced_given = opts(1_000).fenced(true).value("6f1c9a52-0d3e-4b8e-9a77");
    invalid(
        client.acquire_with(["r"], &fenced_given).await,
        "fresh value",
    );
    invalid(client.release_value(["r"], "short").await, "16 printable");
    invalid(
        client.release_value(["r"], &"z ".repeat(20)).await,
        "16 printable",
    );
    invalid(
        client
            .release_value(["r"], "caf\u{e9}-caf\u{e9}-caf\u{e9}-caf\u{e9}")
            .await,
        "ASCII",
    );
    invalid(
        client.release_value(Vec::<&str>::new(), lock.value()).await,
        "at least one resource",
    );
    lock.release().await.unwrap();
    invalid(lock.extend(Duration::from_secs(1)).await, "released");
}

#[test]
fn blocking_api_works_and_refuses_runtime_threads() {
    let c = cluster(3);
    let client = quorumlock::blocking::Client::connect(c.urls()).unwrap();
    let lock = client.acquire_with(["b"], &opts(5_000)).unwrap();
    assert!(lock.remaining() > Duration::from_secs(4));
    lock.extend(Duration::from_secs(5)).unwrap();
    let report = lock.release().unwrap();
    assert_eq!(report.released_count(), 3, "{report}");
    invalid(
        client.acquire_with(["b"], &opts(0)),
        "ttl must be at least 1 ms",
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        invalid(client.acquire(["b"]), "async runtime thread");
        invalid(
            quorumlock::blocking::Client::connect(c.urls()),
            "async runtime thread",
        );
    });
}

#[test]
fn defaults_match_the_specification_table() {
    // REDLOCK.md §11: a client with no options.
    let o = LockOptions::default();
    assert_eq!(o.get_ttl(), Duration::from_secs(10));
    assert_eq!(o.get_retry_count(), 3);
    assert_eq!(o.get_retry_delay(), Duration::from_millis(100));
    assert_eq!(o.get_retry_jitter(), Duration::from_millis(200));
    assert_eq!(o.get_wait(), None);
    assert!(!o.get_auto_extend());
    assert_eq!(o.get_max_extensions(), None);
    assert_eq!(o.get_max_hold(), None);
    let ttl = Duration::from_secs(10);
    assert_eq!(o.effective_min_validity(ttl), Duration::from_secs(1));
    assert_eq!(o.effective_node_timeout(ttl), Duration::from_millis(50));
    assert_eq!(o.effective_extend_interval(ttl), ttl / 3);
    assert_eq!(quorumlock::DEFAULT_MAX_TTL, Duration::from_secs(60));
    assert_eq!(quorumlock::DEFAULT_DRIFT_FACTOR, 0.01);
    assert_eq!(quorumlock::DEFAULT_DRIFT_CONSTANT, Duration::from_millis(2));
    assert_eq!(quorumlock::DEFAULT_CONNECT_TIMEOUT, Duration::from_secs(1));
    assert_eq!(quorumlock::DEFAULT_KEY_PREFIX, "quorumlock:");
    assert_eq!(quorumlock::VALUE_BYTES, 20);
}

#[tokio::test]
async fn wait_budget_bounds_the_call() {
    let c = cluster(3);
    let client = client(&c).await;
    let held = client.acquire(["w"]).await.unwrap();
    let o = opts(10_000)
        .retry_forever()
        .retry_delay(Duration::from_millis(50))
        .retry_jitter(Duration::ZERO)
        .wait(Duration::from_millis(300));
    let t0 = quorumlock::MonoTime::now();
    let e = client.acquire_with(["w"], &o).await.unwrap_err();
    let took = quorumlock::MonoTime::now() - t0;
    assert!(e.is_busy());
    assert!(
        e.attempts() >= 3 && e.attempts() <= 8,
        "attempts {}",
        e.attempts()
    );
    assert!(took < Duration::from_millis(600), "took {took:?}");
    held.release().await.unwrap();
}

/// Every public future is `Send`, so bindings can run them on any runtime thread.
#[allow(dead_code)]
fn public_futures_are_send(c: Client, l: quorumlock::Lock, t: quorumlock::CancelToken) {
    fn send<T: Send>(_: T) {}
    let o = LockOptions::default();
    send(Client::builder().connect());
    send(c.acquire_with(["r"], &o));
    send(c.acquire_cancellable(["r"], &o, &t));
    send(c.release_value(["r"], "v"));
    send(c.ping());
    send(c.inspect("r"));
    send(c.force_break("r"));
    send(l.extend(Duration::from_secs(1)));
    send(l.release());
    send(l.lost_signal().wait());
}

#[tokio::test]
async fn bare_keys_share_names_with_other_libraries() {
    let c = cluster(1);
    let client = Client::builder()
        .nodes(c.urls())
        .key_prefix("")
        .key_format(quorumlock::KeyFormat::Bare)
        .lock_options(opts(5_000))
        .connect()
        .await
        .unwrap();
    assert_eq!(client.key("orders"), b"orders".to_vec());
    let lock = client.acquire(["orders"]).await.unwrap();
    assert_eq!(get(&c, 0, b"orders").unwrap(), lock.value().as_bytes());
    lock.release().await.unwrap();
    let braced = client_with_prefix(&c, "app:").await;
    assert_eq!(braced.key("orders"), b"app:{orders}".to_vec());
}

async fn client_with_prefix(c: &Cluster, prefix: &str) -> Client {
    Client::builder()
        .nodes(c.urls())
        .key_prefix(prefix)
        .connect()
        .await
        .unwrap()
}
