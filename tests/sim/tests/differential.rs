//! Differential check (issue 14 item 4): the same command sequence on a simulated node and on a
//! real `redis-server` (started on a free loopback port as a child process, stopped by PID),
//! every reply compared. Needs `redis-server` on the PATH; ignored by default:
//! `cargo test -p quorumlock-sim --release --test differential -- --ignored --nocapture`.

#![allow(
    clippy::expect_used,
    reason = "test helpers: a failed expectation is a failed test"
)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use quorumlock_proto::scripts;
use quorumlock_sim::clock::Clock;
use quorumlock_sim::node::{Cmd, EPOCH_US, Node, Reply};

/// A `redis-server` child, killed (by its PID) when dropped.
struct Server {
    child: Child,
    port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start() -> Server {
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    let child = Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no"])
        .stdout(Stdio::null())
        .spawn()
        .expect("redis-server on the PATH");
    let server = Server { child, port };
    for _ in 0..100 {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return server;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("redis-server did not start on port {port}");
}

fn encode(args: &[String]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n{a}\r\n", a.len()).as_bytes());
    }
    out
}

fn read_reply(r: &mut BufReader<TcpStream>) -> Reply {
    let mut line = String::new();
    r.read_line(&mut line).expect("a reply");
    let (tag, rest) = line.trim_end().split_at(1);
    match tag {
        "+" if rest == "OK" => Reply::Ok,
        ":" => Reply::Int(rest.parse().expect("an integer")),
        "$" if rest == "-1" => Reply::Nil,
        "$" => {
            let len: usize = rest.parse().expect("a length");
            let mut buf = vec![0; len + 2];
            r.read_exact(&mut buf).expect("a bulk string");
            buf.truncate(len);
            Reply::Bulk(String::from_utf8(buf).expect("utf-8"))
        }
        "*" => {
            let n: usize = rest.parse().expect("a count");
            let items = (0..n)
                .map(|_| match read_reply(r) {
                    Reply::Int(i) => i,
                    other => panic!("array item {other:?}"),
                })
                .collect();
            Reply::Ints(items)
        }
        _ => panic!("unexpected reply {line:?}"),
    }
}

fn eval(src: &str, keys: &[String], args: &[String]) -> Vec<String> {
    let mut v = vec!["EVAL".to_owned(), src.to_owned(), keys.len().to_string()];
    v.extend(keys.iter().cloned());
    v.extend(args.iter().cloned());
    v
}

/// The wire form of `cmd`, the way the engine sends it.
fn wire(cmd: &Cmd) -> Vec<String> {
    let s = |x: &str| x.to_owned();
    match cmd {
        Cmd::SetNx { key, value, ttl_ms } => vec![
            s("SET"),
            key.clone(),
            value.clone(),
            s("NX"),
            s("PX"),
            ttl_ms.to_string(),
        ],
        Cmd::SetAll { .. } => panic!("a mutant's command, not sent to a server"),
        Cmd::AcquireMulti {
            keys,
            value,
            ttl_ms,
        } => eval(
            scripts::ACQUIRE_MULTI,
            keys,
            &[value.clone(), ttl_ms.to_string()],
        ),
        Cmd::FencedAcquire {
            keys,
            value,
            ttl_ms,
            counter_ttl_ms,
        } => eval(
            scripts::FENCED_ACQUIRE,
            keys,
            &[
                value.clone(),
                ttl_ms.to_string(),
                counter_ttl_ms.to_string(),
            ],
        ),
        Cmd::Raise {
            keys,
            value,
            tokens,
            counter_ttl_ms,
        } => {
            let mut args = vec![value.clone()];
            args.extend(tokens.iter().map(u64::to_string));
            args.push(counter_ttl_ms.to_string());
            eval(scripts::RAISE, keys, &args)
        }
        Cmd::Extend {
            keys,
            value,
            ttl_ms,
        } => eval(scripts::EXTEND, keys, &[value.clone(), ttl_ms.to_string()]),
        Cmd::ExtendBatch { locks } => {
            let keys: Vec<String> = locks.iter().flat_map(|(k, _, _)| k.clone()).collect();
            let args: Vec<String> = locks
                .iter()
                .flat_map(|(k, v, ms)| [k.len().to_string(), v.clone(), ms.to_string()])
                .collect();
            eval(scripts::EXTEND_BATCH, &keys, &args)
        }
        Cmd::Release {
            keys,
            value,
            notify: false,
        } => eval(scripts::RELEASE, keys, &[value.clone(), s("0")]),
        Cmd::Release {
            keys,
            value,
            notify: true,
        } => {
            let all: Vec<String> = ["", ":w", ":q", ":g"]
                .iter()
                .flat_map(|end| keys.iter().map(move |k| format!("{k}{end}")))
                .collect();
            eval(scripts::RELEASE, &all, &[value.clone(), s("2")])
        }
        Cmd::ReleaseOne {
            key,
            value,
            notify: false,
        } => eval(
            scripts::RELEASE_ONE,
            std::slice::from_ref(key),
            &[value.clone(), s("0")],
        ),
        Cmd::ReleaseOne {
            key,
            value,
            notify: true,
        } => eval(
            scripts::RELEASE_ONE,
            &waiters(key, true),
            &[value.clone(), s("2")],
        ),
        Cmd::Mark {
            key,
            id,
            ttl_ms,
            front,
            reg,
        } => {
            let mut keys = waiters(key, false);
            let mut args = vec![
                id.clone(),
                ttl_ms.to_string(),
                s(if *front { "1" } else { "0" }),
            ];
            if let Some(reg) = reg {
                keys.push(format!("{key}:g"));
                args.push(reg.clone());
            }
            eval(scripts::MARK, &keys[1..], &args)
        }
        Cmd::Unmark { key, id } => vec![s("ZREM"), format!("{key}:q"), id.clone()],
        Cmd::Leave { key, id, value } => eval(
            scripts::LEAVE,
            &[key.clone(), format!("{key}:q"), format!("{key}:g")],
            &[id.clone(), value.clone()],
        ),
        Cmd::Exists { keys } => [vec![s("EXISTS")], keys.clone()].concat(),
        Cmd::Subscribe { .. } => panic!("the simulator's subscription, not a command"),
        Cmd::Get { key } => vec![s("GET"), key.clone()],
        Cmd::Pttl { key } => vec![s("PTTL"), key.clone()],
    }
}

/// A lock key, its waiter flag and its line; with `regs`, its registrations too.
fn waiters(key: &str, regs: bool) -> Vec<String> {
    let mut v = vec![key.to_owned(), format!("{key}:w"), format!("{key}:q")];
    if regs {
        v.push(format!("{key}:g"));
    }
    v
}

/// One step: wait `sleep_ms`, then run `cmd` (or just `SET` a counter when `preset`).
enum Step {
    Sleep(u64),
    Run(Cmd),
    /// `SET key value` on both (a counter above the time floor, so tokens compare exactly).
    Preset(String, String),
}

#[expect(
    clippy::disallowed_methods,
    reason = "the simulated node's clock must read the real server's Unix time"
)]
fn unix_us() -> i64 {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(d.as_micros()).unwrap_or(0)
}

fn sequence() -> Vec<Step> {
    use Step::*;
    let s = |x: &str| x.to_owned();
    let (a, b) = (s("a".repeat(40).as_str()), s("b".repeat(40).as_str()));
    let k = s("ql:{r0}");
    let ks = vec![s("ql:{r0}"), s("ql:{r1}")];
    let fk = vec![s("ql:{r2}"), s("ql:{r2}:fence")];
    let xs = [s("ql:{x0}"), s("ql:{x1}"), s("ql:{x2}")];
    vec![
        Run(Cmd::SetNx {
            key: k.clone(),
            value: a.clone(),
            ttl_ms: 200,
        }),
        Run(Cmd::SetNx {
            key: k.clone(),
            value: b.clone(),
            ttl_ms: 200,
        }),
        Run(Cmd::Get { key: k.clone() }),
        Run(Cmd::Extend {
            keys: vec![k.clone()],
            value: b.clone(),
            ttl_ms: 500,
        }),
        Run(Cmd::Extend {
            keys: vec![k.clone()],
            value: a.clone(),
            ttl_ms: 10_000,
        }),
        Run(Cmd::Extend {
            keys: vec![k.clone()],
            value: a.clone(),
            ttl_ms: 10,
        }),
        Run(Cmd::ReleaseOne {
            key: k.clone(),
            value: b.clone(),
            notify: false,
        }),
        Run(Cmd::ReleaseOne {
            key: k.clone(),
            value: a.clone(),
            notify: false,
        }),
        Run(Cmd::ReleaseOne {
            key: k.clone(),
            value: a.clone(),
            notify: false,
        }),
        Run(Cmd::Extend {
            keys: vec![k],
            value: a.clone(),
            ttl_ms: 500,
        }),
        Run(Cmd::AcquireMulti {
            keys: ks.clone(),
            value: a.clone(),
            ttl_ms: 100,
        }),
        Run(Cmd::AcquireMulti {
            keys: ks.clone(),
            value: b.clone(),
            ttl_ms: 100,
        }),
        Run(Cmd::Release {
            keys: ks.clone(),
            value: b.clone(),
            notify: false,
        }),
        Sleep(250),
        // Expired: gone on both.
        Run(Cmd::Get { key: ks[0].clone() }),
        Run(Cmd::Pttl { key: ks[1].clone() }),
        Run(Cmd::AcquireMulti {
            keys: ks.clone(),
            value: b.clone(),
            ttl_ms: 10_000,
        }),
        Run(Cmd::SetNx {
            key: ks[1].clone(),
            value: a.clone(),
            ttl_ms: 100,
        }),
        Run(Cmd::Release {
            keys: ks.clone(),
            value: b.clone(),
            notify: false,
        }),
        Run(Cmd::Release {
            keys: ks.clone(),
            value: b.clone(),
            notify: false,
        }),
        Preset(fk[1].clone(), s("5000000000000000")),
        Run(Cmd::FencedAcquire {
            keys: fk.clone(),
            value: a.clone(),
            ttl_ms: 100,
            counter_ttl_ms: 0,
        }),
        Run(Cmd::FencedAcquire {
            keys: fk.clone(),
            value: b.clone(),
            ttl_ms: 100,
            counter_ttl_ms: 0,
        }),
        Run(Cmd::Raise {
            keys: fk.clone(),
            value: b.clone(),
            tokens: vec![5_000_000_000_000_100],
            counter_ttl_ms: 0,
        }),
        Run(Cmd::Raise {
            keys: fk.clone(),
            value: a.clone(),
            tokens: vec![5_000_000_000_000_100],
            counter_ttl_ms: 0,
        }),
        Run(Cmd::Get { key: fk[1].clone() }),
        Run(Cmd::Raise {
            keys: fk.clone(),
            value: a.clone(),
            tokens: vec![7],
            counter_ttl_ms: 0,
        }),
        Run(Cmd::Get { key: fk[1].clone() }),
        Sleep(150),
        Run(Cmd::FencedAcquire {
            keys: fk.clone(),
            value: b.clone(),
            ttl_ms: 100,
            counter_ttl_ms: 60_000,
        }),
        Run(Cmd::Pttl { key: fk[1].clone() }),
        Run(Cmd::SetNx {
            key: xs[0].clone(),
            value: a.clone(),
            ttl_ms: 10_000,
        }),
        Run(Cmd::SetNx {
            key: xs[1].clone(),
            value: b,
            ttl_ms: 10_000,
        }),
        // Ours, another's, absent, ours + absent, another's + ours, absent + another's,
        // another's + absent.
        Run(Cmd::ExtendBatch {
            locks: vec![
                (vec![xs[0].clone()], a.clone(), 20_000),
                (vec![xs[1].clone()], a.clone(), 20_000),
                (vec![xs[2].clone()], a.clone(), 20_000),
                (vec![xs[0].clone(), xs[2].clone()], a.clone(), 30_000),
                (vec![xs[1].clone(), xs[0].clone()], a.clone(), 30_000),
                (vec![xs[2].clone(), xs[1].clone()], a.clone(), 30_000),
                (vec![xs[1].clone(), xs[2].clone()], a.clone(), 30_000),
            ],
        }),
        // Never shortens: ours again with a shorter ttl.
        Run(Cmd::ExtendBatch {
            locks: vec![(vec![xs[0].clone()], a, 100)],
        }),
        Run(Cmd::Pttl { key: xs[0].clone() }),
        Run(Cmd::Pttl { key: xs[1].clone() }),
        Run(Cmd::Get { key: xs[2].clone() }),
    ]
}

/// Waiters' lines and grants (MARK, UNMARK, LEAVE, RELEASE in mode "2", `EXISTS`): the
/// replies, the keys granted, and what each step publishes.
fn waiter_sequence() -> Vec<Step> {
    use Step::*;
    let s = |x: &str| x.to_owned();
    let (a, v, w) = (s(&"a".repeat(40)), s(&"v".repeat(40)), s(&"w".repeat(40)));
    let k = s("ql:{n0}");
    let ms = vec![s("ql:{m0}"), s("ql:{m1}")];
    let set = |key: &str, value: &str| Cmd::SetNx {
        key: key.to_owned(),
        value: value.to_owned(),
        ttl_ms: 5_000,
    };
    let mark = |id: &str, front: bool, reg: Option<String>| Cmd::Mark {
        key: s("ql:{n0}"),
        id: id.to_owned(),
        ttl_ms: 1_000,
        front,
        reg,
    };
    let release = |value: &str| Cmd::ReleaseOne {
        key: s("ql:{n0}"),
        value: value.to_owned(),
        notify: true,
    };
    let leave = |id: &str, value: &str| Cmd::Leave {
        key: s("ql:{n0}"),
        id: id.to_owned(),
        value: value.to_owned(),
    };
    vec![
        Run(set(&k, &a)),
        // A release with no flag publishes nothing.
        Run(release(&a)),
        Run(set(&k, &a)),
        Run(mark("c0.1", false, Some(format!("1000:1:{v}")))),
        Run(mark("c1.1", false, None)),
        Run(mark("c2.1", true, None)),
        Run(mark("c2.1", true, None)),
        Run(mark("c1.1", false, None)),
        Run(Cmd::Exists {
            keys: vec![k.clone(), ms[0].clone()],
        }),
        // Pops c2.1 (first), which registered nothing.
        Run(release(&a)),
        Run(set(&k, &a)),
        // Pops c0.1 and grants it the key until its mark's time plus 1 s.
        Run(release(&a)),
        Run(Cmd::Get { key: k.clone() }),
        Run(Cmd::Pttl { key: k.clone() }),
        // Gives the grant back: the key goes to nobody (c1.1 registered nothing), c1.1 named.
        Run(leave("c0.1", &v)),
        Run(leave("c0.1", &v)),
        Run(Cmd::Get { key: k.clone() }),
        // Nobody in line, the flag still up: the plain channel.
        Run(set(&k, &a)),
        Run(release(&a)),
        Run(mark("c3.1", false, None)),
        Run(Cmd::Unmark {
            key: k.clone(),
            id: s("c3.1"),
        }),
        Run(Cmd::Unmark {
            key: k.clone(),
            id: s("c3.1"),
        }),
        // A registration whose ttl has passed is popped and named, not granted.
        Run(mark("c4.1", false, Some(format!("100:2:{w}")))),
        Run(set(&k, &a)),
        Sleep(150),
        Run(release(&a)),
        Run(Cmd::Get { key: k.clone() }),
        // A winner's LEAVE (no value) keeps the key, which is its lock.
        Run(mark("c5.1", false, Some(format!("5000:3:{w}")))),
        Run(set(&k, &a)),
        Run(release(&a)),
        Run(leave("c5.1", "")),
        Run(Cmd::Get { key: k.clone() }),
        // A set: only the key with a flag tells its line.
        Run(Cmd::AcquireMulti {
            keys: ms.clone(),
            value: a.clone(),
            ttl_ms: 5_000,
        }),
        Run(Cmd::Mark {
            key: ms[0].clone(),
            id: s("c6.1"),
            ttl_ms: 1_000,
            front: false,
            reg: None,
        }),
        Run(Cmd::Release {
            keys: ms.clone(),
            value: a,
            notify: true,
        }),
        Run(Cmd::Exists { keys: ms }),
    ]
}

/// PTTL readings race the wall clock: equal within 30 ms.
fn same(cmd: &Cmd, sim: &Reply, real: &Reply) -> bool {
    match (cmd, sim, real) {
        (Cmd::Pttl { .. }, Reply::Int(x), Reply::Int(y)) if *x >= 0 && *y >= 0 => {
            (x - y).abs() <= 30
        }
        _ => sim == real,
    }
}

/// One bulk string of a RESP reply.
fn read_bulk(r: &mut BufReader<TcpStream>) -> std::io::Result<String> {
    let mut line = String::new();
    r.read_line(&mut line)?;
    let len: usize = line
        .trim_end()
        .strip_prefix('$')
        .and_then(|n| n.parse().ok())
        .expect("a bulk string");
    let mut buf = vec![0; len + 2];
    r.read_exact(&mut buf)?;
    buf.truncate(len);
    Ok(String::from_utf8(buf).expect("utf-8"))
}

/// The next message on a `PSUBSCRIBE` connection: (channel, message).
fn read_message(r: &mut BufReader<TcpStream>) -> std::io::Result<(String, String)> {
    let mut line = String::new();
    r.read_line(&mut line)?;
    assert_eq!(line.trim_end(), "*4", "a pmessage");
    let kind = read_bulk(r)?;
    assert_eq!(kind, "pmessage");
    let _pattern = read_bulk(r)?;
    Ok((read_bulk(r)?, read_bulk(r)?))
}

/// Runs `steps` on a fresh simulated node and on `server`; returns the mismatches of replies
/// and of what each step published (read from a `PSUBSCRIBE` connection).
fn compare(server: &Server, steps: Vec<Step>) -> Vec<String> {
    let connect = || {
        let stream = TcpStream::connect(("127.0.0.1", server.port)).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        let writer = stream.try_clone().expect("clone");
        (writer, BufReader::new(stream))
    };
    let (mut writer, mut reader) = connect();
    let (mut sub_writer, mut sub) = connect();
    let pattern = "*:released*".to_owned();
    sub_writer
        .write_all(&encode(&["PSUBSCRIBE".to_owned(), pattern.clone()]))
        .expect("psubscribe");
    let mut line = String::new();
    sub.read_line(&mut line).expect("the subscription");
    for want in ["psubscribe", pattern.as_str()] {
        assert_eq!(read_bulk(&mut sub).expect("the subscription"), want);
    }
    sub.read_line(&mut line).expect("the count");
    let mut call = |args: &[String]| {
        writer.write_all(&encode(args)).expect("write");
        read_reply(&mut reader)
    };
    // The simulated node reads the real Unix time, advanced by the sleeps.
    let mut node = Node::new(Clock::new(unix_us() - EPOCH_US, 1.0), false);
    let mut t = 0i64;
    let mut mismatches = Vec::new();
    for (i, step) in steps.into_iter().enumerate() {
        match step {
            Step::Sleep(ms) => {
                std::thread::sleep(Duration::from_millis(ms));
                t += i64::try_from(ms).unwrap_or(0) * 1000;
            }
            Step::Preset(key, value) => {
                assert_eq!(
                    call(&["SET".to_owned(), key.clone(), value.clone()]),
                    Reply::Ok
                );
                node.exec(
                    t,
                    &Cmd::SetAll {
                        keys: vec![key],
                        value,
                        ttl_ms: 3_600_000,
                    },
                );
            }
            Step::Run(cmd) => {
                let real = call(&wire(&cmd));
                let sim = node.exec(t, &cmd);
                let ok = same(&cmd, &sim, &real);
                println!(
                    "{i:>2} {} {cmd:?}\n     sim {sim:?}  real {real:?}",
                    if ok { "ok  " } else { "DIFF" }
                );
                if !ok {
                    mismatches.push(format!("step {i}: {cmd:?}: sim {sim:?}, real {real:?}"));
                }
                let want = node.published().to_vec();
                let got: Vec<(String, String)> = want
                    .iter()
                    .map_while(|_| read_message(&mut sub).ok())
                    .collect();
                if !want.is_empty() || got != want {
                    println!("     published: sim {want:?}  real {got:?}");
                }
                if got != want {
                    mismatches.push(format!(
                        "step {i}: {cmd:?}: published {want:?}, real {got:?}"
                    ));
                }
            }
        }
    }
    // Nothing more was published.
    sub.get_ref()
        .set_read_timeout(Some(Duration::from_millis(300)))
        .expect("timeout");
    if let Ok(extra) = read_message(&mut sub) {
        mismatches.push(format!("the server also published {extra:?}"));
    }
    mismatches
}

/// Both sequences on one server (their keys differ): the lock scripts, then waiters' lines
/// and grants.
#[test]
#[ignore = "needs redis-server; run with --ignored"]
fn simulated_node_matches_redis_server() {
    let server = start();
    let mut mismatches = compare(&server, sequence());
    mismatches.extend(compare(&server, waiter_sequence()));
    drop(server);
    assert!(mismatches.is_empty(), "{mismatches:#?}");
}
