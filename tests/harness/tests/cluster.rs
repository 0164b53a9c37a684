//! The harness against real `redis-server` processes.

// Test helpers outside `#[test]` functions panic on purpose, like the tests themselves.
#![allow(clippy::unwrap_used)]

use std::io;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use quorumlock_harness::{Cluster, Persist, Reply, command, command_timeout, run};
use serde_json::Value;

const HARNESS: &str = env!("CARGO_BIN_EXE_ql-harness");

fn ping(c: &Cluster, i: usize) -> Reply {
    c.command(i, &[b"PING"]).unwrap()
}

fn gone(pid: u32) -> bool {
    !Path::new(&format!("/proc/{pid}")).exists() || !run::pid_alive(pid)
}

#[test]
fn ping_set_get_pause_resume() {
    let c = Cluster::builder().nodes(3).start().unwrap();
    assert_eq!(c.len(), 3);
    for i in 0..3 {
        assert_eq!(ping(&c, i), Reply::Simple("PONG".into()));
        assert!(c.url(i).starts_with("redis://127.0.0.1:"));
        assert!(c.log_path(i).is_file());
    }
    let urls = c.urls();
    assert_eq!(urls.len(), 3);
    assert!(urls[0] != urls[1] && urls[1] != urls[2] && urls[0] != urls[2]);

    assert_eq!(
        c.command(0, &[b"SET", b"k", b"v"]).unwrap(),
        Reply::Simple("OK".into())
    );
    assert_eq!(
        c.command(0, &[b"GET", b"k"]).unwrap().as_bytes(),
        Some(&b"v"[..])
    );
    assert!(c.command(0, &[b"GET", b"nope"]).unwrap().is_nil());
    assert_eq!(c.keys(0, "*").unwrap(), vec![b"k".to_vec()]);
    assert!(c.command(0, &[b"NOSUCHCOMMAND"]).unwrap().is_error());

    c.pause(1).unwrap();
    let err = c
        .command_timeout(1, &[b"PING"], Duration::from_millis(200))
        .unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::TimedOut);
    c.resume(1).unwrap();
    assert_eq!(ping(&c, 1), Reply::Simple("PONG".into()));
}

#[test]
fn debug_sleep_client_pause_script_flush() {
    let c = Cluster::builder()
        .nodes(1)
        .persist(Persist::None)
        .start()
        .unwrap();
    c.debug_sleep(0, 0.6).unwrap();
    let slept = c.command_timeout(0, &[b"PING"], Duration::from_millis(200));
    assert_eq!(slept.unwrap_err().kind(), io::ErrorKind::TimedOut);
    // Reads still work during a WRITE pause; the pause then ends on its own.
    std::thread::sleep(Duration::from_millis(600));
    c.client_pause(0, 100, "WRITE").unwrap();
    assert!(c.command(0, &[b"GET", b"x"]).unwrap().is_nil());
    c.script_flush(0).unwrap();
    assert_eq!(
        c.command(0, &[b"SET", b"x", b"1"]).unwrap(),
        Reply::Simple("OK".into())
    );
}

fn set_kill_restart_get(persist: Persist) -> Reply {
    let mut c = Cluster::builder()
        .nodes(1)
        .persist(persist)
        .start()
        .unwrap();
    let port = c.addr(0);
    let old_pid = c.pid(0);
    c.command(0, &[b"SET", b"lk", b"tokA", b"PX", b"60000"])
        .unwrap();
    c.kill(0);
    assert!(!c.is_running(0));
    assert!(gone(old_pid));
    assert!(command_timeout(port, &[b"PING"], Duration::from_millis(200)).is_err());
    c.restart(0, persist).unwrap();
    assert_eq!(c.addr(0), port);
    assert_ne!(c.pid(0), old_pid);
    c.command(0, &[b"GET", b"lk"]).unwrap()
}

#[test]
fn restart_always_keeps_the_key() {
    let reply = set_kill_restart_get(Persist::Always);
    assert_eq!(reply.as_bytes(), Some(&b"tokA"[..]), "{reply:?}");
}

#[test]
fn restart_none_loses_the_key() {
    assert!(set_kill_restart_get(Persist::None).is_nil());
}

#[test]
fn drop_kills_every_node_and_deletes_the_folder() {
    let c = Cluster::builder()
        .nodes(2)
        .persist(Persist::None)
        .start()
        .unwrap();
    c.pause(0).unwrap(); // SIGKILL must end a stopped node too.
    let pids = [c.pid(0), c.pid(1)];
    let dir = c.run_dir().to_path_buf();
    assert!(dir.join("owner.pid").is_file() && dir.join("n1/pid").is_file());
    drop(c);
    for pid in pids {
        assert!(
            !Path::new(&format!("/proc/{pid}")).exists(),
            "pid {pid} survived"
        );
    }
    assert!(!dir.exists());
}

#[test]
fn sweep_kills_orphans_of_dead_owners_only() {
    /// Owns the orphan: kills and reaps it when dropped, unless it was reaped already (std
    /// never signals a child whose status it has collected, so a reused PID is safe).
    struct Reaper(std::process::Child);
    impl Drop for Reaper {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    let live = Cluster::builder()
        .nodes(1)
        .persist(Persist::None)
        .start()
        .unwrap();
    // An orphan: a run folder whose owner is dead, with a server nobody waits for.
    let dead_owner = Command::new("true").spawn().unwrap();
    let dead_pid = dead_owner.id();
    drop(dead_owner.wait_with_output());
    let dir = run::new_run_dir().unwrap();
    std::fs::write(dir.join("owner.pid"), format!("{dead_pid} 1\n")).unwrap();
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    std::fs::create_dir(dir.join("n0")).unwrap();
    let orphan = Command::new("redis-server")
        .args([
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
        ])
        .args(["--appendonly", "no", "--logfile", ""])
        .current_dir(dir.join("n0"))
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Killed if the test fails before the sweep does it.
    let mut orphan = Reaper(orphan);
    std::fs::write(dir.join("n0/pid"), format!("{}\n", orphan.0.id())).unwrap();
    std::fs::write(dir.join("n0/port"), format!("{port}\n")).unwrap();
    // The sweep only kills a redis-server it finds on its recorded port: wait until the orphan
    // listens (on a loaded machine it may take a while to start).
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let up = (0..500).any(|_| {
        let pong = command_timeout(addr, &[b"PING"], Duration::from_millis(100)).is_ok();
        if !pong {
            std::thread::sleep(Duration::from_millis(10));
        }
        pong
    });
    assert!(up, "the orphan never answered PING");

    let report = run::sweep(false);
    assert!(report.killed >= 1, "{report:?}");
    assert!(orphan.0.wait().unwrap().signal().is_some());
    assert!(!dir.exists());
    // The live cluster's folder and node are untouched.
    assert!(live.run_dir().is_dir());
    assert_eq!(ping(&live, 0), Reply::Simple("PONG".into()));
}

fn harness(args: &[&str]) -> Output {
    Command::new(HARNESS).args(args).output().unwrap()
}

#[test]
fn binary_start_ctl_stop_round_trip() {
    let me = std::process::id().to_string();
    let out = harness(&[
        "start",
        "--nodes",
        "2",
        "--persist",
        "none",
        "--parent",
        &me,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    let up: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(up["event"], "up");
    let run_dir = up["run_dir"].as_str().unwrap().to_string();
    let supervisor = u32::try_from(up["supervisor_pid"].as_u64().unwrap()).unwrap();
    let nodes = up["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 2);
    let mut pids = vec![supervisor];
    for n in nodes {
        assert_eq!(n["persist"], "none");
        let addr = n["addr"].as_str().unwrap().parse().unwrap();
        assert_eq!(format!("redis://{addr}"), n["url"].as_str().unwrap());
        assert_eq!(
            command(addr, &[b"PING"]).unwrap(),
            Reply::Simple("PONG".into())
        );
        let pid = u32::try_from(n["pid"].as_u64().unwrap()).unwrap();
        // The supervisor blocks stop signals for sigwait; its servers must not inherit that.
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        assert!(status.contains("SigBlk:\t0000000000000000"), "{status}");
        pids.push(pid);
    }
    let node0 = nodes[0]["addr"].as_str().unwrap().parse().unwrap();

    let ctl = |json: &str| {
        let out = harness(&["ctl", &run_dir, json]);
        let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
        (out.status.success(), answer)
    };
    let (ok, a) = ctl(r#"{"op":"pause","node":0}"#);
    assert!(
        ok && a["ok"] == true && a["op"] == "pause" && a["t_us"].is_u64(),
        "{a}"
    );
    assert!(command_timeout(node0, &[b"PING"], Duration::from_millis(200)).is_err());
    let (ok, a) = ctl(r#"{"op":"resume","node":0}"#);
    assert!(ok && a["ok"] == true, "{a}");
    assert_eq!(
        command(node0, &[b"PING"]).unwrap(),
        Reply::Simple("PONG".into())
    );
    let (ok, a) = ctl(r#"{"op":"now"}"#);
    assert!(ok && a["t_us"].as_u64().unwrap() > 0);
    let skew_file = Path::new(&run_dir).join("n0").join("skew");
    let (ok, a) = ctl(r#"{"op":"skew","node":0,"offset_ms":10000,"rate":1.5}"#);
    assert!(ok && a["ok"] == true, "{a}");
    assert_eq!(std::fs::read_to_string(&skew_file).unwrap(), "10000 1.5\n");
    let (ok, a) = ctl(r#"{"op":"skew","node":0,"reset":true}"#);
    assert!(ok && a["ok"] == true, "{a}");
    assert_eq!(std::fs::read_to_string(&skew_file).unwrap(), "reset\n");
    let (ok, a) = ctl(r#"{"op":"skew","node":0,"rate":0}"#);
    assert!(!ok && a["error"].is_string(), "a zero rate is refused: {a}");
    let (ok, a) = ctl(r#"{"op":"mark_fsync","node":0}"#);
    assert!(!ok, "node 0 is not an everysec node: {a}");
    let (ok, a) = ctl(r#"{"op":"pause","node":9}"#);
    assert!(!ok && a["ok"] == false && a["error"].is_string(), "{a}");
    let (ok, _) = ctl(r#"{"op":"no_such_op"}"#);
    assert!(!ok);

    let out = harness(&["stop", &run_dir]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for pid in pids {
        assert!(gone(pid), "pid {pid} survived stop");
    }
    assert!(!Path::new(&run_dir).exists());
}

#[test]
fn binary_exec_passes_nodes_and_exit_code() {
    let script =
        r#"test "$(echo "$QL_NODES" | tr , '\n' | wc -l)" = 2 && test -d "$QL_RUN_DIR" && exit 7"#;
    let out = harness(&[
        "exec",
        "--nodes",
        "2",
        "--persist",
        "none",
        "--",
        "sh",
        "-c",
        script,
    ]);
    assert_eq!(
        out.status.code(),
        Some(7),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Death by signal maps to 128 + signal; the command can receive SIGTERM at all.
    let out = harness(&[
        "exec",
        "--nodes",
        "1",
        "--persist",
        "none",
        "--",
        "sh",
        "-c",
        "kill -TERM $$",
    ]);
    assert_eq!(
        out.status.code(),
        Some(143),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn tls_nodes_take_no_plain_tcp_and_keep_tls_across_restarts() {
    use quorumlock_harness::{ServerCert, Tls};
    let mut c = Cluster::builder()
        .nodes(1)
        .persist(Persist::None)
        .tls(Tls::Mutual)
        .tls_node_cert(0, ServerCert::Good)
        .start()
        .unwrap();
    let (mode, certs) = c.tls().unwrap();
    assert_eq!(mode, Tls::Mutual);
    for f in [
        certs.ca(),
        certs.client_cert(),
        certs.client_key(),
        certs.other_ca(),
    ] {
        assert!(f.is_file(), "{}", f.display());
    }
    assert!(c.url(0).starts_with("rediss://127.0.0.1:") && c.url(0).contains("&tls_key="));
    // The harness talks to the node on its Unix socket; plain TCP on the TLS port gets nothing.
    assert_eq!(
        c.command(0, &[b"PING"]).unwrap(),
        Reply::Simple("PONG".into())
    );
    let plain = quorumlock_harness::command_timeout(c.addr(0), &[b"PING"], Duration::from_secs(2));
    assert!(plain.is_err(), "{plain:?}");
    c.restart(0, Persist::None).unwrap();
    assert_eq!(
        c.command(0, &[b"PING"]).unwrap(),
        Reply::Simple("PONG".into())
    );
    let tls_port = c.command(0, &[b"CONFIG", b"GET", b"tls-port"]).unwrap();
    let port = c.addr(0).port().to_string();
    match &tls_port {
        Reply::Array(kv) => assert_eq!(kv[1].as_bytes(), Some(port.as_bytes()), "{tls_port:?}"),
        other => panic!("CONFIG GET tls-port: {other:?}"),
    }
}

#[test]
fn binary_exec_with_mtls_exports_the_certificates() {
    let script = r#"case "$QL_NODES" in rediss://*tls_ca=*tls_cert=*tls_key=*) ;; *) exit 3;; esac
test -f "$QL_TLS_CA" && test -f "$QL_TLS_CERT" && test -f "$QL_TLS_KEY" && test -f "$QL_TLS_OTHER_CA" && exit 7"#;
    let out = harness(&[
        "exec",
        "--nodes",
        "1",
        "--persist",
        "none",
        "--mtls",
        "--",
        "sh",
        "-c",
        script,
    ]);
    assert_eq!(
        out.status.code(),
        Some(7),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
