//! The options table against what is written elsewhere: `docs/options.md` is rendered from it
//! (`QL_BLESS=1` rewrites the file instead of failing), REDLOCK.md §11 gives a reason for every
//! default, and the bindings' hand-written type declarations (Python's `_quorumlock.pyi`,
//! Node's `index.d.ts`) name exactly its options (and Node's comments give its defaults).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::PathBuf;

use quorumlock_proto::config::spec::{self, CLIENT_SETTINGS, LOCK_OPTIONS, OptionSpec, Scope};
use quorumlock_proto::config::{ClientSettings, LockOptions, Value};

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

/// The field names of a `class <name>(...)` block of a `.pyi` file.
fn pyi_fields(text: &str, class: &str) -> BTreeSet<String> {
    let start = format!("class {class}(");
    let block = text
        .split(&start)
        .nth(1)
        .unwrap_or_else(|| panic!("no {start}"));
    block
        .lines()
        .skip(1)
        .take_while(|l| l.starts_with("    ") || l.trim().is_empty())
        .filter_map(|l| l.trim().split_once(':').map(|(n, _)| n.to_owned()))
        .filter(|n| !n.starts_with('#') && !n.starts_with('"'))
        .collect()
}

fn names<'a>(
    specs: impl IntoIterator<Item = &'a OptionSpec>,
    name: impl Fn(&OptionSpec) -> String,
) -> BTreeSet<String> {
    specs.into_iter().map(name).collect()
}

#[test]
fn python_stubs_name_every_option() {
    let pyi = read("python/python/quorumlock/_quorumlock.pyi");
    let py = |s: &OptionSpec| s.name.to_owned();
    let mut defaults = names(LOCK_OPTIONS.iter().filter(|s| !s.per_call), py);
    // Python's spelling of `retry_count = 4294967295`.
    defaults.insert("retry_forever".to_owned());
    assert_eq!(pyi_fields(&pyi, "_LockDefaults"), defaults);
    assert_eq!(
        pyi_fields(&pyi, "_LockOptions"),
        names(LOCK_OPTIONS.iter().filter(|s| s.per_call), py)
    );
    assert_eq!(
        pyi_fields(&pyi, "_ClientOptions"),
        names(CLIENT_SETTINGS, py)
    );
}

/// The fields of `export interface <name> ... { ... }` in a `.d.ts` file with the doc comment
/// above each, and the interface's header (the text between the name and `{`).
fn ts_fields(text: &str, interface: &str) -> (String, Vec<(String, String)>) {
    let start = format!("export interface {interface} ");
    let rest = text
        .split(&start)
        .nth(1)
        .unwrap_or_else(|| panic!("no {start}"));
    let (header, body) = rest.split_once('{').unwrap();
    let body = body.split("\n}").next().unwrap_or_default();
    let mut fields = Vec::new();
    let mut doc = String::new();
    for line in body.lines() {
        let t = line.trim();
        if t.starts_with("/**") || t.starts_with('*') {
            if t.starts_with("/**") {
                doc.clear();
            }
            doc.push_str(t);
            doc.push(' ');
        } else if let Some((name, _)) = t.split_once(['?', ':'])
            && line.starts_with("  ")
            && name.chars().all(|c| c.is_ascii_alphanumeric())
        {
            fields.push((name.to_owned(), std::mem::take(&mut doc)));
        }
    }
    (header.to_owned(), fields)
}

/// The default as Node writes it in a doc comment: `10000` (ms), `3`, `0.01`, `true`.
fn node_default(spec: &OptionSpec) -> Option<String> {
    let value = match spec.scope {
        Scope::Lock => LockOptions::default().get(spec.name),
        Scope::Client => ClientSettings::default().get(spec.name),
    };
    Some(match value? {
        Value::Duration(d) => d.as_millis().to_string(),
        Value::Count(n) => n.to_string(),
        Value::Ratio(r) => r.to_string(),
        Value::Flag(b) => b.to_string(),
        _ => return None,
    })
}

#[test]
fn node_types_name_every_option() {
    let dts = read("node/index.d.ts");
    let js = |s: &OptionSpec| s.js_name();
    let (_, lock) = ts_fields(&dts, "LockOptions");
    let (header, client) = ts_fields(&dts, "ClientOptions");
    let keys = |fields: &[(String, String)]| -> BTreeSet<String> {
        fields.iter().map(|(n, _)| n.clone()).collect()
    };
    assert_eq!(keys(&lock), names(LOCK_OPTIONS, js));
    let mut client_keys = keys(&client);
    assert!(client_keys.remove("nodes"));
    assert_eq!(client_keys, names(CLIENT_SETTINGS, js));
    let per_call: Vec<String> = LOCK_OPTIONS
        .iter()
        .filter(|s| s.per_call)
        .map(|s| format!("'{}'", s.js_name()))
        .collect();
    assert_eq!(
        header.trim(),
        format!("extends Omit<LockOptions, {}>", per_call.join(" | ")),
        "ClientOptions takes every lock option but the per-call ones"
    );
    // A default written in a field's comment is the engine's.
    let mut checked = 0;
    for spec in LOCK_OPTIONS.iter().chain(CLIENT_SETTINGS) {
        let (_, doc) = lock
            .iter()
            .chain(&client)
            .find(|(n, _)| *n == spec.js_name())
            .unwrap();
        let Some(written) = doc.split("(default ").nth(1) else {
            continue;
        };
        let written: String = written
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '.')
            .collect();
        if let Some(want) = node_default(spec) {
            assert_eq!(
                written,
                want,
                "index.d.ts: the default of {}",
                spec.js_name()
            );
            checked += 1;
        }
    }
    assert!(checked >= 10, "only {checked} defaults found in index.d.ts");
}
