//! `status`, `release`, `break`, `ping`, their JSON shapes, and where nodes come from.

use std::path::PathBuf;
use std::process::Stdio;

use crate::common::*;

#[test]
fn status_release_and_break() {
    let c = cluster();
    let out = output(ql(&c).args(["--json", "status", "adm"]));
    assert_eq!(code(&out), NOT_HELD, "{out:?}");
    let v = stdout_json(&out);
    assert_eq!(
        (v["held"].clone(), v["holder"].clone()),
        (false.into(), serde_json::Value::Null)
    );
    assert_eq!(
        (v["key"].clone(), v["quorum"].clone()),
        ("quorumlock:{adm}".into(), 2.into())
    );
    let nodes = v["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 3);
    assert!(
        nodes
            .iter()
            .all(|n| n["kind"] == "Ok" && n["value"].is_null()),
        "{v}"
    );

    let run = spawn_run(&c, "adm", &["--ttl", "5s"], &["sleep", "30"]);
    let value = wait_held(&c, "adm");
    assert_eq!(value.len(), 40);
    let out = output(ql(&c).args(["--json", "status", "adm"]));
    assert_eq!(code(&out), 0);
    let v = stdout_json(&out);
    for n in v["nodes"].as_array().unwrap() {
        assert_eq!(n["value"], value.as_str(), "{v}");
        let ttl = n["ttl_ms"].as_u64().unwrap();
        assert!(ttl > 0 && ttl <= 5000, "{v}");
    }
    let human = output(ql(&c).args(["status", "adm"]));
    assert!(String::from_utf8_lossy(&human.stdout).contains(&format!("held by {}", &value[..12])));

    let wrong = "0123456789abcdef0123456789abcdef01234567";
    let out = output(ql(&c).args(["--json", "release", "adm", "--value", wrong]));
    assert_eq!(code(&out), NOT_HELD, "{out:?}");
    assert_eq!(stdout_json(&out)["released"], 0);
    let out = output(ql(&c).args(["release", "adm", "--value", "abc"]));
    assert_eq!(code(&out), USAGE, "{out:?}");
    assert_eq!(wait_held(&c, "adm"), value);
    let out = output(ql(&c).args(["--json", "release", "adm", "--value", &value]));
    assert_eq!(code(&out), 0, "{out:?}");
    let v = stdout_json(&out);
    assert_eq!(
        (v["ok"].clone(), v["released"].clone()),
        (true.into(), 3.into()),
        "{v}"
    );
    assert!(
        v["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .all(|n| n["kind"] == "Released"),
        "{v}"
    );
    // The holder's next extension finds its keys gone: it stops the command.
    let out = run.wait_with_output().unwrap();
    assert_eq!(code(&out), LOST, "{out:?}");

    let run = spawn_run(&c, "adm", &["--ttl", "5s"], &["sleep", "30"]);
    let value = wait_held(&c, "adm");
    let out = output(ql(&c).args(["break", "adm"]));
    assert_eq!(code(&out), USAGE, "stdin is not a terminal: {out:?}");
    assert_eq!(wait_held(&c, "adm"), value);
    let out = output(ql(&c).args(["--json", "break", "adm", "--yes"]));
    assert_eq!(code(&out), 0, "{out:?}");
    let v = stdout_json(&out);
    assert_eq!(
        (v["ok"].clone(), v["deleted"].clone()),
        (true.into(), 3.into()),
        "{v}"
    );
    let out = run.wait_with_output().unwrap();
    assert_eq!(code(&out), LOST, "{out:?}");
    let out = output(ql(&c).args(["status", "adm"]));
    assert_eq!(code(&out), NOT_HELD, "{out:?}");
}

#[test]
fn ping_shapes_and_failure() {
    let mut c = cluster();
    let out = output(ql(&c).args(["--json", "ping"]));
    assert_eq!(code(&out), 0, "{out:?}");
    let v = stdout_json(&out);
    assert_eq!(
        (v["usable"].clone(), v["quorum"].clone()),
        (3.into(), 2.into()),
        "{v}"
    );
    for n in v["nodes"].as_array().unwrap() {
        assert_eq!(n["kind"], "Ok", "{v}");
        assert!(n["latency_us"].is_u64() && n["uptime_s"].is_u64(), "{v}");
        assert!(n["version"].is_string() && n["run_id"].is_string(), "{v}");
        assert_eq!(n["role"], "master");
        assert_eq!(
            n["durable"], true,
            "the harness runs appendfsync always: {v}"
        );
        assert_eq!(n["persistence"]["appendfsync"], "always", "{v}");
        assert!(n["maxmemory_policy"].is_string(), "{v}");
        assert_eq!(n["warnings"], serde_json::json!([]), "{v}");
    }
    let human = output(ql(&c).arg("ping"));
    assert!(String::from_utf8_lossy(&human.stdout).contains("3 of 3 nodes usable, 2 needed"));
    // A closed stdout (`quorumlock ping | head -n 0`) is not a crash.
    let mut closed = ql(&c).arg("ping").stdout(Stdio::piped()).spawn().unwrap();
    drop(closed.stdout.take());
    assert_eq!(closed.wait().unwrap().code(), Some(0));

    c.kill(1);
    c.kill(2);
    let out = output(ql(&c).args(["--json", "ping"]));
    assert_eq!(code(&out), NODES, "{out:?}");
    let v = stdout_json(&out);
    assert_eq!(
        (v["ok"].clone(), v["code"].clone()),
        (false.into(), "QL_CONNECTION".into())
    );
    assert_eq!(v["nodes"][0]["kind"], "Ok", "{v}");
    assert_ne!(v["nodes"][2]["kind"], "Ok", "{v}");
    let out = output(ql(&c).args(["--json", "status", "gone"]));
    assert_eq!(code(&out), NODES, "{out:?}");
    assert_eq!(stdout_json(&out)["answered"], 1);
}

fn config_dir(tag: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("cfg-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn nodes_from_env_and_config_file() {
    let c = cluster();
    let urls = c.urls().join(",");
    let out = output(bin().env("QUORUMLOCK_NODES", &urls).arg("ping"));
    assert_eq!(code(&out), 0, "{out:?}");

    let dir = config_dir("file");
    let list: Vec<String> = c.urls().iter().map(|u| format!("{u:?}")).collect();
    let toml = format!(
        "nodes = [{}]\nttl = \"3s\"\nwait = \"2s\"\nkey_prefix = \"cfgtest:\"\n",
        list.join(", ")
    );
    std::fs::write(dir.join("quorumlock.toml"), toml).unwrap();
    let script = "echo $QUORUMLOCK_VALIDITY_MS";
    let out = output(
        bin()
            .current_dir(&dir)
            .args(["run", "cfg", "--", "sh", "-c", script]),
    );
    assert_eq!(code(&out), 0, "{out:?}");
    let validity: u64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    assert!(
        validity > 2000 && validity <= 3000,
        "ttl from the file: {validity}"
    );
    let out = output(bin().current_dir(&dir).args(["--json", "status", "cfg"]));
    assert_eq!(stdout_json(&out)["key"], "cfgtest:{cfg}", "{out:?}");

    let path = dir.join("quorumlock.toml");
    let out = output(bin().env("QUORUMLOCK_CONFIG", &path).arg("ping"));
    assert_eq!(code(&out), 0, "QUORUMLOCK_CONFIG: {out:?}");
    let out = output(bin().arg("--config").arg(&path).arg("ping"));
    assert_eq!(code(&out), 0, "--config: {out:?}");

    let bad = config_dir("bad");
    std::fs::write(
        bad.join("quorumlock.toml"),
        "nodes = [\"redis://127.0.0.1:1\"]\n",
    )
    .unwrap();
    let out = output(bin().current_dir(&bad).arg("ping"));
    assert_eq!(code(&out), NODES, "the file's node is down: {out:?}");
    let out = output(bin().current_dir(&bad).args(["--nodes", &urls, "ping"]));
    assert_eq!(code(&out), 0, "--nodes replaces the file's list: {out:?}");
    std::fs::write(bad.join("quorumlock.toml"), "node = []\n").unwrap();
    let out = output(bin().current_dir(&bad).args(["--nodes", &urls, "ping"]));
    assert_eq!(code(&out), USAGE, "unknown key: {out:?}");
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::remove_dir_all(&bad).unwrap();
}
