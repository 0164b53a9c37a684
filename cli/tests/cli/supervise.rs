//! Child supervision: stop the command when the lock is lost, forward signals, never let
//! two holders overlap.

use std::path::Path;
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use quorumlock::MonoTime;

use crate::common::*;

fn delete_everywhere(c: &quorumlock_harness::Cluster, name: &str) {
    for i in 0..c.len() {
        c.command(i, &[b"DEL", &key(name)]).unwrap();
    }
}

fn signal(child: &std::process::Child, sig: Signal) {
    kill(Pid::from_raw(i32::try_from(child.id()).unwrap()), sig).unwrap();
}

#[test]
fn lost_lock_stops_the_child_within_ttl_plus_grace() {
    let c = cluster();
    let run = spawn_run(
        &c,
        "lost",
        &["--json", "--ttl", "2s", "--grace", "1s"],
        &["sleep", "30"],
    );
    wait_held(&c, "lost");
    delete_everywhere(&c, "lost");
    let t0 = MonoTime::now();
    let out = run.wait_with_output().unwrap();
    let took = secs_since(t0);
    assert_eq!(code(&out), LOST, "{out:?}");
    assert!(took < 3.0 + 0.5, "took {took} s");
    let v = stderr_json(&out);
    assert_eq!(v["code"], "QL_LOST", "{v}");
    assert_eq!(v["exit"], LOST, "{v}");
    assert_eq!(v["lost_reason"], "Expired", "{v}");
    assert_eq!(v["child"]["signal"], 15, "sleep dies of SIGTERM: {v}");
    let pid = v["child"]["pid"].as_u64().unwrap();
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "child {pid} alive"
    );
}

#[test]
fn a_child_ignoring_sigterm_is_killed_after_the_grace() {
    let c = cluster();
    let script = "trap '' TERM; sleep 30; echo survived";
    let run = spawn_run(
        &c,
        "stubborn",
        &["--json", "--ttl", "2s", "--grace", "1s"],
        &["sh", "-c", script],
    );
    wait_held(&c, "stubborn");
    delete_everywhere(&c, "stubborn");
    let t0 = MonoTime::now();
    let out = run.wait_with_output().unwrap();
    let took = secs_since(t0);
    assert_eq!(code(&out), LOST, "{out:?}");
    // The loss is seen within the 2 s ttl and the kill follows the 1 s grace; the upper
    // bound only separates "killed" from "ran its 30 s" on a loaded machine.
    assert!((1.0..15.0).contains(&took), "took {took} s");
    assert_eq!(stderr_json(&out)["child"]["signal"], 9);
    assert!(!String::from_utf8_lossy(&out.stdout).contains("survived"));
}

#[test]
fn two_runs_on_one_name_never_overlap() {
    let c = cluster();
    let file =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("overlap-{}", std::process::id()));
    let _ = std::fs::remove_file(&file);
    let script = format!(
        "echo \"start $(date +%s%N)\" >> {f}; sleep 0.3; echo \"end $(date +%s%N)\" >> {f}",
        f = file.display()
    );
    let runs: Vec<_> = (0..4)
        .map(|_| spawn_run(&c, "overlap", &["--wait", "20s"], &["sh", "-c", &script]))
        .collect();
    for run in runs {
        let out = run.wait_with_output().unwrap();
        assert_eq!(code(&out), 0, "{out:?}");
    }
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::remove_file(&file).unwrap();
    let stamps: Vec<(String, u128)> = text
        .lines()
        .map(|l| {
            let (what, ns) = l.split_once(' ').unwrap();
            (what.to_owned(), ns.parse().unwrap())
        })
        .collect();
    assert_eq!(stamps.len(), 8, "{text}");
    for (i, pair) in stamps.chunks(2).enumerate() {
        assert_eq!(
            (pair[0].0.as_str(), pair[1].0.as_str()),
            ("start", "end"),
            "{text}"
        );
        assert!(pair[0].1 < pair[1].1, "{text}");
        if i > 0 {
            assert!(stamps[2 * i - 1].1 <= pair[0].1, "overlap: {text}");
        }
    }
}

#[test]
fn sigint_is_forwarded_and_the_lock_released() {
    let c = cluster();
    let run = spawn_run(&c, "ctrlc", &["--json"], &["sleep", "30"]);
    wait_held(&c, "ctrlc");
    let t0 = MonoTime::now();
    signal(&run, Signal::SIGINT);
    let out = run.wait_with_output().unwrap();
    assert_eq!(code(&out), 130, "{out:?}");
    assert!(secs_since(t0) < 2.0);
    let v = stderr_json(&out);
    assert_eq!(
        (v["ok"].clone(), v["child"]["signal"].clone()),
        (true.into(), 2.into()),
        "{v}"
    );
    let out = output(ql(&c).args(["status", "ctrlc"]));
    assert_eq!(code(&out), NOT_HELD, "{out:?}");
}

#[test]
fn sigterm_while_waiting_gives_up_without_leaving_keys() {
    let c = cluster();
    let mut holder = spawn_run(&c, "waiting", &[], &["sleep", "30"]);
    let value = wait_held(&c, "waiting");
    let waiter = spawn_run(&c, "waiting", &["--wait", "30s"], &["echo", "ran"]);
    std::thread::sleep(Duration::from_millis(500));
    signal(&waiter, Signal::SIGTERM);
    let out = waiter.wait_with_output().unwrap();
    assert_eq!(code(&out), 143, "{out:?}");
    assert!(out.stdout.is_empty(), "the command must not run");
    for i in 0..c.len() {
        let reply = c.command(i, &[b"GET", &key("waiting")]).unwrap();
        assert_eq!(reply.as_bytes(), Some(value.as_bytes()), "node {i}");
    }
    holder.kill().unwrap();
    holder.wait().unwrap();
}

/// The children of process `pid` (every thread's `children` list).
fn children(pid: u32) -> Vec<i32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
        .flat_map(|s| {
            s.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect::<Vec<i32>>()
        })
        .collect()
}

/// Whether `pid` still runs (not gone, not a zombie).
fn running(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit(')')
            .next()
            .is_some_and(|rest| !rest.trim_start().starts_with('Z'))
    })
}

/// A CLI killed with SIGKILL can neither release nor stop its command, and its lock expires
/// within the ttl: the command must die with it (the guard step's parent-death signal), or a
/// second holder would run next to it.
#[test]
fn the_command_dies_with_a_killed_cli() {
    let c = cluster();
    let mut run = spawn_run(&c, "killed", &["--ttl", "2s"], &["sleep", "30"]);
    wait_held(&c, "killed");
    let kids = children(run.id());
    assert_eq!(kids.len(), 1, "one command: {kids:?}");
    assert!(running(kids[0]));
    signal(&run, Signal::SIGKILL);
    run.wait().unwrap();
    let t0 = MonoTime::now();
    while running(kids[0]) {
        if secs_since(t0) > 2.0 {
            let _ = kill(Pid::from_raw(kids[0]), Signal::SIGKILL);
            panic!("the command {} outlived its CLI", kids[0]);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
