//! Hostile nodes (TESTING.md §3.6): real `redis-server` nodes next to servers that answer with
//! malformed RESP, sizes they never send, wrong types, endless replies, silence, replies to
//! requests never sent, or a closed socket. The engine must answer with typed errors and
//! per-node detail, within its deadlines, without a panic (in any task) and with bounded
//! memory.
// Test helpers outside #[test] functions panic on failure by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Once;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::*;
use quorumlock::{Client, ErrorKind, LockOptions, MonoTime, NodeKind, Quarantine};
use quorumlock_harness::{HostileServer, Hostility, Scope};

const TTL: Duration = Duration::from_secs(3);
const NODE: Duration = Duration::from_millis(250);
const RETRIES: u32 = 2;
const DELAY: Duration = Duration::from_millis(40);
const JITTER: Duration = Duration::from_millis(20);
const CONNECT: Duration = Duration::from_millis(400);

fn opts() -> LockOptions {
    LockOptions::default()
        .ttl(TTL)
        .node_timeout(NODE)
        .retry_count(RETRIES)
        .retry_delay(DELAY)
        .retry_jitter(JITTER)
}

/// How long an acquire may take (REDLOCK.md §3.2): every attempt is bounded by its round
/// (twice, with fencing phase 2) and the cleanup, plus the retry waits; one second of slack
/// for a loaded machine.
fn acquire_bound() -> Duration {
    let attempts = RETRIES + 1;
    NODE * 3 * attempts + (DELAY + JITTER) * RETRIES + Duration::from_secs(1)
}

/// Panics anywhere in the process (engine tasks included) are counted, not only in the
/// test's own thread.
static PANICS: AtomicUsize = AtomicUsize::new(0);

/// The tests of this file run one at a time: the memory tests read the process's RSS.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn count_panics() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICS.fetch_add(1, Ordering::SeqCst);
            previous(info);
        }));
    });
}

/// Every hostile behaviour the engine must survive, by name.
fn cases() -> Vec<(&'static str, Hostility, Scope)> {
    use Hostility::*;
    let r = |b: &[u8]| Reply(b.to_vec());
    let lock = Scope::Lock;
    vec![
        ("garbage", r(b"?garbage\r\n"), lock),
        ("bulk-length-not-a-number", r(b"$abc\r\n"), lock),
        ("bulk-longer-than-said", r(b"$3\r\nabcdef\r\n"), lock),
        ("bulk-2147483647-never-sent", r(b"$2147483647\r\n"), lock),
        ("bulk-i64-max", r(b"$9223372036854775807\r\n"), lock),
        ("array-2147483647", r(b"*2147483647\r\n"), lock),
        ("map-2^30", r(b"%1073741823\r\n"), lock),
        ("set-2^31", r(b"~2147483647\r\n"), lock),
        ("push-2^31", r(b">2147483647\r\n"), lock),
        (
            "nesting-500-deep",
            Reply([&b"*1\r\n".repeat(500)[..], b":1\r\n"].concat()),
            lock,
        ),
        ("array-for-status", r(b"*1\r\n+OK\r\n"), lock),
        ("integer-for-bulk", r(b":42\r\n"), lock),
        ("integer-overflow", r(b":99999999999999999999\r\n"), lock),
        ("negative-integer", r(b":-9223372036854775808\r\n"), lock),
        ("nil-bulk", r(b"$-1\r\n"), lock),
        ("odd-negative-length", r(b"$-7\r\n"), lock),
        ("resp3-map", r(b"%1\r\n+a\r\n+b\r\n"), lock),
        ("resp3-double", r(b",nan\r\n"), lock),
        ("resp3-bool", r(b"#t\r\n"), lock),
        ("resp3-verbatim", r(b"=7\r\ntxt:abc\r\n"), lock),
        (
            "resp3-bignum",
            r(b"(123456789012345678901234567890\r\n"),
            lock,
        ),
        ("resp3-null", r(b"_\r\n"), lock),
        ("resp3-attribute", r(b"|1\r\n+a\r\n+b\r\n:1\r\n"), lock),
        ("resp3-push-as-reply", r(b">2\r\n+message\r\n+x\r\n"), lock),
        ("status-invalid-utf8", r(b"+\xff\xfe\r\n"), lock),
        ("error-invalid-utf8", r(b"-ERR \xff\xfe\r\n"), lock),
        ("error-empty", r(b"-\r\n"), lock),
        ("error-noscript-always", r(b"-NOSCRIPT never\r\n"), lock),
        ("error-loading", r(b"-LOADING busy\r\n"), lock),
        ("error-moved", r(b"-MOVED 1 127.0.0.1:1\r\n"), lock),
        ("error-wrongpass", r(b"-WRONGPASS no\r\n"), lock),
        (
            "endless-bulk",
            Trickle {
                prefix: b"$2147483647\r\n".to_vec(),
                chunk: vec![b'x'; 64],
                gap: Duration::from_millis(5),
            },
            lock,
        ),
        (
            "endless-line",
            Trickle {
                prefix: b"+".to_vec(),
                chunk: vec![b'a'; 64],
                gap: Duration::from_millis(5),
            },
            lock,
        ),
        ("silent", Silent, lock),
        (
            "unsolicited-before-request",
            Unsolicited(b"+OK\r\n:1\r\n*3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$1\r\nm\r\n".to_vec()),
            lock,
        ),
        ("two-replies-per-request", Double(b"+OK\r\n".to_vec()), lock),
        ("two-replies-int", Double(b":1\r\n".to_vec()), lock),
        ("half-reply-then-close", Close(b"$10\r\nabc".to_vec()), lock),
        ("close-at-request", Close(Vec::new()), lock),
        // The connection set-up and the probe get the same treatment: no usable connection.
        ("setup-garbage", r(b"?garbage\r\n"), Scope::All),
        ("setup-bulk-2147483647", r(b"$2147483647\r\n"), Scope::All),
        ("setup-integer-for-info", r(b":1\r\n"), Scope::All),
        (
            "setup-array-for-info",
            r(b"*2\r\n$1\r\na\r\n$1\r\nb\r\n"),
            Scope::All,
        ),
        ("setup-silent", Silent, Scope::All),
        (
            "setup-endless",
            Trickle {
                prefix: b"$2147483647\r\n".to_vec(),
                chunk: vec![b'x'; 64],
                gap: Duration::from_millis(5),
            },
            Scope::All,
        ),
        (
            "setup-unsolicited",
            Unsolicited(b"$5\r\nhello\r\n".to_vec()),
            Scope::All,
        ),
        (
            "setup-double",
            Double(b"-ERR extra\r\n".to_vec()),
            Scope::All,
        ),
        ("setup-close", Close(b"+O".to_vec()), Scope::All),
    ]
}

/// Hostile behaviours that answer lock traffic like an honest node (`+OK` to `SET`): they may
/// vote, as any lying node could; every other one must never count as a vote.
fn may_vote(h: &Hostility) -> bool {
    matches!(h, Hostility::Unsolicited(_) | Hostility::Double(_))
}

async fn connect(urls: Vec<String>) -> Client {
    Client::builder()
        .nodes(urls)
        .connect_timeout(CONNECT)
        .quarantine(Quarantine::Off)
        .lock_options(opts())
        .connect()
        .await
        .expect("connect without require_quorum never fails on node errors")
}

/// What one case found, for the summary table.
struct Outcome {
    name: &'static str,
    majority: String,
    minority: String,
    hostile_kinds: Vec<NodeKind>,
    slowest: Duration,
}

/// One case: 3 real nodes and 2 hostile ones (the real ones make the quorum: the acquire must
/// succeed), then 2 real nodes and 3 hostile ones (a typed failure unless the hostile nodes
/// vote like honest ones). Every call stays within its bound.
async fn run_case(
    name: &'static str,
    hostility: Hostility,
    scope: Scope,
    real: Vec<String>,
) -> Outcome {
    let h: Vec<HostileServer> = (0..3)
        .map(|_| HostileServer::start(hostility.clone(), scope).expect("hostile server"))
        .collect();
    let resource = format!("hostile:{name}");
    let mut slowest = Duration::ZERO;
    let mut hostile_kinds = Vec::new();

    // Majority of real nodes: the lock is taken, hostile nodes show up in the report.
    let majority = connect(vec![
        real[0].clone(),
        h[0].url(),
        real[1].clone(),
        h[1].url(),
        real[2].clone(),
    ])
    .await;
    let t = MonoTime::now();
    let got = majority.acquire([&resource]).await;
    let took = MonoTime::now() - t;
    slowest = slowest.max(took);
    assert!(took < acquire_bound(), "{name}: acquire took {took:?}");
    let lock = got.unwrap_or_else(|e| panic!("{name}: 3 of 5 real nodes, yet {e}"));
    for i in [1, 3] {
        let n = &lock.report().nodes()[i];
        hostile_kinds.push(n.kind);
        if !may_vote(&hostility) {
            assert_ne!(n.kind, NodeKind::Ok, "{name}: a hostile node voted: {n:?}");
            assert!(
                n.detail.as_deref().is_some_and(|d| !d.is_empty())
                    || matches!(
                        n.kind,
                        NodeKind::Timeout | NodeKind::Pending | NodeKind::HeldByOther
                    ),
                "{name}: no detail for {n:?}"
            );
        }
    }
    let t = MonoTime::now();
    let extended = lock.extend(TTL).await;
    slowest = slowest.max(MonoTime::now() - t);
    assert!(
        (MonoTime::now() - t) < NODE * 2 + Duration::from_secs(1),
        "{name}: extend took {:?}",
        (MonoTime::now() - t)
    );
    extended.unwrap_or_else(|e| panic!("{name}: extend on 3 real nodes failed: {e}"));
    let t = MonoTime::now();
    let report = lock.release().await;
    slowest = slowest.max(MonoTime::now() - t);
    assert!(
        (MonoTime::now() - t) < NODE * 2 + Duration::from_secs(1),
        "{name}: release took {:?}",
        (MonoTime::now() - t)
    );
    let report = report.unwrap_or_else(|e| panic!("{name}: release: {e}"));
    for i in [0, 2, 4] {
        assert_eq!(
            report.nodes()[i].kind,
            NodeKind::Released,
            "{name}: {report:?}"
        );
    }
    if !may_vote(&hostility) {
        assert_eq!(report.released_count(), 3, "{name}: {report:?}");
    }
    let t = MonoTime::now();
    let ping = majority.ping().await;
    slowest = slowest.max(MonoTime::now() - t);
    // `Client::ping` is bounded by 2 s per node, in parallel.
    assert!(
        (MonoTime::now() - t) < Duration::from_secs(3),
        "{name}: ping took {:?}",
        (MonoTime::now() - t)
    );
    drop(ping);

    // Majority of hostile nodes: a typed failure with per-node detail.
    let minority = connect(vec![
        h[2].url(),
        real[0].clone(),
        real[1].clone(),
        h[0].url(),
        h[1].url(),
    ])
    .await;
    let t = MonoTime::now();
    let got = minority.acquire([&resource]).await;
    let took = MonoTime::now() - t;
    slowest = slowest.max(took);
    assert!(took < acquire_bound(), "{name}: acquire took {took:?}");
    let minority_text = match got {
        Ok(lock) => {
            assert!(
                may_vote(&hostility),
                "{name}: a quorum of hostile nodes granted a lock: {:?}",
                lock.report()
            );
            let _ = lock.release().await;
            "granted (hostile nodes voted)".to_owned()
        }
        Err(e) => {
            assert!(
                matches!(
                    e.kind(),
                    ErrorKind::Busy | ErrorKind::QuorumNotReached | ErrorKind::ValidityTooShort
                ),
                "{name}: {e}"
            );
            let nodes = e.report().nodes();
            assert_eq!(nodes.len(), 5, "{name}: {e}");
            for i in [0, 3, 4] {
                let n = &nodes[i];
                assert!(n.kind != NodeKind::Ok, "{name}: {n:?}");
                hostile_kinds.push(n.kind);
            }
            format!("{}", e.kind())
        }
    };
    Outcome {
        name,
        majority: "granted".to_owned(),
        minority: minority_text,
        hostile_kinds,
        slowest,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_nodes_get_typed_errors_within_deadlines() {
    let _serial = SERIAL.lock().await;
    count_panics();
    let c = cluster(3);
    let real = c.urls();
    let mut set = tokio::task::JoinSet::new();
    // Twelve cases at a time: each holds two clients and three servers.
    let mut outcomes = Vec::new();
    let mut pending = cases().into_iter();
    loop {
        while set.len() < 12 {
            let Some((name, h, scope)) = pending.next() else {
                break;
            };
            set.spawn(run_case(name, h, scope, real.clone()));
        }
        match set.join_next().await {
            Some(r) => outcomes.push(r.expect("case task")),
            None => break,
        }
    }
    outcomes.sort_by_key(|o| o.name);
    eprintln!(
        "{:<30} {:<8} {:<32} {:>9}  hostile nodes' kinds",
        "case", "3 real", "2 real", "slowest"
    );
    for o in &outcomes {
        let mut kinds: Vec<&str> = o.hostile_kinds.iter().map(|k| k.as_str()).collect();
        kinds.dedup();
        eprintln!(
            "{:<30} {:<8} {:<32} {:>7}ms  {}",
            o.name,
            o.majority,
            o.minority,
            o.slowest.as_millis(),
            kinds.join(",")
        );
    }
    assert_eq!(outcomes.len(), cases().len());
    assert_eq!(
        PANICS.load(Ordering::SeqCst),
        0,
        "a panic in the engine (see stderr)"
    );
}

/// Resident memory of this process, in KiB.
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}

/// Rounds of acquire + release by 4 tasks on one client over 5 real nodes and 7 hostile ones
/// (quorum 7 of 12: the real ones and the liar of `Double`... or a typed failure). Returns the
/// RSS (KiB) after the warm-up, after `batches` and the hostile servers' stats; with `pause`,
/// waits out the engine's 30 s bounds (request drains, echo check) before the last batch.
async fn memory_rounds(
    warm: usize,
    batches: &[usize],
    pause: Option<Duration>,
) -> (u64, Vec<u64>, Vec<quorumlock_harness::HostileStats>) {
    count_panics();
    let c = cluster(5);
    let lock = Scope::Lock;
    let hostile: Vec<HostileServer> = [
        (Hostility::Silent, lock),
        (Hostility::Reply(b"$2147483647\r\n".to_vec()), lock),
        (Hostility::Reply(b"*2147483647\r\n".to_vec()), lock),
        (Hostility::Reply(b"?garbage\r\n".to_vec()), lock),
        (Hostility::Close(b"$10\r\nabc".to_vec()), lock),
        (Hostility::Double(b"+OK\r\n".to_vec()), lock),
        (Hostility::Silent, Scope::All),
    ]
    .into_iter()
    .map(|(h, s)| HostileServer::start(h, s).expect("hostile server"))
    .collect();
    let mut urls = c.urls();
    urls.extend(hostile.iter().map(HostileServer::url));
    let client = Client::builder()
        .nodes(urls)
        .connect_timeout(CONNECT)
        .quarantine(Quarantine::Off)
        .lock_options(
            opts()
                .node_timeout(Duration::from_millis(30))
                .retry_count(0),
        )
        .connect()
        .await
        .expect("connect");
    let client = std::sync::Arc::new(client);
    let rounds = |n: usize| {
        let client = client.clone();
        async move {
            let mut tasks = tokio::task::JoinSet::new();
            for t in 0..4 {
                let client = client.clone();
                tasks.spawn(async move {
                    for i in 0..n {
                        let r = format!("mem:{t}:{}", i % 8);
                        let started = MonoTime::now();
                        match client.acquire([&r]).await {
                            Ok(lock) => {
                                lock.release().await.expect("release on 5 real nodes");
                            }
                            // q = 7 needs both real nodes and a liar: a slow real node makes
                            // the round fail, with a typed error.
                            Err(e) => assert!(
                                matches!(
                                    e.kind(),
                                    ErrorKind::QuorumNotReached | ErrorKind::ValidityTooShort
                                ),
                                "{e}"
                            ),
                        }
                        let took = MonoTime::now() - started;
                        assert!(took < Duration::from_secs(2), "{took:?}");
                    }
                });
            }
            while let Some(r) = tasks.join_next().await {
                r.expect("round task");
            }
        }
    };
    rounds(warm).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let before = rss_kib();
    let mut after = Vec::new();
    for (k, n) in batches.iter().enumerate() {
        if k + 1 == batches.len()
            && let Some(p) = pause
        {
            tokio::time::sleep(p).await;
        }
        rounds(*n).await;
        after.push(rss_kib());
    }
    let stats = hostile.iter().map(HostileServer::stats).collect();
    assert_eq!(
        PANICS.load(Ordering::SeqCst),
        0,
        "a panic in the engine (see stderr)"
    );
    (before, after, stats)
}

/// Many rounds with hostile nodes: memory grows by at most the requests still held within the
/// engine's 30 s bounds (drains of unanswered requests), a few KiB per round here.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_stays_bounded_over_many_rounds_with_hostile_nodes() {
    let _serial = SERIAL.lock().await;
    let (before, after, stats) = memory_rounds(20, &[30, 30], None).await;
    let last = *after.last().expect("batches");
    eprintln!(
        "240 rounds: RSS {before} KiB -> {after:?} KiB ({:+} KiB); hostile servers: {stats:?}",
        i128::from(last) - i128::from(before)
    );
    assert!(
        last < before + 16 * 1024,
        "RSS grew by {} KiB over 240 rounds",
        last.saturating_sub(before)
    );
    assert!(stats.iter().all(|s| s.accepted > 0), "{stats:?}");
}

/// After the engine's 30 s bounds, the memory of unanswered requests is given back: the
/// drains end, and a node that answers nothing loses its connection (its queued requests
/// freed) and is reconnected. About 70 s: `make test-hostile-long`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "70 s: make test-hostile-long"]
async fn memory_of_unanswered_requests_is_freed_after_the_bounds() {
    let _serial = SERIAL.lock().await;
    let (before, after, stats) =
        memory_rounds(20, &[60, 60, 60, 60], Some(Duration::from_secs(35))).await;
    eprintln!("RSS {before} KiB -> {after:?} KiB; hostile servers: {stats:?}");
    let grown_before_pause = after[2].saturating_sub(before);
    let grown_after_pause = after[3].saturating_sub(after[2]);
    assert!(
        grown_after_pause * 4 < grown_before_pause.max(1024),
        "the last batch (after the bounds) grew by {grown_after_pause} KiB, the first three by {grown_before_pause} KiB"
    );
    assert!(
        stats[0].accepted >= 2,
        "the silent node's connection was never replaced: {stats:?}"
    );
}
