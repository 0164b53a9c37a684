//! Client settings every client of the same nodes must agree on, or that operators need:
//! `--max-ttl`, `--quarantine`, `--eviction-check` and their config-file keys, plus the
//! file-only `quarantine_margin`, `connect_timeout` and `notify` (docs/cli.md).

use std::path::{Path, PathBuf};
use std::time::Duration;

use quorumlock::MonoTime;
use quorumlock_harness::{Cluster, Persist};

use crate::common::*;

/// A fresh folder for a config file.
fn dir(tag: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("settings-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Writes `quorumlock.toml` in `dir` with the cluster's nodes and `extra` lines.
fn write_config(dir: &Path, c: &Cluster, extra: &str) {
    let list: Vec<String> = c.urls().iter().map(|u| format!("{u:?}")).collect();
    let text = format!("nodes = [{}]\n{extra}", list.join(", "));
    std::fs::write(dir.join("quorumlock.toml"), text).unwrap();
}

/// The child's `QUORUMLOCK_VALIDITY_MS` after a successful run with `args`.
fn validity_ms(cmd: &mut std::process::Command) -> u64 {
    let out = output(cmd.args(["--", "sh", "-c", "echo $QUORUMLOCK_VALIDITY_MS"]));
    assert_eq!(code(&out), 0, "{out:?}");
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn max_ttl_allows_a_longer_ttl_and_without_it_the_ttl_is_a_usage_error() {
    let c = cluster();
    let validity = validity_ms(ql(&c).args(["--max-ttl", "2m", "run", "long", "--ttl", "90s"]));
    assert!(validity > 85_000 && validity <= 90_000, "{validity}");

    // Without --max-ttl the engine's limit (60 s) refuses the ttl: exit 113, nothing sent.
    let out = output(ql(&c).args(["run", "long", "--ttl", "90s", "--", "true"]));
    assert_eq!(code(&out), USAGE, "{out:?}");
    let msg = stderr(&out);
    assert!(
        msg.contains("QL_INVALID") && msg.contains("exceeds max_ttl") && msg.contains("--max-ttl"),
        "{msg}"
    );
    let out = output(ql(&c).args(["--json", "run", "long", "--ttl", "90s", "--", "true"]));
    assert_eq!(code(&out), USAGE, "{out:?}");
    let v = stderr_json(&out);
    assert_eq!(v["code"], "QL_INVALID", "{v}");
    let message = v["message"].as_str().unwrap();
    assert!(
        message.contains("max_ttl") && message.contains("--max-ttl"),
        "{v}"
    );

    // A ttl above a lowered max_ttl, the default one included, is refused the same way;
    // the admin subcommands still work.
    let out = output(ql(&c).args(["--max-ttl", "5s", "run", "long", "--", "true"]));
    assert_eq!(code(&out), USAGE, "{out:?}");
    assert!(
        stderr(&out).contains("ttl 10s exceeds max_ttl 5s"),
        "{out:?}"
    );
    let out = output(ql(&c).args(["--max-ttl", "5s", "status", "long"]));
    assert_eq!(code(&out), NOT_HELD, "{out:?}");

    // From the file, from the environment, and the flag over both.
    let d = dir("maxttl");
    write_config(&d, &c, "max_ttl = \"2m\"\nttl = \"90s\"\n");
    let validity = validity_ms(bin().current_dir(&d).args(["run", "long"]));
    assert!(validity > 85_000, "{validity}");
    let out = output(
        bin()
            .current_dir(&d)
            .args(["--max-ttl", "1m", "run", "long", "--", "true"]),
    );
    assert_eq!(code(&out), USAGE, "the flag overrides the file: {out:?}");
    let out = output(
        ql(&c)
            .env("QUORUMLOCK_MAX_TTL", "2m")
            .args(["run", "long", "--ttl", "90s", "--", "true"]),
    );
    assert_eq!(code(&out), 0, "QUORUMLOCK_MAX_TTL: {out:?}");
    let out = output(ql(&c).args(["--max-ttl", "forever", "ping"]));
    assert_eq!(code(&out), USAGE, "{out:?}");
    assert!(stderr(&out).contains("--max-ttl"), "{out:?}");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn quarantine_off_counts_fresh_nodes_without_durable_writes() {
    let c = Cluster::builder()
        .nodes(3)
        .persist(Persist::None)
        .start()
        .expect("start redis nodes");
    let started = MonoTime::now();
    // Just started, without AOF: quarantined for max_ttl + margin (65 s) by default.
    let out = output(ql(&c).args(["--json", "run", "q", "--", "true"]));
    assert_eq!(code(&out), NODES, "{out:?}");
    assert_eq!(stderr_json(&out)["nodes"][0]["kind"], "Quarantined");
    let out = output(ql(&c).args(["--quarantine", "strict", "run", "q", "--", "true"]));
    assert_eq!(code(&out), NODES, "{out:?}");
    let out = output(ql(&c).args(["--quarantine", "off", "run", "q", "--", "true"]));
    assert_eq!(code(&out), 0, "{out:?}");
    let out = output(
        ql(&c)
            .env("QUORUMLOCK_QUARANTINE", "off")
            .args(["run", "q", "--", "true"]),
    );
    assert_eq!(code(&out), 0, "QUORUMLOCK_QUARANTINE: {out:?}");

    let d = dir("quarantine");
    write_config(&d, &c, "quarantine = \"off\"\n");
    let out = output(bin().current_dir(&d).args(["run", "q", "--", "true"]));
    assert_eq!(code(&out), 0, "from the file: {out:?}");
    let out = output(
        bin()
            .current_dir(&d)
            .args(["--quarantine", "on", "run", "q", "--", "true"]),
    );
    assert_eq!(code(&out), NODES, "the flag overrides the file: {out:?}");

    // quarantine_margin: with max_ttl 1s and a 500 ms margin the nodes count once they
    // have been up 1.5 s (uptime is read in whole seconds: 2 s); with the default margin
    // (5 s) only after 6 s.
    write_config(
        &d,
        &c,
        "max_ttl = \"1s\"\nttl = \"500ms\"\nquarantine_margin = \"500ms\"\n",
    );
    let wait =
        Duration::from_millis(2500).saturating_sub(MonoTime::now().saturating_since(started));
    std::thread::sleep(wait);
    let out = output(bin().current_dir(&d).args(["run", "q", "--", "true"]));
    assert_eq!(code(&out), 0, "margin 500ms: {out:?}");
    write_config(&d, &c, "max_ttl = \"1s\"\nttl = \"500ms\"\n");
    let out = output(bin().current_dir(&d).args(["run", "q", "--", "true"]));
    assert_eq!(code(&out), NODES, "default margin: {out:?}");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn eviction_check_warn_or_off_accepts_an_evicting_policy() {
    let c = cluster();
    // A memory limit with a policy that may evict lock keys.
    for i in 0..c.len() {
        let set = [
            &b"CONFIG"[..],
            b"SET",
            b"maxmemory",
            b"512mb",
            b"maxmemory-policy",
            b"allkeys-lru",
        ];
        c.command(i, &set).unwrap().into_result().unwrap();
    }
    let out = output(ql(&c).args(["--json", "run", "ev", "--", "true"]));
    assert_eq!(code(&out), NODES, "refused by default: {out:?}");
    assert_eq!(stderr_json(&out)["nodes"][0]["kind"], "EvictionPolicy");
    let out = output(ql(&c).args(["--eviction-check", "warn", "run", "ev", "--", "true"]));
    assert_eq!(code(&out), 0, "{out:?}");
    let d = dir("eviction");
    write_config(&d, &c, "eviction_check = \"off\"\n");
    let out = output(bin().current_dir(&d).args(["run", "ev", "--", "true"]));
    assert_eq!(code(&out), 0, "from the file: {out:?}");
    let out = output(bin().current_dir(&d).args([
        "--eviction-check",
        "refuse",
        "run",
        "ev",
        "--",
        "true",
    ]));
    assert_eq!(code(&out), NODES, "the flag overrides the file: {out:?}");
    let out = output(ql(&c).args(["--eviction-check", "ignore", "ping"]));
    assert_eq!(code(&out), USAGE, "{out:?}");
    assert!(stderr(&out).contains("refuse, warn, off"), "{out:?}");
    std::fs::remove_dir_all(&d).unwrap();
}

/// `PUBLISH` calls node `i` counted since its last `CONFIG RESETSTAT` (scripts included).
fn publishes(c: &Cluster, i: usize) -> u64 {
    let info = c.command(i, &[b"INFO", b"commandstats"]).unwrap();
    let text = String::from_utf8_lossy(info.as_bytes().unwrap()).into_owned();
    text.lines()
        .find_map(|l| l.strip_prefix("cmdstat_publish:calls="))
        .map_or(0, |rest| rest.split(',').next().unwrap().parse().unwrap())
}

#[test]
fn file_only_settings_notify_and_connect_timeout() {
    let c = cluster();
    let d = dir("notify");
    write_config(
        &d,
        &c,
        "notify = false\nconnect_timeout = \"2s\"\nquarantine_margin = \"10s\"\n",
    );
    c.command(0, &[b"CONFIG", b"RESETSTAT"]).unwrap();
    // A waiter's mark and its place in the key's line (REDLOCK.md §9): with notification on,
    // the release names it.
    let mark = || {
        c.command(0, &[b"SET", b"quorumlock:{nt}:w", b"1", b"PX", b"60000"])
            .unwrap();
        c.command(0, &[b"ZADD", b"quorumlock:{nt}:q", b"0", b"other.1"])
            .unwrap();
    };
    mark();
    let out = output(bin().current_dir(&d).args(["run", "nt", "--", "true"]));
    assert_eq!(code(&out), 0, "{out:?}");
    assert_eq!(
        publishes(&c, 0),
        0,
        "notify = false: the release publishes nothing"
    );
    mark();
    let out = output(ql(&c).args(["run", "nt", "--", "true"]));
    assert_eq!(code(&out), 0, "{out:?}");
    assert_eq!(publishes(&c, 0), 1, "notify on by default");

    let cases = [
        ("notify = \"yes\"", "notify in"),
        ("connect_timeout = \"soon\"", "connect_timeout in"),
        ("quarantine_margin = 5", "quarantine_margin in"),
        ("max_ttl = \"2 fortnights\"", "max_ttl in"),
        ("quarantine = \"maybe\"", "on, strict, off"),
        ("eviction_check = \"ignore\"", "refuse, warn, off"),
    ];
    for (line, needle) in cases {
        write_config(&d, &c, &format!("{line}\n"));
        let out = output(bin().current_dir(&d).arg("ping"));
        assert_eq!(code(&out), USAGE, "{line}: {out:?}");
        let msg = stderr(&out);
        assert!(
            msg.contains(needle) && msg.contains("quorumlock.toml"),
            "{line}: {msg}"
        );
    }
    // A value the engine refuses is a usage error too.
    write_config(&d, &c, "connect_timeout = \"0s\"\n");
    let out = output(bin().current_dir(&d).arg("ping"));
    assert_eq!(code(&out), USAGE, "{out:?}");
    assert!(stderr(&out).contains("connect_timeout"), "{out:?}");
    std::fs::remove_dir_all(&d).unwrap();
}
