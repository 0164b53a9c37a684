//! A Redis Cluster as one quorum member (`redis+cluster://`): keys route by slot, a
//! multi-resource lock spans slots all-or-nothing, extend, fencing and release work per slot,
//! redirections after a failover are followed, and the quarantine applies per primary.
// Test helpers outside #[test] functions panic on failure by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use futures_util::future::join_all;

use common::*;
use quorumlock::{Client, ClientBuilder, KeyFormat, NodeKind, Quarantine, Report, WarningKind};

/// Resources whose braced keys land in different slots (and, with 3 masters, mostly on
/// different primaries).
const SPREAD: [&str; 4] = ["alpha", "bravo", "charlie", "delta"];

fn redis_cluster(replicas: usize, persist: Persist) -> Cluster {
    Cluster::builder()
        .nodes(3 * (1 + replicas))
        .persist(persist)
        .redis_cluster(replicas)
        .start()
        .expect("start a Redis Cluster")
}

fn builder(members: Vec<String>) -> ClientBuilder {
    Client::builder().nodes(members).lock_options(opts(10_000))
}

/// The reply of the primary that serves `key` (the others answer MOVED).
fn on_owner(c: &Cluster, args: &[&[u8]]) -> Reply {
    for i in c.masters().unwrap() {
        let r = c.command(i, args).unwrap();
        if !matches!(&r, Reply::Error(e) if e.starts_with("MOVED")) {
            return r;
        }
    }
    panic!("no primary serves {:?}", String::from_utf8_lossy(args[1]));
}

fn cluster_get(c: &Cluster, key: &[u8]) -> Option<Vec<u8>> {
    match on_owner(c, &[b"GET", key]) {
        Reply::Bulk(v) => Some(v),
        _ => None,
    }
}

fn released_everywhere(r: &Report) -> bool {
    r.nodes().iter().all(|n| n.kind == NodeKind::Released)
}

#[tokio::test]
async fn a_cluster_is_one_member_beside_single_masters() {
    let singles = cluster(2);
    let rc = redis_cluster(0, Persist::Always);
    let mut members = singles.urls();
    members.push(rc.cluster_url().unwrap());
    let client = builder(members)
        .require_quorum(true)
        .connect()
        .await
        .unwrap();
    assert_eq!(client.node_count(), 3);
    assert!(format!("{client:?}").contains("cluster(127.0.0.1:"));
    let lock = client.acquire(SPREAD).await.unwrap();
    // Every resource's key sits on the primary of its slot, with our value (polled: the
    // round was decided at the quorum, the cluster's requests may still be on their way).
    let value = lock.value().as_bytes().to_vec();
    let all_ours = || {
        SPREAD
            .iter()
            .all(|r| cluster_get(&rc, &client.key(r)).as_deref() == Some(&value[..]))
    };
    assert!(eventually(all_ours).await, "keys on the cluster");
    lock.extend(Duration::from_secs(20)).await.unwrap();
    let extended = || {
        let pttl = on_owner(&rc, &[b"PTTL", &client.key("delta")]).as_int();
        pttl.is_some_and(|ms| ms > 10_000)
    };
    assert!(eventually(extended).await, "extended on the cluster");
    let report = lock.release().await.unwrap();
    assert!(released_everywhere(&report), "{report}");
    for r in SPREAD {
        assert_eq!(cluster_get(&rc, &client.key(r)), None, "{r}");
    }
}

#[tokio::test]
async fn a_cluster_member_votes_all_or_nothing_across_slots() {
    let rc = redis_cluster(0, Persist::Always);
    let client = builder(vec![rc.cluster_url().unwrap()])
        .connect()
        .await
        .unwrap();
    let held = client.key("charlie");
    assert!(
        !on_owner(&rc, &[b"SET", &held, b"someone-else", b"PX", b"10000"]).is_error(),
        "foreign key set"
    );
    let e = client.acquire(SPREAD).await.unwrap_err();
    assert!(e.is_busy(), "{e}");
    // Nothing of the failed attempt stays on any slot; the foreign key is intact.
    for r in SPREAD.iter().filter(|r| **r != "charlie") {
        assert_eq!(cluster_get(&rc, &client.key(r)), None, "{r} left behind");
    }
    assert_eq!(
        cluster_get(&rc, &held).as_deref(),
        Some(&b"someone-else"[..])
    );
    on_owner(&rc, &[b"DEL", &held]);
    lock_and_release(&client, "charlie").await;
}

#[tokio::test]
async fn fenced_locks_across_slots_get_increasing_tokens() {
    let rc = redis_cluster(0, Persist::Always);
    let client = builder(vec![rc.cluster_url().unwrap()])
        .connect()
        .await
        .unwrap();
    let fenced = opts(10_000).fenced(true);
    let first = client.acquire_with(SPREAD, &fenced).await.unwrap();
    let t1 = first.tokens().unwrap().to_vec();
    assert_eq!(t1.len(), SPREAD.len());
    first.release().await.unwrap();
    let second = client.acquire_with(SPREAD, &fenced).await.unwrap();
    for (a, b) in t1.iter().zip(second.tokens().unwrap()) {
        assert!(b > a, "{t1:?} then {:?}", second.tokens());
    }
    second.release().await.unwrap();
}

/// A client of `rc` alone with bare keys, so that hash tags in resource names decide the
/// slots.
async fn bare_client(rc: &Cluster) -> Client {
    builder(vec![rc.cluster_url().unwrap()])
        .key_format(KeyFormat::Bare)
        .connect()
        .await
        .unwrap()
}

/// The primary that serves `key`.
fn owner(c: &Cluster, key: &[u8]) -> usize {
    c.masters()
        .unwrap()
        .into_iter()
        .find(|&i| !matches!(c.command(i, &[b"GET", key]).unwrap(), Reply::Error(e) if e.starts_with("MOVED")))
        .expect("a primary serves the key")
}

#[tokio::test]
async fn automatic_extensions_batch_per_slot_on_a_cluster_member() {
    let rc = redis_cluster(0, Persist::Always);
    let client = bare_client(&rc).await;
    let opts = opts(600).auto_extend(true);
    // Three locks of one slot (one request), a lock of another slot, and a lock across slots
    // (sent on its own), acquired together so that they come due together.
    let sets: [&[&str]; 5] = [
        &["{s}a"],
        &["{s}b"],
        &["{s}c"],
        &["{t}d"],
        &["{u}e", "{v}f"],
    ];
    let locks = join_all(
        sets.iter()
            .map(|set| client.acquire_with(set.iter(), &opts)),
    )
    .await;
    let locks: Vec<_> = locks.into_iter().map(Result::unwrap).collect();
    // The middle lock of the slot's group loses its key: it alone is lost.
    let mut lost = locks[1].lost_signal();
    on_owner(&rc, &[b"DEL", &client.key("{s}b")]);
    let e = tokio::time::timeout(Duration::from_secs(2), lost.wait())
        .await
        .unwrap();
    assert!(e.is_some_and(|e| e.is_lost()));
    tokio::time::sleep(Duration::from_millis(600)).await;
    for (set, lock) in sets.iter().zip(&locks).filter(|(set, _)| set[0] != "{s}b") {
        assert!(lock.is_held(), "{set:?}: {:?}", lock.lost_signal().get());
        assert!(
            lock.extensions() >= 2,
            "{set:?}: {} extensions",
            lock.extensions()
        );
        for r in *set {
            let value = lock.value().as_bytes();
            assert_eq!(
                cluster_get(&rc, &client.key(r)).as_deref(),
                Some(value),
                "{r}"
            );
        }
    }
    for lock in locks {
        lock.release().await.unwrap();
    }
}

#[tokio::test]
async fn a_stopped_primary_holds_up_only_the_locks_in_its_slots() {
    let rc = redis_cluster(0, Persist::Always);
    let client = bare_client(&rc).await;
    let opts = opts(1_500).auto_extend(true);
    let names: Vec<String> = (0..12).map(|i| format!("{{r{i}}}")).collect();
    let owners: Vec<usize> = names.iter().map(|n| owner(&rc, &client.key(n))).collect();
    let locks = acquire_each(&client, &names, &opts).await;
    let stopped = owners[0];
    assert!(
        owners.iter().any(|&o| o != stopped),
        "locks on other primaries"
    );
    rc.pause(stopped).unwrap();
    // Past the ttl: the locks of the other primaries were extended all along, in batches
    // whose requests to the stopped primary never came back.
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    for ((name, lock), _) in names
        .iter()
        .zip(&locks)
        .zip(&owners)
        .filter(|(_, o)| **o != stopped)
    {
        assert!(lock.is_held(), "{name}: {:?}", lock.lost_signal().get());
    }
    rc.resume(stopped).unwrap();
    for lock in locks {
        let _ = lock.release().await;
    }
}

#[tokio::test]
async fn redirections_after_a_failover_are_followed() {
    let rc = redis_cluster(1, Persist::Always);
    let client = builder(vec![rc.cluster_url().unwrap()])
        .connect()
        .await
        .unwrap();
    let lock = client.acquire(["failover"]).await.unwrap();
    let key = client.key("failover");
    // Promote the replica of the key's primary: the old primary answers MOVED from now on.
    let owner = rc
        .masters()
        .unwrap()
        .into_iter()
        .find(|&i| rc.command(i, &[b"GET", &key]).unwrap().as_bytes().is_some())
        .unwrap();
    rc.command(owner, &[b"WAIT", b"1", b"2000"]).unwrap();
    let replica = (0..rc.len())
        .find(|&i| {
            let role = rc.command(i, &[b"INFO", b"replication"]).unwrap();
            let port = format!("master_port:{}", rc.addr(owner).port());
            role.as_bytes()
                .is_some_and(|t| String::from_utf8_lossy(t).contains(&port))
        })
        .expect("a replica of the owner");
    assert!(
        !rc.command(replica, &[b"CLUSTER", b"FAILOVER"])
            .unwrap()
            .is_error()
    );
    for _ in 0..200 {
        if rc.masters().unwrap().contains(&replica) && !rc.masters().unwrap().contains(&owner) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(rc.masters().unwrap().contains(&replica), "failover done");
    let report = lock.release().await.unwrap();
    assert!(released_everywhere(&report), "{report}");
    lock_and_release(&client, "failover").await;
}

#[tokio::test]
async fn the_quarantine_and_its_warning_apply_per_primary() {
    let rc = redis_cluster(0, Persist::None);
    let url = rc.cluster_url().unwrap();
    let client = builder(vec![url.clone()]).connect().await.unwrap();
    let e = client.acquire(["q"]).await.unwrap_err();
    let node = &e.report().nodes()[0];
    assert_eq!(node.kind, NodeKind::Quarantined, "{e}");
    // Not by uptime: restarts are invisible behind a cluster client, so durable writes it is.
    let detail = node.detail.as_deref().unwrap_or("");
    assert!(detail.contains("write durably"), "{detail}");
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = seen.clone();
    let client = builder(vec![url])
        .quarantine(Quarantine::Off)
        .on_warning(move |w| sink.lock().unwrap().push(w.clone()))
        .connect()
        .await
        .unwrap();
    lock_and_release(&client, "q").await;
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1, "one warning for the member: {seen:?}");
    assert_eq!(seen[0].kind(), WarningKind::NotDurable);
    assert!(
        seen[0].message().contains("on primary 127.0.0.1:"),
        "{}",
        seen[0]
    );
}

#[tokio::test]
async fn a_single_node_of_a_cluster_is_refused_with_the_remedy() {
    let rc = redis_cluster(0, Persist::Always);
    let client = builder(vec![rc.url(0)]).connect().await.unwrap();
    let e = client.acquire(["x"]).await.unwrap_err();
    let node = &e.report().nodes()[0];
    assert_eq!(node.kind, NodeKind::ClusterUnsupported, "{e}");
    assert!(
        node.detail
            .as_deref()
            .unwrap_or("")
            .contains("redis+cluster://"),
        "{e}"
    );
}
