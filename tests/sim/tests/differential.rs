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
        Cmd::Release { keys, value } => eval(scripts::RELEASE, keys, &[value.clone(), s("0")]),
        Cmd::ReleaseOne { key, value } => eval(
            scripts::RELEASE_ONE,
            std::slice::from_ref(key),
            &[value.clone(), s("0")],
        ),
        Cmd::Get { key } => vec![s("GET"), key.clone()],
        Cmd::Pttl { key } => vec![s("PTTL"), key.clone()],
    }
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
        }),
        Run(Cmd::ReleaseOne {
            key: k.clone(),
            value: a.clone(),
        }),
        Run(Cmd::ReleaseOne {
            key: k.clone(),
            value: a.clone(),
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
        }),
        Run(Cmd::Release {
            keys: ks.clone(),
            value: b.clone(),
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

/// PTTL readings race the wall clock: equal within 30 ms.
fn same(cmd: &Cmd, sim: &Reply, real: &Reply) -> bool {
    match (cmd, sim, real) {
        (Cmd::Pttl { .. }, Reply::Int(x), Reply::Int(y)) if *x >= 0 && *y >= 0 => {
            (x - y).abs() <= 30
        }
        _ => sim == real,
    }
}

#[test]
#[ignore = "needs redis-server; run with --ignored"]
fn simulated_node_matches_redis_server() {
    let server = start();
    let stream = TcpStream::connect(("127.0.0.1", server.port)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    let mut writer = stream.try_clone().expect("clone");
    let mut reader = BufReader::new(stream);
    let mut call = |args: &[String]| {
        writer.write_all(&encode(args)).expect("write");
        read_reply(&mut reader)
    };
    // The simulated node reads the real Unix time, advanced by the sleeps.
    let mut node = Node::new(Clock::new(unix_us() - EPOCH_US, 1.0), false);
    let mut t = 0i64;
    let mut mismatches = Vec::new();
    for (i, step) in sequence().into_iter().enumerate() {
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
            }
        }
    }
    drop(server);
    assert!(mismatches.is_empty(), "{mismatches:#?}");
}
