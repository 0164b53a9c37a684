//! Release notification (REDLOCK.md §9, issue 8 item 4): a release wakes a waiter at once;
//! without notification (or with the channel denied) the waiter falls back to polling.
// Test helpers outside #[test] functions panic on failure by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::*;
use quorumlock::{Client, LockOptions, MonoTime, NodeKind};

/// Waits with a long, jitter-free retry delay, so a prompt acquisition can only come from a
/// notification.
fn slow_poll() -> LockOptions {
    opts(10_000)
        .retry_count(5)
        .retry_delay(Duration::from_secs(2))
        .retry_jitter(Duration::ZERO)
}

async fn client_with(c: &Cluster, notify: bool, user: Option<&str>) -> Client {
    let urls: Vec<String> = match user {
        Some(u) => c
            .urls()
            .iter()
            .map(|url| url.replacen("redis://", &format!("redis://{u}@"), 1))
            .collect(),
        None => c.urls(),
    };
    Client::builder()
        .nodes(urls)
        .lock_options(opts(10_000))
        .notify(notify)
        .connect()
        .await
        .expect("connect")
}

/// Holder acquires, a waiter starts, the holder releases after `hold`; returns the time from
/// the release to the waiter's success, and the waiter's client.
async fn hand_off(c: &Cluster, notify: bool, user: Option<&str>, res: &str) -> (Duration, Client) {
    let holder = client_with(c, notify, user).await;
    let waiter = client_with(c, notify, user).await;
    let lock = holder.acquire([res]).await.unwrap();
    let res2 = res.to_owned();
    let w = waiter.clone();
    let task = tokio::spawn(async move {
        let l = w.acquire_with([res2], &slow_poll()).await.unwrap();
        let at = MonoTime::now();
        l.release().await.unwrap();
        at
    });
    // Long enough for the waiter's first attempt, its subscription and its vacancy check.
    tokio::time::sleep(Duration::from_millis(400)).await;
    let released_at = MonoTime::now();
    let report = lock.release().await.unwrap();
    assert!(report.was_held_by_quorum(), "{report}");
    let acquired_at = task.await.unwrap();
    (acquired_at.saturating_since(released_at), waiter)
}

#[tokio::test]
async fn a_release_wakes_the_waiter_at_once() {
    let c = cluster(3);
    let (gap, waiter) = hand_off(&c, true, None, "notify:wake").await;
    // The retry delay is 2 s; a release notice must cut it short (REDLOCK.md §9: about
    // 20 ms plus one round trip; generous here for a loaded 2-core machine).
    assert!(gap < Duration::from_millis(500), "hand-off took {gap:?}");
    assert_eq!(waiter.metrics().wakeups, 1);
    // Listening ends with the call: every node's channel loses its subscriber.
    let channel = [waiter.key("notify:wake"), b":released".to_vec()].concat();
    // (after the 1 s a channel stays subscribed for a client that waits again)
    for _ in 0..400 {
        let subscribed: i64 = (0..c.len()).map(|i| numsub(&c, i, &channel)).sum();
        if subscribed == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the waiter's subscriptions were not closed");
}

#[tokio::test]
async fn a_release_wakes_one_waiter_of_a_client_the_longest_waiting() {
    // Three waiters of one client queue behind a holder. Each release wakes only the waiter
    // that has waited longest, so they get the lock in the order they came, one wake-up each;
    // waking all three would cost 3 + 2 + 1 wake-ups and hand the lock out at random.
    let c = cluster(3);
    let client = client_with(&c, true, None).await;
    let held = client.acquire(["notify:queue"]).await.unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut tasks = Vec::new();
    for i in 0..3 {
        let (client, tx) = (client.clone(), tx.clone());
        tasks.push(tokio::spawn(async move {
            let l = client
                .acquire_with(["notify:queue"], &slow_poll())
                .await
                .unwrap();
            tx.send(i).unwrap();
            l.release().await.unwrap();
        }));
        // Long enough for its first attempt, its subscription and its vacancy check.
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let before = client.metrics().wakeups;
    let t0 = MonoTime::now();
    held.release().await.unwrap();
    for t in tasks {
        t.await.unwrap();
    }
    // Well inside the 2 s retry delay: every hand-off came from a notice.
    let took = MonoTime::now().saturating_since(t0);
    assert!(took < Duration::from_millis(1_500), "{took:?}");
    let order: Vec<i32> = std::iter::from_fn(|| rx.try_recv().ok()).collect();
    assert_eq!(order, vec![0, 1, 2]);
    assert_eq!(client.metrics().wakeups - before, 3);
}

#[tokio::test]
async fn a_client_waiting_again_soon_keeps_its_subscription() {
    // A worker that waits for one lock again and again subscribes once, not once per wait.
    let c = cluster(3);
    let holder = client_with(&c, true, None).await;
    let waiter = client_with(&c, true, None).await;
    let subscribes = |c: &Cluster| {
        (0..c.len())
            .map(|i| calls(c, i, &["subscribe"]))
            .sum::<i64>()
    };
    let before = subscribes(&c);
    for _ in 0..2 {
        let lock = holder.acquire(["notify:again"]).await.unwrap();
        let w = waiter.clone();
        let task = tokio::spawn(async move {
            let l = w.acquire_with(["notify:again"], &slow_poll()).await;
            l.unwrap().release().await.unwrap();
        });
        tokio::time::sleep(Duration::from_millis(300)).await;
        lock.release().await.unwrap();
        task.await.unwrap();
    }
    assert_eq!(waiter.metrics().wakeups, 2, "both waits ended by a notice");
    assert_eq!(
        subscribes(&c) - before,
        3,
        "one SUBSCRIBE per node for both waits"
    );
}

#[tokio::test]
async fn without_notification_the_waiter_polls() {
    // The must-fail twin of the test above: with notification off, only the 2 s retry
    // delay brings the waiter back.
    let c = cluster(3);
    let (gap, waiter) = hand_off(&c, false, None, "notify:off").await;
    assert!(gap > Duration::from_millis(1_000), "hand-off took {gap:?}");
    assert_eq!(waiter.metrics().wakeups, 0);
}

#[tokio::test]
async fn a_denied_channel_falls_back_to_polling() {
    let c = cluster(3);
    for i in 0..c.len() {
        // Keys and commands allowed, channels not (Redis 7's default for new ACL users).
        let r = c
            .command(
                i,
                &[
                    b"ACL",
                    b"SETUSER",
                    b"locker",
                    b"on",
                    b">pw",
                    b"~*",
                    b"+@all",
                    b"resetchannels",
                ],
            )
            .unwrap();
        assert!(!r.is_error(), "{r:?}");
    }
    let (gap, waiter) = hand_off(&c, true, Some("locker:pw"), "notify:acl").await;
    // The release still deleted the keys (PUBLISH runs under pcall) and the waiter got the
    // lock by polling.
    assert!(gap > Duration::from_millis(1_000), "hand-off took {gap:?}");
    assert_eq!(waiter.metrics().wakeups, 0);
}

#[tokio::test]
async fn a_release_publishes_only_the_keys_a_waiter_marked() {
    // A waiter marks a key's waiter flag `<key>:w` before it waits (REDLOCK.md §9); a release
    // reads the flag with the key and publishes only when it exists. Here x is marked on every
    // node and y nowhere: x is published once per node, y never.
    let c = cluster(3);
    let client = client(&c).await;
    let (x, y) = (client.key("notify:x"), client.key("notify:y"));
    let channel = |k: &[u8]| [k, b":released"].concat();
    let lock = client.acquire(["notify:x", "notify:y"]).await.unwrap();
    let mut subs: Vec<_> = (0..c.len())
        .map(|i| Subscriber::new(&c, i, &[x.clone(), y.clone()]))
        .collect();
    let flag = [x.as_slice(), b":w"].concat();
    for i in 0..c.len() {
        c.command(i, &[b"SET", &flag, b"1", b"PX", b"60000"])
            .unwrap();
    }
    let report = lock.release().await.unwrap();
    assert_eq!(report.count(NodeKind::Released), 3, "{report}");
    for (i, s) in subs.iter_mut().enumerate() {
        // A message of our own after the release: anything the release published comes first.
        c.command(i, &[b"PUBLISH", &channel(&y), b"end"]).unwrap();
        assert_eq!(s.messages(2), vec![x.clone(), b"end".to_vec()]);
        // The flag stays for the other waiters it may stand for, and expires by itself.
        assert_eq!(c.command(i, &[b"EXISTS", &flag]).unwrap(), Reply::Int(1));
    }
}

#[tokio::test]
async fn a_waiter_marks_at_its_check_and_renews_the_mark_before_it_lapses() {
    // The waiter polls every 2 s (250 ms node timeout): its marks last 2 x 2.75 s. The holder
    // keeps the lock 7 s, past the first mark's end: only a mark renewed by a later attempt
    // makes the release publish, and the waiter then takes the lock at once.
    let c = cluster(3);
    let holder = client(&c).await;
    let waiter = client(&c).await;
    let flag = [holder.key("notify:m").as_slice(), b":w"].concat();
    let pttl = |i: usize| match c.command(i, &[b"PTTL", &flag]).unwrap() {
        Reply::Int(ms) => ms,
        other => panic!("{other:?}"),
    };
    let lock = holder
        .acquire_with(["notify:m"], &opts(30_000))
        .await
        .unwrap();
    let w = waiter.clone();
    let task = tokio::spawn(async move {
        let l = w.acquire_with(["notify:m"], &slow_poll()).await.unwrap();
        (MonoTime::now(), l)
    });
    // The first attempt does not mark (most never wait); the check after subscribing does.
    // (Polled: on a loaded machine subscribing may take longer than the usual 400 ms.)
    let t0 = MonoTime::now();
    tokio::time::sleep(Duration::from_millis(400)).await;
    for i in 0..c.len() {
        while pttl(i) < 0 && MonoTime::now().saturating_since(t0) < Duration::from_secs(2) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let ms = pttl(i);
        assert!((3_000..=5_502).contains(&ms), "node {i}: {ms} ms");
    }
    tokio::time::sleep(
        Duration::from_millis(7_000).saturating_sub(MonoTime::now().saturating_since(t0)),
    )
    .await;
    let released_at = MonoTime::now();
    lock.release().await.unwrap();
    let (acquired_at, won) = task.await.unwrap();
    let gap = acquired_at.saturating_since(released_at);
    assert!(gap < Duration::from_millis(500), "hand-off took {gap:?}");
    assert_eq!(waiter.metrics().wakeups, 1);
    let report = won.release().await.unwrap();
    // An uncontended release publishes nothing: the holder's release published on every node,
    // the winner's wherever it released (the flag was still there; woken by two notices, the
    // winner may reach the third node before the holder's release and hold a quorum only).
    let quiet = holder.acquire(["notify:quiet"]).await.unwrap();
    quiet.release().await.unwrap();
    assert!(report.was_held_by_quorum(), "{report}");
    for n in report.nodes() {
        let winner = i64::from(n.kind == NodeKind::Released);
        assert_eq!(
            calls(&c, n.index, &["publish"]),
            1 + winner,
            "node {}",
            n.index
        );
    }
}

#[tokio::test]
async fn a_waiter_that_keeps_losing_renews_its_mark_about_once_per_half_its_life() {
    // Attempts 200 ms apart for 2.4 s (250 ms node timeout): a mark lasts 2 x 0.95 s, so
    // besides the check's mark about two renewals are due (a few more on a slow machine),
    // not one per attempt (13).
    let c = cluster(3);
    let holder = client(&c).await;
    let waiter = client(&c).await;
    let lock = holder.acquire(["notify:often"]).await.unwrap();
    for i in 0..c.len() {
        c.command(i, &[b"CONFIG", b"RESETSTAT"]).unwrap();
    }
    let often = opts(10_000)
        .retry_count(12)
        .retry_delay(Duration::from_millis(200))
        .retry_jitter(Duration::ZERO);
    let e = waiter
        .acquire_with(["notify:often"], &often)
        .await
        .expect_err("held all along");
    assert_eq!(e.attempts(), 13, "{e}");
    lock.release().await.unwrap();
    for i in 0..c.len() {
        // 13 attempts' SET NX, the check's mark and its renewals.
        let marks = calls(&c, i, &["set"]) - 13;
        assert!((1..=6).contains(&marks), "node {i}: {marks} marks");
    }
}

fn numsub(c: &Cluster, i: usize, channel: &[u8]) -> i64 {
    match c.command(i, &[b"PUBSUB", b"NUMSUB", channel]).unwrap() {
        Reply::Array(items) => items.get(1).and_then(Reply::as_int).unwrap_or(-1),
        other => panic!("{other:?}"),
    }
}

/// A raw RESP subscriber on one node, independent of the engine.
struct Subscriber {
    stream: std::io::BufReader<std::net::TcpStream>,
}

impl Subscriber {
    fn new(c: &Cluster, i: usize, keys: &[Vec<u8>]) -> Self {
        use std::io::Write;
        let mut tcp = std::net::TcpStream::connect(c.addr(i)).unwrap();
        tcp.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut cmd = format!("*{}\r\n$9\r\nSUBSCRIBE\r\n", keys.len() + 1).into_bytes();
        for k in keys {
            let ch = [k.as_slice(), b":released"].concat();
            cmd.extend(format!("${}\r\n", ch.len()).bytes());
            cmd.extend(&ch);
            cmd.extend(b"\r\n");
        }
        tcp.write_all(&cmd).unwrap();
        let mut s = Self {
            stream: std::io::BufReader::new(tcp),
        };
        for _ in keys {
            assert_eq!(s.frame()[0], b"subscribe");
        }
        s
    }

    /// Reads one push frame: an array of bulk strings and integers, as byte strings.
    fn frame(&mut self) -> Vec<Vec<u8>> {
        use std::io::{BufRead, Read};
        let mut line = String::new();
        self.stream.read_line(&mut line).unwrap();
        let n: usize = line.trim_end()[1..].parse().unwrap();
        (0..n)
            .map(|_| {
                let mut head = String::new();
                self.stream.read_line(&mut head).unwrap();
                let head = head.trim_end();
                if let Some(len) = head.strip_prefix('$') {
                    let mut buf = vec![0; len.parse::<usize>().unwrap() + 2];
                    self.stream.read_exact(&mut buf).unwrap();
                    buf.truncate(buf.len() - 2);
                    buf
                } else {
                    head.as_bytes()[1..].to_vec()
                }
            })
            .collect()
    }

    /// The payloads of the next `n` messages.
    fn messages(&mut self, n: usize) -> Vec<Vec<u8>> {
        (0..n)
            .map(|_| {
                let f = self.frame();
                assert_eq!(f[0], b"message");
                f[2].clone()
            })
            .collect()
    }
}
