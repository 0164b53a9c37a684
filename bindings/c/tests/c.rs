//! Builds the C and C++ programs in `tests/c/` against the library and runs them against a
//! real 3-node cluster, the C programs under valgrind when it is installed
//! (`QL_REQUIRE_VALGRIND=1` makes a missing valgrind an error).
//!
//! The library: integration tests of a cdylib/staticlib crate do not link it, so the first
//! test runs `cargo build -p quorumlock-ffi` (the same `CARGO`, profile and target dir as this
//! test binary: `<target>/<profile>/deps/c-*` → `<target>/<profile>/libquorumlock.{so,a}`).
//! C programs link the shared library (with an rpath), the C++ program the static one.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock, PoisonError};

use quorumlock_harness::{Cluster, Persist};

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A folder with the freshly built libraries, built once per test binary.
fn lib_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let exe = std::env::current_exe().unwrap();
        let profile_dir = exe.parent().unwrap().parent().unwrap().to_path_buf();
        let target = profile_dir.parent().unwrap();
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
        let mut cmd = Command::new(cargo);
        cmd.args(["build", "--locked", "-p", "quorumlock-ffi", "--target-dir"])
            .arg(target)
            .current_dir(crate_dir());
        // Variables cargo sets for this test (CARGO_PKG_NAME, CARGO_MANIFEST_DIR, ...) are
        // watched by some build scripts; inherited, they would force rebuilds.
        for (key, _) in std::env::vars_os() {
            let key = key.to_string_lossy();
            let set_by_cargo = [
                "CARGO_PKG_",
                "CARGO_MANIFEST_",
                "CARGO_CRATE_",
                "CARGO_BIN_",
            ]
            .iter()
            .any(|p| key.starts_with(p))
                || ["CARGO_TARGET_TMPDIR", "CARGO_PRIMARY_PACKAGE", "OUT_DIR"].contains(&&*key);
            if set_by_cargo {
                cmd.env_remove(&*key);
            }
        }
        if profile_dir.file_name().is_some_and(|n| n == "release") {
            cmd.arg("--release");
        }
        assert!(cmd.status().unwrap().success(), "cargo build failed");
        // The SONAME is libquorumlock.so.<major>, as `make install` lays it out.
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("lib");
        std::fs::create_dir_all(&dir).unwrap();
        let major = env!("CARGO_PKG_VERSION_MAJOR");
        for name in [
            "libquorumlock.so".to_owned(),
            format!("libquorumlock.so.{major}"),
        ] {
            let _ = std::fs::remove_file(dir.join(&name));
            std::os::unix::fs::symlink(profile_dir.join("libquorumlock.so"), dir.join(name))
                .unwrap();
        }
        let _ = std::fs::remove_file(dir.join("libquorumlock.a"));
        std::os::unix::fs::symlink(
            profile_dir.join("libquorumlock.a"),
            dir.join("libquorumlock.a"),
        )
        .unwrap();
        dir
    })
}

/// Compiles a program once per test binary (tests run in parallel).
fn compile(source: &str) -> PathBuf {
    static BUILT: Mutex<Vec<(String, PathBuf)>> = Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((_, exe)) = built.iter().find(|(s, _)| s == source) {
        return exe.clone();
    }
    let exe = build(source);
    built.push((source.to_owned(), exe.clone()));
    exe
}

fn build(source: &str) -> PathBuf {
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(source.replace('.', "_"));
    let include = crate_dir().join("../../include");
    let lib = lib_dir();
    let cpp = source.ends_with(".cpp");
    let mut cmd = Command::new(if cpp { "c++" } else { "cc" });
    cmd.args(["-Wall", "-Wextra", "-Werror", "-g", "-pthread"])
        .arg(if cpp { "-std=c++17" } else { "-std=c11" })
        .arg("-I")
        .arg(&include)
        .arg(crate_dir().join("tests/c").join(source))
        .arg("-o")
        .arg(&out);
    if cpp {
        cmd.arg(lib.join("libquorumlock.a")).args(["-ldl", "-lm"]);
    } else {
        cmd.arg("-L")
            .arg(lib)
            .arg("-lquorumlock")
            .arg(format!("-Wl,-rpath,{}", lib.display()));
    }
    let status = cmd.status().unwrap();
    assert!(status.success(), "compiling {source} failed");
    out
}

fn valgrind() -> Option<&'static str> {
    let found = Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found && std::env::var_os("QL_REQUIRE_VALGRIND").is_some_and(|v| v == "1") {
        panic!("valgrind is missing but QL_REQUIRE_VALGRIND=1; install it (make deps-c)");
    }
    found.then_some("valgrind")
}

/// The command for a program: under valgrind for C programs when available.
fn program(exe: &Path, cluster: &Cluster) -> Command {
    let under_valgrind = exe.extension().is_none() && !exe.to_string_lossy().ends_with("_cpp");
    let mut cmd = match valgrind().filter(|_| under_valgrind) {
        Some(v) => {
            let mut c = Command::new(v);
            c.args([
                "--error-exitcode=1",
                "--leak-check=full",
                "--quiet",
                // The engine's runtime is process-wide and still runs at exit, so tasks in
                // flight (background releases, reconnects) are "possibly lost"; a definite
                // leak still fails the run.
                "--errors-for-leak-kinds=definite",
                "--show-possibly-lost=no",
            ])
            .arg(exe);
            c
        }
        None => Command::new(exe),
    };
    cmd.env("QL_NODES", cluster.urls().join(","));
    cmd
}

fn run(exe: &Path, cluster: &Cluster, args: &[&str]) -> String {
    let out = program(exe, cluster).args(args).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{} {args:?} failed ({}):\n{stdout}\n{}",
        exe.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

fn cluster() -> Cluster {
    Cluster::builder()
        .nodes(3)
        .start()
        .expect("start redis-server nodes")
}

#[test]
fn acquire_extend_release() {
    let c = cluster();
    assert!(run(&compile("basic.c"), &c, &["lock"]).contains("lock ok"));
}

#[test]
fn busy_and_cancelled() {
    let c = cluster();
    assert!(run(&compile("basic.c"), &c, &["busy"]).contains("busy ok"));
}

#[test]
fn quorum_lost_with_a_dead_majority() {
    let mut c = cluster();
    c.kill(0);
    c.kill(2);
    assert!(run(&compile("basic.c"), &c, &["quorum"]).contains("quorum ok"));
}

#[test]
fn threads_exclude_each_other() {
    let c = cluster();
    assert!(run(&compile("threads.c"), &c, &[]).contains("threads ok"));
}

#[test]
fn bad_input_returns_codes() {
    let c = cluster();
    assert!(run(&compile("bad_input.c"), &c, &[]).contains("bad input ok"));
}

#[test]
fn lost_callback_fires_when_keys_vanish() {
    let c = cluster();
    let exe = compile("lost.c");
    let mut child = program(&exe, &c).stdout(Stdio::piped()).spawn().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    assert_eq!(lines.next().unwrap().unwrap(), "HELD");
    for i in 0..c.len() {
        // The call returned at the quorum-th reply: this node's write may still be in flight.
        for _ in 0..200 {
            let exists = c.command(i, &[b"EXISTS", b"quorumlock:{c:lost}"]).unwrap();
            if exists.as_int() == Some(1) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let deleted = c.command(i, &[b"DEL", b"quorumlock:{c:lost}"]).unwrap();
        assert_eq!(deleted.as_int(), Some(1), "node {i} held no key");
    }
    let rest: Vec<String> = lines.map(Result::unwrap).collect();
    assert!(child.wait().unwrap().success(), "lost.c failed: {rest:?}");
    assert_eq!(rest, ["lost ok"]);
}

#[test]
fn cpp_raii_wrapper() {
    let c = cluster();
    assert!(run(&compile("raii.cpp"), &c, &[]).contains("raii ok"));
}

#[test]
fn fencing_tokens_increase() {
    let c = cluster();
    assert!(run(&compile("fence.c"), &c, &["tokens"]).contains("tokens ok"));
}

#[test]
fn quarantine_setting_decides_on_fresh_volatile_nodes() {
    let c = Cluster::builder()
        .nodes(3)
        .persist(Persist::None)
        .start()
        .expect("start redis-server nodes");
    assert!(run(&compile("fence.c"), &c, &["quarantine"]).contains("quarantine ok"));
}

#[test]
fn metrics_count_exactly() {
    let c = cluster();
    assert!(run(&compile("metrics.c"), &c, &["counts"]).contains("metrics ok"));
}

#[test]
fn metrics_bad_input_returns_codes() {
    let c = cluster();
    assert!(run(&compile("metrics.c"), &c, &["bad"]).contains("metrics bad input ok"));
}

#[test]
fn cpp_metrics_wrapper() {
    let c = cluster();
    assert!(run(&compile("metrics.cpp"), &c, &[]).contains("metrics cpp ok"));
}

#[test]
fn warnings_reach_the_callback_once_per_node() {
    let c = Cluster::builder()
        .nodes(3)
        .persist(Persist::None)
        .start()
        .expect("start redis-server nodes");
    assert!(run(&compile("compat.c"), &c, &["warnings"]).contains("warnings ok"));
}

#[test]
fn given_values_and_attempt_reports() {
    let c = cluster();
    assert!(run(&compile("compat.c"), &c, &["value"]).contains("value ok"));
}

#[test]
fn bare_keys_and_release_or_extend_by_value() {
    let c = cluster();
    assert!(run(&compile("compat.c"), &c, &["byvalue"]).contains("byvalue ok"));
    // The lock left held is stored under the bare resource name, with the given value, on a
    // quorum at least: the call returned at the quorum-th reply and the program exited, so the
    // other nodes' writes may never have been sent; no node holds anything else.
    let values: Vec<String> = (0..c.len())
        .map(|i| {
            let out = Command::new("redis-cli")
                .args(["-p", &c.addr(i).port().to_string(), "GET", "bv:left"])
                .output()
                .expect("redis-cli");
            String::from_utf8_lossy(&out.stdout).trim().to_owned()
        })
        .collect();
    let given = "0f3b2c6e-7d41-4a8e-b9c2-5e6f7a8b9c0d";
    let held = values.iter().filter(|v| *v == given).count();
    assert!(held > c.len() / 2, "{values:?}");
    assert!(
        values.iter().all(|v| v == given || v.is_empty()),
        "{values:?}"
    );
}

#[test]
fn a_redis_cluster_is_one_member() {
    let c = cluster();
    let rc = Cluster::builder()
        .nodes(3)
        .redis_cluster(0)
        .start()
        .expect("start a Redis Cluster");
    let exe = compile("compat.c");
    let out = program(&exe, &c)
        .arg("cluster")
        .env("QL_REDIS_CLUSTER", rc.cluster_url().unwrap())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("cluster ok"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn locks_over_mutual_tls_and_names_a_bad_ca() {
    let c = Cluster::builder()
        .nodes(1)
        .tls(quorumlock_harness::Tls::Mutual)
        .start()
        .expect("start a TLS node");
    let (_, certs) = c.tls().unwrap();
    let enc = quorumlock_harness::tls::encode;
    let wrong_ca = format!(
        "{}/?tls_ca={}&tls_cert={}&tls_key={}",
        c.bare_url(0),
        enc(&certs.other_ca()),
        enc(&certs.client_cert()),
        enc(&certs.client_key())
    );
    let addr = c.addr(0).to_string();
    // Not under valgrind: loading the system's trust store and the handshakes take longer
    // there than any connect timeout; the C ABI's memory use is checked by the other programs.
    let out = Command::new(compile("tls.c"))
        .env("QL_NODES", c.urls().join(","))
        .args([&wrong_ca, &addr])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("tls ok"),
        "tls.c failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}
