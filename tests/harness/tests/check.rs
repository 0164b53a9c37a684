//! `ql-harness check` over saved histories: exit 0 for a clean one, 1 with one JSON line per
//! overlap and per token that did not increase.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::Command;

use quorumlock_harness::history::Recorder;

fn saved(name: &str, rec: &Recorder) -> PathBuf {
    let path = std::env::temp_dir().join(format!("ql-check-{}-{name}.jsonl", std::process::id()));
    rec.write_jsonl(&path).unwrap();
    path
}

fn check(files: &[&PathBuf]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_ql-harness"))
        .arg("check")
        .args(files)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
    )
}

#[test]
fn check_passes_a_clean_history_and_flags_a_broken_one() {
    let clean = Recorder::new();
    clean.window("r", "a", 0, 100);
    clean.token("r", "a", 0, 1);
    clean.window("r", "b", 100, 200);
    clean.token("r", "b", 100, 2);
    let broken = Recorder::new();
    broken.window("r", "a", 0, 150);
    broken.window("r", "b", 100, 200);
    broken.token("r", "a", 0, 9);
    broken.token("r", "b", 100, 9);
    let (clean, broken) = (saved("clean", &clean), saved("broken", &broken));

    let (code, out) = check(&[&clean]);
    assert_eq!((code, out.as_str()), (0, ""));
    let (code, out) = check(&[&clean, &broken]);
    assert_eq!(code, 1, "{out}");
    let lines: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert_eq!(lines[0]["overlap"]["overlap_us"], 50);
    assert_eq!(lines[1]["token_regression"]["later"]["token"], 9);
    let (code, _) = check(&[&std::env::temp_dir().join("ql-check-missing.jsonl")]);
    assert_eq!(code, 1, "a missing file is an error");
    std::fs::remove_file(clean).unwrap();
    std::fs::remove_file(broken).unwrap();
}
