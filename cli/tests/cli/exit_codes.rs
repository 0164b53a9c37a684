//! Exit codes of `run` (docs/cli.md): the command's status passed on, and the CLI's own
//! codes for busy locks, unreachable nodes and bad input.

use crate::common::*;

#[test]
fn success_and_child_codes_pass_through() {
    let c = cluster();
    let out = output(ql(&c).args(["run", "pass", "--", "true"]));
    assert_eq!(code(&out), 0, "{out:?}");
    let out = output(ql(&c).args(["run", "pass", "--", "sh", "-c", "exit 3"]));
    assert_eq!(code(&out), 3, "{out:?}");
    // The lock was released after each run: a third run gets it at once.
    let out = output(ql(&c).args(["run", "pass", "--no-wait", "--", "true"]));
    assert_eq!(code(&out), 0, "{out:?}");
}

#[test]
fn child_killed_by_a_signal_gives_128_plus_n() {
    let c = cluster();
    let out = output(ql(&c).args(["run", "sig", "--", "sh", "-c", "kill -9 $$"]));
    assert_eq!(code(&out), 137, "{out:?}");
    let out = output(ql(&c).args(["run", "sig", "--", "sh", "-c", "kill -TERM $$"]));
    assert_eq!(code(&out), 143, "{out:?}");
}

/// The child's environment: `(validity ms, token or "none", name)`.
fn child_env(c: &quorumlock_harness::Cluster, extra: &[&str]) -> (u64, String, String) {
    let script = "echo \"$QUORUMLOCK_VALIDITY_MS ${QUORUMLOCK_TOKEN-none} $QUORUMLOCK_NAME\"";
    let mut cmd = ql(c);
    cmd.args(["run", "envs", "--ttl", "3s"])
        .args(extra)
        .args(["--", "sh", "-c", script]);
    let out = output(&mut cmd);
    assert_eq!(code(&out), 0, "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    let fields: Vec<&str> = text.split_whitespace().collect();
    assert_eq!(fields.len(), 3, "{text}");
    let validity: u64 = fields[0].parse().unwrap();
    assert!(validity > 2000 && validity <= 3000, "{text}");
    (validity, fields[1].to_owned(), fields[2].to_owned())
}

#[test]
fn child_environment_has_validity_and_an_increasing_token() {
    let c = cluster();
    let (_, first, name) = child_env(&c, &[]);
    assert_eq!(name, "envs");
    let first: u64 = first.parse().unwrap();
    assert!(first > 1 << 50, "{first}");
    let (_, second, _) = child_env(&c, &[]);
    assert!(
        second.parse::<u64>().unwrap() > first,
        "{second} <= {first}"
    );
    let (_, none, _) = child_env(&c, &["--no-fence"]);
    assert_eq!(none, "none");
    let out = output(ql(&c).args(["--json", "run", "envs", "--", "true"]));
    assert_eq!(code(&out), 0, "{out:?}");
    assert!(stderr_json(&out)["token"].as_u64().unwrap() > first);
}

#[test]
fn busy_with_no_wait_exits_110_and_a_short_wait_too() {
    let c = cluster();
    let mut holder = spawn_run(&c, "busy", &[], &["sleep", "30"]);
    wait_held(&c, "busy");
    let out = output(ql(&c).args(["run", "busy", "--no-wait", "--", "true"]));
    assert_eq!(code(&out), BUSY, "{out:?}");
    let t0 = quorumlock::MonoTime::now();
    let out = output(ql(&c).args(["--json", "run", "busy", "--wait", "500ms", "--", "true"]));
    assert_eq!(code(&out), BUSY, "{out:?}");
    assert!(secs_since(t0) < 5.0);
    let v = stderr_json(&out);
    assert_eq!(v["ok"], false);
    assert_eq!(v["code"], "QL_BUSY");
    assert_eq!(v["exit"], BUSY);
    assert!(v["attempts"].as_u64().unwrap() >= 1, "{v}");
    assert_eq!(v["nodes"].as_array().unwrap().len(), 3, "{v}");
    assert!(v["nodes"][0]["address"].is_string(), "{v}");
    holder.kill().unwrap();
    holder.wait().unwrap();
}

#[test]
fn unreachable_nodes_exit_111() {
    let out = output(bin().args([
        "--json",
        "--nodes",
        "redis://127.0.0.1:1,redis://127.0.0.1:2,redis://127.0.0.1:3",
        "run",
        "x",
        "--",
        "true",
    ]));
    assert_eq!(code(&out), NODES, "{out:?}");
    let v = stderr_json(&out);
    assert_eq!(v["code"], "QL_CONNECTION", "{v}");
    assert_eq!(v["nodes"][1]["kind"], "ConnectionRefused", "{v}");
}

#[test]
fn bad_input_exits_113() {
    let c = cluster();
    let cases: &[&[&str]] = &[
        &["run", "x", "--ttl", "10x", "--", "true"],
        &["run", "x", "--wait", "soon", "--", "true"],
        &["run", "x", "--grace", "", "--", "true"],
        &["run", "x", "--ttl", "5m", "--", "true"],
        &["run", "x", "--wait", "1s", "--no-wait", "--", "true"],
        &["run", "x"],
        &["frobnicate"],
    ];
    for args in cases {
        let out = output(ql(&c).args(*args));
        assert_eq!(code(&out), USAGE, "{args:?}: {out:?}");
        assert!(!out.stderr.is_empty(), "{args:?}: no message");
    }
    let out = output(bin().args(["--nodes", "http://127.0.0.1:1", "run", "x", "--", "true"]));
    assert_eq!(code(&out), USAGE, "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("redis://"));
    let out = output(bin().args(["run", "x", "--", "true"]));
    assert_eq!(code(&out), USAGE, "no nodes: {out:?}");
    let out = output(bin().args(["--json", "--nodes", "redis//x", "ping"]));
    assert_eq!(code(&out), USAGE, "{out:?}");
    assert_eq!(stdout_json(&out)["code"], "QL_INVALID");
}

#[test]
fn missing_command_127_and_help_0() {
    let c = cluster();
    let out = output(ql(&c).args(["run", "nx", "--", "/nonexistent/command"]));
    assert_eq!(code(&out), 127, "{out:?}");
    // The lock was given back.
    let out = output(ql(&c).args(["status", "nx"]));
    assert_eq!(code(&out), NOT_HELD, "{out:?}");
    let out = output(bin().arg("--help"));
    assert_eq!(code(&out), 0);
    assert!(String::from_utf8_lossy(&out.stdout).contains("run"));
}
