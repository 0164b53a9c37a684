//! The options table against what is written elsewhere: `docs/options.md` is rendered from it
//! (`QL_BLESS=1` rewrites the file instead of failing), REDLOCK.md §11 gives a reason for every
//! default.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use quorumlock_proto::config::spec::{self, CLIENT_SETTINGS, LOCK_OPTIONS};

fn repo_file(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(path)
}

fn read(path: &str) -> String {
    std::fs::read_to_string(repo_file(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn options_md_is_rendered_from_the_table() {
    let fresh = spec::markdown();
    if std::env::var_os("QL_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(repo_file("docs/options.md"), &fresh).unwrap();
    }
    assert!(
        fresh == read("docs/options.md"),
        "docs/options.md is stale; run `QL_BLESS=1 cargo test -p quorumlock-proto --test options` and commit it"
    );
}

/// The rows of the Markdown table under `heading` in `text`, as cells.
fn table_rows(text: &str, heading: &str) -> Vec<Vec<String>> {
    let section = text
        .split(heading)
        .nth(1)
        .unwrap_or_else(|| panic!("no {heading:?}"));
    let section = section.split("\n## ").next().unwrap_or_default();
    section
        .lines()
        .filter(|l| l.starts_with('|') && !l.starts_with("|---"))
        .map(|l| {
            l.trim_matches('|')
                .split(" | ")
                .map(|c| c.trim().to_owned())
                .collect()
        })
        .collect()
}

#[test]
fn redlock_md_gives_every_default_its_reason() {
    let rows = table_rows(&read("docs/REDLOCK.md"), "## 11. Defaults");
    for s in LOCK_OPTIONS.iter().chain(CLIENT_SETTINGS) {
        let name = format!("`{}`", s.name);
        let row = rows
            .iter()
            .find(|r| r[0] == name)
            .unwrap_or_else(|| panic!("REDLOCK.md §11 has no row for {name}"));
        assert_eq!(
            row[1],
            s.default_text(),
            "REDLOCK.md §11: the default of {name} (as docs/options.md writes it)"
        );
        assert!(
            row.get(2).is_some_and(|r| !r.is_empty()),
            "{name}: give a reason"
        );
    }
}
