//! Helpers for the CLI tests: the binary, a cluster, JSON output, polling.

use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use quorumlock::MonoTime;
use quorumlock_harness::Cluster;
use serde_json::Value;

/// Exit codes from docs/cli.md.
pub const BUSY: i32 = 110;
pub const NODES: i32 = 111;
pub const LOST: i32 = 112;
pub const USAGE: i32 = 113;
pub const NOT_HELD: i32 = 114;

/// A 3-node cluster.
pub fn cluster() -> Cluster {
    Cluster::builder()
        .nodes(3)
        .start()
        .expect("start redis nodes")
}

/// The binary with a clean environment (no nodes, config, client settings or log filter from
/// outside), run in a folder without a config file.
pub fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_quorumlock"));
    c.env_remove("QUORUMLOCK_NODES")
        .env_remove("QUORUMLOCK_CONFIG")
        .env_remove("QUORUMLOCK_LOG")
        .env_remove("QUORUMLOCK_MAX_TTL")
        .env_remove("QUORUMLOCK_QUARANTINE")
        .env_remove("QUORUMLOCK_EVICTION_CHECK")
        .current_dir(env!("CARGO_TARGET_TMPDIR"))
        .stdin(Stdio::null());
    c
}

/// The binary with `--nodes` set to the cluster's URLs.
pub fn ql(cluster: &Cluster) -> Command {
    let mut c = bin();
    c.arg("--nodes").arg(cluster.urls().join(","));
    c
}

/// Runs the command to the end.
pub fn output(cmd: &mut Command) -> Output {
    cmd.output().expect("run quorumlock")
}

/// The exit code (panics when a signal killed the CLI itself).
pub fn code(out: &Output) -> i32 {
    out.status
        .code()
        .unwrap_or_else(|| panic!("the CLI was killed: {out:?}"))
}

/// stdout as one JSON document.
pub fn stdout_json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {out:?}"))
}

/// The last line of stderr as JSON (`run --json`).
pub fn stderr_json(out: &Output) -> Value {
    let text = String::from_utf8_lossy(&out.stderr);
    let line = text.lines().last().unwrap_or("");
    serde_json::from_str(line).unwrap_or_else(|e| panic!("last stderr line not JSON ({e}): {text}"))
}

/// Starts `quorumlock run NAME <extra> -- <cmd>` in the background with piped output.
pub fn spawn_run(cluster: &Cluster, name: &str, extra: &[&str], cmd: &[&str]) -> Child {
    ql(cluster)
        .arg("run")
        .arg(name)
        .args(extra)
        .arg("--")
        .args(cmd)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn quorumlock run")
}

/// Waits (up to 10 s) until a quorum holds NAME; returns the holder's value.
pub fn wait_held(cluster: &Cluster, name: &str) -> String {
    let deadline = MonoTime::now() + Duration::from_secs(10);
    loop {
        let out = output(ql(cluster).args(["--json", "status", name]));
        let v = stdout_json(&out);
        if let Some(holder) = v["holder"].as_str() {
            return holder.to_owned();
        }
        assert!(MonoTime::now() < deadline, "{name} never became held: {v}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The lock key of NAME with the default prefix.
pub fn key(name: &str) -> Vec<u8> {
    format!("quorumlock:{{{name}}}").into_bytes()
}

/// Seconds elapsed since `t0`.
pub fn secs_since(t0: MonoTime) -> f64 {
    MonoTime::now().saturating_since(t0).as_secs_f64()
}
