//! Kernel partitions (`docs/TESTING.md` §3.7): a network namespace that a test creates, runs
//! itself in, and cuts with nftables rules. Root only; without root, `ip netns` or `nft` the
//! test skips with a line that says why.
//!
//! A test that needs one calls [`Netns::create`] and [`Netns::run_test`]: the test binary runs
//! again inside the namespace (`ip netns exec`), with [`ENV`] naming it, and there starts its
//! nodes and clients, which only see each other: inside, all of 127.0.0.0/8 is local and the
//! host's servers are out of reach. A node listens on several loopback addresses
//! ([`crate::Builder::also_bind`]) and each client connects through its own, so that rules on
//! the destination address ([`Filter`]) cut one client's view of a node only. Namespaces are
//! named `ql-<pid>-<n>`; creating one deletes those of dead processes first.

use std::io;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Set inside a namespace made by [`Netns::run_test`]: its name.
pub const ENV: &str = "QL_NETNS";

static NEXT: AtomicUsize = AtomicUsize::new(1);

/// Whether this process runs inside a namespace made by [`Netns::run_test`].
///
/// # Panics
/// When [`ENV`] is set but `ip netns identify` does not place this process in the namespace
/// it names (say, in the host's): the test would otherwise put its nftables rules there.
pub fn inside() -> bool {
    let Some(name) = std::env::var_os(ENV) else {
        return false;
    };
    let pid = std::process::id().to_string();
    let here = Command::new("ip")
        .args(["netns", "identify", &pid])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    assert!(
        here == name.to_string_lossy(),
        "{ENV}={name:?} is set, but this process is in the network namespace {here:?}; unset it"
    );
    true
}

/// A network namespace this process created; deleted on drop (the processes started inside
/// are stopped by their owners, by PID, before).
#[derive(Debug)]
pub struct Netns {
    name: String,
}

impl Netns {
    /// Creates `ql-<pid>-<n>` with its loopback up. `Err` holds the reason to skip: not
    /// root, no `ip` or `nft`, or `ip netns add` refused.
    pub fn create() -> Result<Netns, String> {
        if !is_root() {
            return Err("needs root".into());
        }
        let nft = Command::new("nft").arg("--version").output();
        if !nft.is_ok_and(|o| o.status.success()) {
            return Err("needs nft (the nftables package)".into());
        }
        sweep();
        let pid = std::process::id();
        let name = format!("ql-{pid}-{}", NEXT.fetch_add(1, Ordering::Relaxed));
        ip(&["netns", "add", &name]).map_err(|e| format!("ip netns add: {e}"))?;
        let ns = Netns { name };
        ip(&["-n", &ns.name, "link", "set", "lo", "up"]).map_err(|e| format!("ip link: {e}"))?;
        Ok(ns)
    }

    /// The namespace's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Runs test `test` of this test binary inside the namespace (`--exact --nocapture`,
    /// one thread), with [`ENV`] set. Its output is printed through `print!` and `eprint!`,
    /// so the calling test's harness captures it as it captures its own.
    pub fn run_test(&self, test: &str) -> io::Result<ExitStatus> {
        let exe = std::env::current_exe()?;
        let out = Command::new("ip")
            .args(["netns", "exec", &self.name, "env"])
            .arg(format!("{ENV}={}", self.name))
            .arg(exe)
            .args([test, "--exact", "--nocapture", "--test-threads=1"])
            .stdin(Stdio::null())
            .output()?;
        print!("{}", String::from_utf8_lossy(&out.stdout));
        eprint!("{}", String::from_utf8_lossy(&out.stderr));
        Ok(out.status)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = ip(&["netns", "del", &self.name]);
    }
}

/// Whether the effective user is root (`Uid:` of `/proc/self/status`: real, effective, ...).
fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("Uid:"))
            .and_then(|ids| ids.split_whitespace().nth(1).map(|e| e == "0"))
            .unwrap_or(false)
    })
}

/// Deletes the `ql-<pid>-<n>` namespaces whose process is gone.
fn sweep() {
    let Ok(out) = Command::new("ip").args(["netns", "list"]).output() else {
        return;
    };
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let name = line.split_whitespace().next().unwrap_or("");
        let pid = name
            .strip_prefix("ql-")
            .and_then(|rest| rest.split('-').next())
            .and_then(|p| p.parse::<i32>().ok());
        let alive =
            |pid: i32| nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok();
        if pid.is_some_and(|p| !alive(p)) {
            let _ = ip(&["netns", "del", name]);
        }
    }
}

fn ip(args: &[&str]) -> io::Result<()> {
    run(Command::new("ip").args(args))
}

fn run(cmd: &mut Command) -> io::Result<()> {
    let out = cmd.stdin(Stdio::null()).output()?;
    if out.status.success() {
        Ok(())
    } else {
        Err(io::Error::other(format!(
            "{:?}: {}",
            cmd.get_args().collect::<Vec<_>>(),
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

/// The nftables filter on the output of the namespace this process runs in: table `inet
/// ql`, chain `out`. Every packet a process here sends passes it, requests and replies alike.
#[derive(Debug)]
pub struct Filter(());

impl Filter {
    /// Creates the table and its chain (accepting everything).
    pub fn new() -> io::Result<Filter> {
        nft(&["add", "table", "inet", "ql"])?;
        nft(&[
            "add",
            "chain",
            "inet",
            "ql",
            "out",
            "{ type filter hook output priority 0; policy accept; }",
        ])?;
        Ok(Filter(()))
    }

    /// Adds `rule` (nft syntax, such as `ip daddr 127.0.0.11 tcp dport 7311 drop`).
    pub fn add(&self, rule: &str) -> io::Result<()> {
        let mut args = vec!["add", "rule", "inet", "ql", "out"];
        args.extend(rule.split_whitespace());
        nft(&args)
    }

    /// Removes every rule: the network heals.
    pub fn heal(&self) -> io::Result<()> {
        nft(&["flush", "chain", "inet", "ql", "out"])
    }
}

fn nft(args: &[&str]) -> io::Result<()> {
    run(Command::new("nft").args(args))
}
