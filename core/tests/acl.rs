//! Redis ACL users (docs/SECURITY.md): the minimal rule for a quorumlock user is enough for
//! every operation and denies nothing; a missing permission and a wrong password are typed
//! errors naming the node (and the command); the password never shows in errors, `Debug`
//! output, logs or metrics.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use quorumlock::{Client, ErrorKind, LockOptions, NodeKind, Warning};

const PASSWORD: &str = "Pw-s3cret-7f2e";

/// The minimal rule of docs/SECURITY.md for the default key prefix `quorumlock:`.
const MINIMAL: &[&str] = &[
    "resetkeys",
    "~quorumlock:*",
    "resetchannels",
    "&quorumlock:*",
    "-@all",
    "+set",
    "+exists",
    "+evalsha",
    "+eval",
    "+get",
    "+mget",
    "+del",
    "+pexpire",
    "+pttl",
    "+time",
    "+publish",
    "+subscribe",
    "+unsubscribe",
    "+ping",
    "+info",
    "+config|get",
    "+zadd",
    "+zrange",
    "+zpopmin",
    "+zrem",
    "+hset",
    "+hget",
    "+hdel",
];

/// The sorted-set commands of waiters' lines (REDLOCK.md §9).
const LINES: &[&str] = &["+zadd", "+zrange", "+zpopmin", "+zrem"];

/// The hash commands of waiters' registrations for grants (REDLOCK.md §9).
const GRANTS: &[&str] = &["+hset", "+hget", "+hdel"];

/// Redis 7.2 and later: redis-rs names itself with `CLIENT SETINFO` on connect (it ignores
/// a refusal, but the refusal fills `ACL LOG`).
const SETINFO: &str = "+client|setinfo";

/// The minimal rule without `rule`.
fn minimal_without(rule: &str) -> Vec<&'static str> {
    MINIMAL.iter().copied().filter(|r| *r != rule).collect()
}

/// Creates user `name` with the password and `rules` on every node.
fn set_user(c: &Cluster, name: &str, rules: &[&str]) {
    let pw = format!(">{PASSWORD}");
    for i in 0..c.len() {
        let mut args: Vec<&[u8]> = vec![b"ACL", b"SETUSER", name.as_bytes(), b"reset", b"on"];
        args.push(pw.as_bytes());
        args.extend(rules.iter().map(|r| r.as_bytes()));
        let mut with_setinfo = args.clone();
        with_setinfo.push(SETINFO.as_bytes());
        let mut r = c.command(i, &with_setinfo).unwrap();
        if r.is_error() {
            // Before Redis 7.2 there is no CLIENT SETINFO.
            r = c.command(i, &args).unwrap();
        }
        assert!(!r.is_error(), "{r:?}");
    }
}

fn urls(c: &Cluster, user: &str, password: &str) -> Vec<String> {
    (0..c.len())
        .map(|i| format!("redis://{user}:{password}@{}", c.addr(i)))
        .collect()
}

/// Every entry of `ACL LOG` on every node: each denied command or key.
fn acl_log(c: &Cluster) -> Vec<String> {
    let mut out = Vec::new();
    for i in 0..c.len() {
        if let Reply::Array(entries) = c.command(i, &[b"ACL", b"LOG"]).unwrap() {
            out.extend(entries.iter().map(|e| format!("node {i}: {e:?}")));
        }
    }
    out
}

async fn connect(urls: Vec<String>, warnings: Arc<Mutex<Vec<String>>>) -> Client {
    Client::builder()
        .nodes(urls)
        .lock_options(opts(10_000))
        .on_warning(move |w: &Warning| warnings.lock().unwrap().push(w.to_string()))
        .connect()
        .await
        .expect("connect")
}

/// `waiter` waits for `resource` (retries 3 s apart, so a prompt success is a notice's).
fn wait_for(
    waiter: Client,
    resource: &'static str,
) -> tokio::task::JoinHandle<(quorumlock::Result<quorumlock::Lock>, Client)> {
    let wait = LockOptions::default()
        .ttl(Duration::from_secs(10))
        .node_timeout(NODE_TIMEOUT)
        .retry_delay(Duration::from_secs(3))
        .retry_count(3);
    tokio::spawn(async move {
        let l = waiter.acquire_with([resource], &wait).await;
        (l, waiter)
    })
}

#[tokio::test]
async fn the_minimal_acl_rule_is_enough_for_every_operation() {
    let c = cluster(3);
    set_user(&c, "locker", MINIMAL);
    let warnings = Arc::new(Mutex::new(Vec::new()));
    let client = connect(urls(&c, "locker", PASSWORD), warnings.clone()).await;
    // One key (SET NX), several keys and fencing (scripts), extend, release (PUBLISH).
    let one = client.acquire(["acl:one"]).await.expect("acquire");
    one.extend(Duration::from_secs(10)).await.expect("extend");
    let fenced = client
        .acquire_with(["acl:x", "acl:y"], &opts(10_000).fenced(true))
        .await
        .expect("fenced multi-key acquire");
    assert!(fenced.token().is_some());
    fenced.release().await.unwrap();
    // A waiter subscribes to the release channel and wakes on the release.
    let waiter = connect(urls(&c, "locker", PASSWORD), warnings.clone()).await;
    let task = wait_for(waiter, "acl:one");
    tokio::time::sleep(Duration::from_millis(300)).await;
    one.release().await.unwrap();
    let (won, waiter) = task.await.unwrap();
    let won = won.expect("the waiter gets the lock");
    won.release().await.unwrap();
    assert!(waiter.metrics().wakeups >= 1, "woken by the release notice");
    // A release grants the key to a waiter registered in line (MARK, RELEASE, LEAVE).
    assert_eq!(take_after_release(&client, "acl:grant").await, 1);
    // Administration: ping and inspect (INFO, CONFIG GET, GET, PTTL).
    client.ping().await.expect("ping");
    client.inspect("acl:one").await.expect("inspect");
    assert_eq!(acl_log(&c), Vec::<String>::new(), "denied commands");
    assert_eq!(*warnings.lock().unwrap(), Vec::<String>::new());
}

#[tokio::test]
async fn a_missing_permission_names_the_node_and_the_command() {
    let c = cluster(3);
    set_user(&c, "noset", &minimal_without("+set"));
    let warnings = Arc::new(Mutex::new(Vec::new()));
    let client = connect(urls(&c, "noset", PASSWORD), warnings).await;
    let e = client
        .acquire(["acl:denied"])
        .await
        .expect_err("SET denied");
    assert_eq!(e.kind(), ErrorKind::QuorumNotReached, "{e}");
    let text = e.to_string();
    for i in 0..c.len() {
        assert!(text.contains(&c.addr(i).to_string()), "{text}");
    }
    // The call ends as soon as a quorum is out of reach, so one node may still be pending.
    let node = answered(&e);
    assert_eq!(node.kind, NodeKind::NoPermission, "{}", e.report());
    assert!(
        node.detail.as_deref().unwrap_or("").contains("'set'"),
        "{node:?}"
    );
    println!("missing +set: {e}");
    // Keys outside the pattern: another prefix is refused per key.
    set_user(&c, "locker", MINIMAL);
    let other = Client::builder()
        .nodes(urls(&c, "locker", PASSWORD))
        .key_prefix("other:")
        .lock_options(opts(10_000))
        .connect()
        .await
        .unwrap();
    let e = other
        .acquire(["acl:k"])
        .await
        .expect_err("key outside ~quorumlock:*");
    assert_eq!(answered(&e).kind, NodeKind::NoPermission, "{e}");
    println!("key outside the pattern: {e}");
}

/// `client` holds `resource`, waits for it in another task, and releases it; returns the
/// attempts of the waiter's call (1: the release granted it the key, REDLOCK.md §9).
async fn take_after_release(client: &Client, resource: &'static str) -> u32 {
    let lock = client.acquire([resource]).await.unwrap();
    let task = wait_for(client.clone(), resource);
    tokio::time::sleep(Duration::from_millis(300)).await;
    lock.release().await.unwrap();
    let won = task.await.unwrap().0.expect("the waiter gets the lock");
    let attempts = won.attempts();
    won.release().await.unwrap();
    attempts
}

#[tokio::test]
async fn waiters_win_by_an_attempt_under_the_rule_before_grants() {
    // The rule documented before grants (2026-12-07) has no hash commands: a waiter's
    // registration, the release's look-up and the LEAVE's drop are refused under pcall, and
    // the waiter wins with its second attempt, woken by the release's notice.
    let c = cluster(3);
    let old: Vec<&str> = MINIMAL
        .iter()
        .copied()
        .filter(|r| !GRANTS.contains(r))
        .chain(["+zscore"])
        .collect();
    set_user(&c, "old", &old);
    let warnings = Arc::new(Mutex::new(Vec::new()));
    let client = connect(urls(&c, "old", PASSWORD), warnings.clone()).await;
    assert_eq!(take_after_release(&client, "acl:no-grants").await, 2);
    let refused = refused_to(&c, "old");
    assert!(!refused.is_empty(), "no registration was tried");
    assert!(
        refused.iter().all(|(_, o)| GRANTS.contains(&o.as_str())),
        "{refused:?}"
    );
    assert!(warnings.lock().unwrap().is_empty());
}

#[tokio::test]
async fn releases_work_and_wake_waiters_under_the_rules_before_lines() {
    // The rules documented before waiters' lines (REDLOCK.md §9) have no sorted-set commands
    // (2026-12-06), and before waiter flags no MGET either: a waiter's MARK then marks the
    // flag only, a release publishes to every client while it exists (without MGET: every
    // time), and the waiter still wakes at once. Nothing fails: the refused commands run
    // under pcall. A key pattern that covers the lock keys but not their flags and lines
    // refuses every mark and the first release that declares them (before its script runs);
    // that node then releases without them, publishing every time.
    let c = cluster(3);
    let flags: Vec<&str> = MINIMAL
        .iter()
        .copied()
        .filter(|r| !LINES.contains(r) && !GRANTS.contains(r))
        .collect();
    let oldest: Vec<&str> = flags.iter().copied().filter(|r| *r != "+mget").collect();
    let locks_only: Vec<&str> = MINIMAL
        .iter()
        .map(|r| {
            if *r == "~quorumlock:*" {
                "~quorumlock:{*}"
            } else {
                r
            }
        })
        .collect();
    let keys = [
        "+quorumlock:{acl:keys}:w",
        "+quorumlock:{acl:keys}:q",
        "+quorumlock:{acl:keys}:g",
    ];
    let lines_and_grants: Vec<&str> = LINES.iter().chain(GRANTS).copied().collect();
    let all: Vec<&str> = lines_and_grants.iter().copied().chain(["+mget"]).collect();
    for (user, rule, refused) in [
        ("flags", &flags, &lines_and_grants[..]),
        ("oldest", &oldest, &all[..]),
        ("keys", &locks_only, &keys[..]),
    ] {
        set_user(&c, user, rule);
        let warnings = Arc::new(Mutex::new(Vec::new()));
        let holder = connect(urls(&c, user, PASSWORD), warnings.clone()).await;
        let waiter = connect(urls(&c, user, PASSWORD), warnings.clone()).await;
        let resource: &'static str = match user {
            "flags" => "acl:flags",
            "keys" => "acl:keys",
            _ => "acl:oldest",
        };
        let lock = holder.acquire([resource]).await.unwrap();
        let task = wait_for(waiter, resource);
        tokio::time::sleep(Duration::from_millis(300)).await;
        let queue = [holder.key(resource).as_slice(), b":q"].concat();
        for i in 0..c.len() {
            let exists = c.command(i, &[b"EXISTS", &queue]).unwrap();
            assert_eq!(exists, Reply::Int(0), "{user}, node {i}: no line");
        }
        let released_at = quorumlock::MonoTime::now();
        let report = lock.release().await.unwrap();
        assert_eq!(report.count(NodeKind::Released), 3, "{report}");
        let (won, waiter) = task.await.unwrap();
        let won = won.expect("the waiter gets the lock");
        let gap = quorumlock::MonoTime::now().saturating_since(released_at);
        assert!(
            gap < Duration::from_millis(1_500),
            "{user}: woken after {gap:?}"
        );
        assert!(
            waiter.metrics().wakeups >= 1,
            "{user}: woken by the release notice"
        );
        // (The waiter may have won on a quorum only: woken by two notices, it can reach the
        // third node before the holder's release there.)
        let report = won.release().await.unwrap();
        assert!(report.was_held_by_quorum(), "{report}");
        let again = holder.acquire([format!("{resource}:again")]).await.unwrap();
        let report = again.release().await.unwrap();
        assert_eq!(report.count(NodeKind::Released), 3, "{report}");
        assert!(warnings.lock().unwrap().is_empty());
        // What the rule refused: the lines' commands (and MGET) only.
        for (i, object) in refused_to(&c, user) {
            assert!(
                refused.contains(&object.as_str()),
                "{user}, node {i}: {object}"
            );
        }
    }
}

/// What `ACL LOG` says user `user` was refused, by node: `+<command>` or `+<key>`.
fn refused_to(c: &Cluster, user: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for i in 0..c.len() {
        let Reply::Array(entries) = c.command(i, &[b"ACL", b"LOG"]).unwrap() else {
            panic!()
        };
        for e in &entries {
            let Reply::Array(fields) = e else { panic!() };
            let at = |name: &[u8]| {
                let at = fields.iter().position(|f| f.as_bytes() == Some(name));
                String::from_utf8_lossy(fields[at.unwrap() + 1].as_bytes().unwrap()).into_owned()
            };
            if at(b"username") == user {
                out.push((i, format!("+{}", at(b"object"))));
            }
        }
    }
    out
}

/// The first node that answered before the call ended (a failed call returns once a quorum
/// is out of reach, before the slowest node's reply), after checking that enough nodes
/// answered to rule a quorum out and that they all answered alike.
fn answered(e: &quorumlock::Error) -> &quorumlock::NodeResult {
    let nodes = e.report().nodes();
    let done: Vec<_> = nodes
        .iter()
        .filter(|n| n.kind != NodeKind::Pending)
        .collect();
    // N - quorum + 1 refusals put the quorum out of reach.
    assert!(
        done.len() >= nodes.len() - nodes.len() / 2,
        "{}",
        e.report()
    );
    assert!(
        done.iter().all(|n| n.kind == done[0].kind),
        "{}",
        e.report()
    );
    done[0]
}

/// A `tracing` writer into a shared buffer.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn a_wrong_password_is_an_auth_error_and_secrets_never_show() {
    let c = cluster(3);
    set_user(&c, "locker", MINIMAL);
    // Everything the engine logs on this (current-thread) runtime, at every level.
    let logs = Captured::default();
    let sink = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer(move || sink.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let wrong = "Wr0ng-pw-91c4";
    let e = Client::builder()
        .nodes(urls(&c, "locker", wrong))
        .require_quorum(true)
        .connect()
        .await
        .expect_err("wrong password");
    assert_eq!(e.kind(), ErrorKind::Auth, "{e}");
    assert_eq!(e.report().nodes()[0].kind, NodeKind::Auth, "{e}");
    assert!(e.to_string().contains(&c.addr(0).to_string()), "{e}");
    println!("wrong password: {e}");
    let mut seen = format!("{e}\n{e:?}\n");

    // A working client: its Debug output, errors, reports, metrics.
    let warnings = Arc::new(Mutex::new(Vec::new()));
    let client = connect(urls(&c, "locker", PASSWORD), warnings.clone()).await;
    let lock = client.acquire(["secret:a"]).await.unwrap();
    let busy = client.acquire(["secret:a"]).await.unwrap_err();
    let report = lock.release().await.unwrap();
    let pings = client.ping().await.unwrap();
    seen += &format!("{client:?}\n{lock:?}\n{busy}\n{busy:?}\n{report}\n{report:?}\n{pings:?}\n");
    seen += &client.metrics().to_prometheus();
    seen += &format!("{:?}\n", client.metrics());
    seen += &format!("{:?}\n", warnings.lock().unwrap());
    // A password in a malformed URL.
    let bad = format!("redis://locker:{PASSWORD}@127.0.0.1:notaport");
    let e = Client::connect([bad]).await.unwrap_err();
    seen += &format!("{e}\n{e:?}\n");
    drop(client);
    tokio::time::sleep(Duration::from_millis(50)).await;
    seen += &String::from_utf8_lossy(&logs.0.lock().unwrap());
    assert!(seen.contains("connect failed"), "the logs were captured");
    for secret in [PASSWORD, wrong] {
        assert!(!seen.contains(secret), "{secret} shown in:\n{seen}");
    }
}
