//! Connect-time checks: restart quarantine, eviction policy, replicas, one server listed
//! twice (REDLOCK.md §8).
// Test helpers outside #[test] functions panic on failure by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::*;
use std::sync::{Arc, Mutex};

use quorumlock::{Client, EvictionCheck, NodeKind, Quarantine, Warning, WarningKind};

fn builder(c: &Cluster) -> quorumlock::ClientBuilder {
    Client::builder().nodes(c.urls()).lock_options(opts(1_000))
}

#[tokio::test]
async fn non_durable_nodes_are_quarantined_until_max_ttl_plus_margin() {
    let c = Cluster::builder()
        .nodes(3)
        .persist(Persist::None)
        .start()
        .unwrap();
    let client = builder(&c)
        .max_ttl(Duration::from_secs(2))
        .quarantine_margin(Duration::from_secs(1))
        .connect()
        .await
        .unwrap();
    let e = client.acquire(["q"]).await.unwrap_err();
    assert!(e.is_quorum_not_reached(), "{e}");
    assert!(e.report().count(NodeKind::Quarantined) >= 2, "{e}");
    assert_eq!(
        present(&c, &client.key("q")),
        0,
        "nothing was written to quarantined nodes"
    );
    tokio::time::sleep(Duration::from_millis(3_200)).await;
    let lock = client.acquire(["q"]).await.unwrap();
    lock.release().await.unwrap();
}

#[tokio::test]
async fn quarantine_off_counts_fresh_non_durable_nodes() {
    let c = Cluster::builder()
        .nodes(3)
        .persist(Persist::None)
        .start()
        .unwrap();
    let client = builder(&c)
        .quarantine(Quarantine::Off)
        .connect()
        .await
        .unwrap();
    lock_and_release(&client, "q").await;
}

#[tokio::test]
async fn durable_nodes_serve_at_once_and_a_non_durable_restart_is_quarantined() {
    let mut c = cluster(3);
    let client = builder(&c)
        .max_ttl(Duration::from_secs(30))
        .connect()
        .await
        .unwrap();
    lock_and_release(&client, "r").await;
    c.kill(0);
    c.restart(0, Persist::None).unwrap();
    // The broken connection is noticed by the next request; the reconnect probes the node.
    let mut quarantined = false;
    for _ in 0..40 {
        let lock = client.acquire(["r"]).await.unwrap();
        let kind = lock.report().nodes()[0].kind;
        lock.release().await.unwrap();
        if kind == NodeKind::Quarantined {
            quarantined = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(quarantined, "the restarted node must be quarantined");
    let key = client.key("r2");
    let lock = client.acquire(["r2"]).await.unwrap();
    assert_eq!(
        get(&c, 0, &key),
        None,
        "no lock traffic to the quarantined node"
    );
    lock.release().await.unwrap();
}

#[tokio::test]
async fn eviction_policy_is_refused_or_warned() {
    let c = cluster(3);
    for i in 0..2 {
        c.command(i, &[b"CONFIG", b"SET", b"maxmemory", b"100mb"])
            .unwrap();
        c.command(
            i,
            &[b"CONFIG", b"SET", b"maxmemory-policy", b"volatile-ttl"],
        )
        .unwrap();
    }
    let client = builder(&c).connect().await.unwrap();
    let e = client.acquire(["ev"]).await.unwrap_err();
    assert_eq!(e.report().count(NodeKind::EvictionPolicy), 2, "{e}");
    let e = builder(&c)
        .require_quorum(true)
        .connect()
        .await
        .unwrap_err();
    assert!(e.is_misconfigured(), "{e}");
    let warn = builder(&c)
        .eviction_check(EvictionCheck::Warn)
        .connect()
        .await
        .unwrap();
    warn.acquire(["ev"]).await.unwrap().release().await.unwrap();
}

#[tokio::test]
async fn settings_changed_at_run_time_are_seen_by_the_re_probe() {
    let c = cluster(3);
    let client = builder(&c)
        .reprobe_every(Duration::from_millis(200))
        .connect()
        .await
        .unwrap();
    lock_and_release(&client, "reprobe").await;
    c.command(0, &[b"CONFIG", b"SET", b"maxmemory", b"100mb"])
        .unwrap();
    c.command(0, &[b"CONFIG", b"SET", b"maxmemory-policy", b"allkeys-lru"])
        .unwrap();
    // A request after the period starts the re-probe; later ones see its result.
    let mut refused = 0;
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let lock = client.acquire(["reprobe"]).await.unwrap();
        refused = lock.report().count(NodeKind::EvictionPolicy);
        lock.release().await.unwrap();
        if refused > 0 {
            break;
        }
    }
    assert_eq!(
        refused, 1,
        "node 0 must be excluded once its policy can evict lock keys"
    );
    let e = Client::builder()
        .nodes(c.urls())
        .reprobe_every(Duration::ZERO)
        .connect()
        .await
        .unwrap_err();
    assert!(e.is_invalid_argument(), "{e}");
}

#[tokio::test]
async fn replicas_are_refused_as_read_only() {
    let c = cluster(3);
    let primary = c.addr(0);
    for i in 1..3 {
        let port = primary.port().to_string();
        c.command(i, &[b"REPLICAOF", b"127.0.0.1", port.as_bytes()])
            .unwrap();
    }
    let client = builder(&c).connect().await.unwrap();
    let e = client.acquire(["rep"]).await.unwrap_err();
    assert!(e.report().count(NodeKind::ReadOnly) >= 1, "{e}");
    assert!(e.is_quorum_not_reached());
}

/// A client whose warnings land in a shared list.
fn collecting(
    b: quorumlock::ClientBuilder,
) -> (quorumlock::ClientBuilder, Arc<Mutex<Vec<Warning>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    (
        b.on_warning(move |w| sink.lock().unwrap().push(w.clone())),
        seen,
    )
}

fn kinds(seen: &Mutex<Vec<Warning>>) -> Vec<WarningKind> {
    seen.lock().unwrap().iter().map(Warning::kind).collect()
}

#[tokio::test]
async fn one_server_listed_twice_counts_once_with_a_warning() {
    let c = cluster(2);
    // The same address with another db: one server, dropped at build time.
    let urls = vec![
        format!("{}/0", c.url(0)),
        format!("{}/1", c.url(0)),
        c.url(1),
    ];
    let (b, seen) = collecting(Client::builder().nodes(urls).lock_options(opts(1_000)));
    let client = b.connect().await.unwrap();
    assert_eq!(client.node_count(), 2);
    assert_eq!(kinds(&seen), vec![WarningKind::DuplicateNode]);
    lock_and_release(&client, "dup").await;
    // Another name for the same server: found by run_id, the later entry does not count.
    let alias = c.url(0).replace("127.0.0.1", "localhost");
    let urls = vec![c.url(0), c.url(1), alias];
    let (b, seen) = collecting(Client::builder().nodes(urls).lock_options(opts(1_000)));
    let client = b.connect().await.unwrap();
    let lock = client.acquire(["dup"]).await.unwrap();
    let r = lock.report().clone();
    assert_eq!(r.nodes()[2].kind, NodeKind::Duplicate, "{r}");
    assert_eq!(r.count(NodeKind::Ok), 2, "{r}");
    lock.release().await.unwrap();
    assert!(kinds(&seen).contains(&WarningKind::DuplicateNode));
    assert_eq!(
        kinds(&seen)
            .iter()
            .filter(|k| **k == WarningKind::DuplicateNode)
            .count(),
        1,
        "warned once"
    );
}

#[tokio::test]
async fn quarantine_off_warns_once_per_non_durable_node() {
    let c = Cluster::builder()
        .nodes(3)
        .persist(Persist::None)
        .start()
        .unwrap();
    let (b, seen) = collecting(builder(&c).quarantine(Quarantine::Off));
    let client = b.connect().await.unwrap();
    lock_and_release(&client, "w").await;
    lock_and_release(&client, "w").await;
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3, "{seen:?}");
    for w in &seen {
        assert_eq!(w.kind(), WarningKind::NotDurable);
        assert!(w.message().contains("appendfsync always"), "{w}");
        assert!(w.node().is_some() && w.address().is_some());
    }
    // Durable nodes give no such warning.
    let d = cluster(3);
    let (b, seen) = collecting(builder(&d).quarantine(Quarantine::Off));
    let client = b.connect().await.unwrap();
    lock_and_release(&client, "w").await;
    assert!(kinds(&seen).is_empty());
}

#[tokio::test]
async fn the_quarantine_error_names_its_remedies() {
    let c = Cluster::builder()
        .nodes(3)
        .persist(Persist::None)
        .start()
        .unwrap();
    let client = builder(&c).connect().await.unwrap();
    let e = client.acquire(["q"]).await.unwrap_err();
    let text = e.to_string();
    for remedy in ["appendfsync always", "quarantine off", "restart quarantine"] {
        assert!(text.contains(remedy), "{remedy:?} missing: {text}");
    }
}

/// kill -9 and an immediate restart without persistence: with the quarantine off another
/// client takes the lock while its holder still believes it holds it (the must-fail
/// canary); with the quarantine on it cannot.
async fn restart_scenario(quarantine: Quarantine) -> bool {
    let mut c = cluster(3);
    let holder = builder(&c)
        .max_ttl(Duration::from_secs(5))
        .connect()
        .await
        .unwrap();
    c.kill(2);
    let opts = opts(5_000);
    let lock = holder.acquire_with(["canary"], &opts).await.unwrap();
    c.restart(2, Persist::None).unwrap();
    c.kill(0);
    c.restart(0, Persist::None).unwrap(); // node 0 forgets the holder's key
    let rival = builder(&c)
        .max_ttl(Duration::from_secs(5))
        .quarantine(quarantine)
        .connect()
        .await
        .unwrap();
    let won = rival
        .acquire_with(["canary"], &opts.clone().retry_count(3))
        .await;
    let overlap = match &won {
        Ok(other) => other.acquired_at() < lock.valid_until(),
        Err(e) => {
            assert!(e.report().count(NodeKind::Quarantined) >= 2, "{e}");
            false
        }
    };
    if let Ok(other) = won {
        other.release().await.unwrap();
    }
    overlap
}

#[tokio::test]
async fn immediate_restart_breaks_exclusion_without_quarantine() {
    assert!(
        restart_scenario(Quarantine::Off).await,
        "the canary must see the overlap"
    );
}

#[tokio::test]
async fn quarantine_keeps_exclusion_across_an_immediate_restart() {
    assert!(!restart_scenario(Quarantine::On).await);
}
