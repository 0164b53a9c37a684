//! The fault proxy against a real redis-server: every mode, changed while connections are
//! open (`docs/TESTING.md` §3.5).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use quorumlock_harness::{Cluster, FaultProxy, Mode, Reply, command_timeout, now_us};

/// One raw client connection that sends inline commands and reads one reply line.
struct Conn {
    reader: BufReader<TcpStream>,
}

impl Conn {
    fn open(addr: SocketAddr) -> Conn {
        let s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_millis(400)))
            .unwrap();
        Conn {
            reader: BufReader::new(s),
        }
    }

    fn send(&mut self, line: &str) -> Result<(), String> {
        let s = self.reader.get_mut();
        s.write_all(format!("{line}\r\n").as_bytes())
            .map_err(|e| format!("{:?}", e.kind()))
    }

    /// The next reply line, or the error (timeout, reset) or "EOF".
    fn line(&mut self) -> Result<String, String> {
        let mut out = String::new();
        match self.reader.read_line(&mut out) {
            Ok(0) => Err("EOF".into()),
            Ok(_) => Ok(out.trim_end().to_string()),
            Err(e) => Err(format!("{:?}", e.kind())),
        }
    }

    fn call(&mut self, line: &str) -> Result<String, String> {
        self.send(line)?;
        self.line()
    }
}

fn setup() -> (Cluster, FaultProxy) {
    let c = Cluster::builder().nodes(1).start().unwrap();
    let p = FaultProxy::start(c.addr(0)).unwrap();
    (c, p)
}

fn get(c: &Cluster, key: &str) -> Reply {
    c.command(0, &[b"GET", key.as_bytes()]).unwrap()
}

fn ms_since(t0: u64) -> u64 {
    (now_us() - t0) / 1000
}

#[test]
fn pass_and_delay_apply_to_an_open_connection() {
    let (_c, p) = setup();
    let mut conn = Conn::open(p.addr());
    assert_eq!(conn.call("PING").as_deref(), Ok("+PONG"));
    p.set(Mode::Delay {
        c2s: Duration::ZERO,
        s2c: Duration::from_millis(150),
    });
    let t0 = now_us();
    assert_eq!(conn.call("PING").as_deref(), Ok("+PONG"));
    let rtt = ms_since(t0);
    assert!((150..350).contains(&rtt), "delayed PING took {rtt} ms");
    p.set(Mode::Pass);
    let t0 = now_us();
    assert_eq!(conn.call("PING").as_deref(), Ok("+PONG"));
    assert!(ms_since(t0) < 100);
    let s = p.stats();
    assert_eq!(s.accepted, 1);
    assert!(s.c2s_bytes >= 18 && s.s2c_bytes >= 14, "{s:?}");
}

#[test]
fn blackhole_and_drop_requests_discard_and_the_server_never_sees_the_write() {
    let (c, p) = setup();
    let mut conn = Conn::open(p.addr());
    p.set(Mode::Blackhole);
    assert!(
        conn.call("SET bh 1").is_err(),
        "blackholed call must time out"
    );
    assert_eq!(get(&c, "bh"), Reply::Nil);
    p.set(Mode::DropRequests);
    let mut conn2 = Conn::open(p.addr());
    assert!(conn2.call("SET dr 1").is_err());
    assert_eq!(get(&c, "dr"), Reply::Nil);
    assert!(p.stats().c2s_dropped > 0);
    p.set(Mode::Pass);
    let mut fresh = Conn::open(p.addr());
    assert_eq!(fresh.call("PING").as_deref(), Ok("+PONG"));
}

#[test]
fn drop_replies_applies_the_write_but_the_client_times_out() {
    let (c, p) = setup();
    p.set(Mode::DropReplies);
    let r = command_timeout(
        p.addr(),
        &[b"SET", b"lk", b"tokA", b"NX", b"PX", b"5000"],
        Duration::from_millis(300),
    );
    assert!(r.is_err(), "reply must be dropped: {r:?}");
    assert_eq!(get(&c, "lk"), Reply::Bulk(b"tokA".to_vec()));
    assert!(p.stats().s2c_dropped > 0);
}

#[test]
fn reset_kills_open_and_new_connections_and_refuse_new_keeps_open_ones() {
    let (_c, p) = setup();
    let mut open = Conn::open(p.addr());
    assert_eq!(open.call("PING").as_deref(), Ok("+PONG"));
    p.set(Mode::RefuseNew);
    let refused = command_timeout(p.addr(), &[b"PING"], Duration::from_millis(300));
    assert!(
        refused.is_err(),
        "new connection must be closed: {refused:?}"
    );
    assert_eq!(open.call("PING").as_deref(), Ok("+PONG"));
    p.set(Mode::Reset);
    std::thread::sleep(Duration::from_millis(20));
    let t0 = now_us();
    let r = open.call("PING");
    assert!(
        r.as_ref()
            .is_err_and(|e| ["ConnectionReset", "EOF", "BrokenPipe"].contains(&e.as_str())),
        "{r:?}"
    );
    assert!(ms_since(t0) < 100, "a reset must be immediate");
    assert!(command_timeout(p.addr(), &[b"PING"], Duration::from_millis(300)).is_err());
    assert!(p.stats().resets >= 2);
    p.set(Mode::Pass);
    assert!(command_timeout(p.addr(), &[b"PING"], Duration::from_millis(300)).is_ok());
}

#[test]
fn half_open_keeps_the_client_side_silent() {
    let (_c, p) = setup();
    let mut conn = Conn::open(p.addr());
    assert_eq!(conn.call("PING").as_deref(), Ok("+PONG"));
    p.set(Mode::HalfOpen);
    std::thread::sleep(Duration::from_millis(20));
    let r = conn.call("PING");
    assert!(
        r.as_ref()
            .is_err_and(|e| ["WouldBlock", "TimedOut"].contains(&e.as_str())),
        "half-open must be silent, not closed: {r:?}"
    );
}

#[test]
fn hold_delivers_requests_late_in_order() {
    let (c, p) = setup();
    let mut conn = Conn::open(p.addr());
    p.set(Mode::Hold);
    conn.send("SET held 1").unwrap();
    conn.send("INCR held").unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(get(&c, "held"), Reply::Nil, "held requests must not arrive");
    p.set(Mode::Pass);
    assert_eq!(conn.line().as_deref(), Ok("+OK"));
    assert_eq!(conn.line().as_deref(), Ok(":2"));
}

#[test]
fn slow_replies_trickle() {
    let (_c, p) = setup();
    p.set(Mode::SlowReplies {
        chunk: 1,
        gap: Duration::from_millis(20),
    });
    let mut conn = Conn::open(p.addr());
    let t0 = now_us();
    assert_eq!(conn.call("PING").as_deref(), Ok("+PONG"));
    let took = ms_since(t0);
    // "+PONG\r\n" is 7 bytes: 6 gaps of 20 ms.
    assert!((110..400).contains(&took), "took {took} ms");
    assert_eq!(
        p.mode(),
        Mode::SlowReplies {
            chunk: 1,
            gap: Duration::from_millis(20)
        }
    );
}

#[test]
fn the_skew_shim_moves_a_node_clock() {
    let c = Cluster::builder().nodes(1).start().unwrap();
    c.command(0, &[b"SET", b"k", b"v", b"PX", b"5000"]).unwrap();
    c.skew(0, 10_000, 1.0).unwrap();
    std::thread::sleep(Duration::from_millis(150));
    assert_eq!(
        c.command(0, &[b"PTTL", b"k"]).unwrap(),
        Reply::Int(-2),
        "a +10 s jump must expire a 5 s key"
    );
    c.skew_reset(0).unwrap();
    c.command(0, &[b"SET", b"k", b"v", b"PX", b"5000"]).unwrap();
    std::thread::sleep(Duration::from_millis(150));
    let pttl = c.command(0, &[b"PTTL", b"k"]).unwrap().as_int().unwrap();
    assert!(pttl > 4_000, "after reset the key lives: {pttl}");
}

#[test]
fn a_mesh_partitions_each_view_on_its_own() {
    use quorumlock_harness::{Partition, ProxyMesh};
    let c = Cluster::builder().nodes(5).start().unwrap();
    let nodes: Vec<SocketAddr> = (0..5).map(|i| c.addr(i)).collect();
    let mesh = ProxyMesh::new(&nodes, &["A", "B"]).unwrap();
    let cut = |v: usize| -> Vec<usize> {
        let modes = mesh.modes();
        (0..5).filter(|&i| modes[v][i] == Mode::Blackhole).collect()
    };
    mesh.partition(&Partition::Minority);
    assert_eq!((cut(0), cut(1)), (vec![3, 4], vec![3, 4]));
    mesh.partition(&Partition::Majority);
    assert_eq!(cut(0), vec![0, 1, 2]);
    mesh.partition(&Partition::MajoritiesRing);
    assert_eq!((cut(0), cut(1)), (vec![3, 4], vec![0, 4]));
    mesh.partition(&Partition::Isolate {
        view: "A".into(),
        nodes: vec![1],
    });
    assert_eq!((cut(0), cut(1)), (vec![1], vec![]));
    // The cut link is really silent; B's link to the same node answers.
    let a1 = mesh.view("A")[1];
    let b1 = mesh.view("B")[1];
    assert!(command_timeout(a1, &[b"PING"], Duration::from_millis(300)).is_err());
    assert_eq!(
        command_timeout(b1, &[b"PING"], Duration::from_millis(300)).unwrap(),
        Reply::Simple("PONG".into())
    );
    mesh.heal();
    assert!(cut(0).is_empty() && cut(1).is_empty());
    assert!(command_timeout(mesh.view("A")[1], &[b"PING"], Duration::from_millis(300)).is_ok());
    assert!(mesh.view("nope").is_empty());
}

#[test]
fn an_open_connection_works_again_after_a_blackhole() {
    let (_c, p) = setup();
    let mut conn = Conn::open(p.addr());
    p.set(Mode::Blackhole);
    assert!(conn.call("PING").is_err());
    p.set(Mode::Pass);
    // The discarded PING never reached the server: exactly one reply comes back.
    assert_eq!(conn.call("ECHO hi").as_deref(), Ok("$2"));
    assert_eq!(conn.line().as_deref(), Ok("hi"));
}
