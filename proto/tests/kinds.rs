//! The error and node kind tables against the copies other languages keep. Bindings derive
//! names and numbers from `ErrorKind`/`NodeKind` through their native layer where they can
//! (`quorumlock_result_name`, `quorumlock_node_kind_name`, `errorKinds()`, `error_kinds()`);
//! where a language writes a table out by hand, this test fails when the table misses a kind.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::PathBuf;

use quorumlock_proto::error::ErrorKind;
use quorumlock_proto::report::{NodeCategory, NodeKind};

fn read(path: &str) -> String {
    let full = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(path);
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Whether `text` has `word` as a whole identifier.
fn has_word(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + word.len()..].chars().next();
        let ident = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        !ident(before) && !ident(after)
    })
}

#[test]
fn hand_written_code_tables_name_every_error_kind() {
    let tables = [
        "ruby/lib/quorumlock/errors.rb",
        "perl/lib/Quorumlock/Error.pm",
        "php/src/Exception/QuorumlockException.php",
        "csharp/src/Quorumlock/QuorumlockException.cs",
        "go/errors.go",
        "node/index.d.ts",
    ];
    for path in tables {
        let text = read(path);
        for &k in ErrorKind::ALL {
            assert!(has_word(&text, k.as_str()), "{path} lacks {}", k.as_str());
        }
    }
}

/// The names between `open` and `close` after `marker` in `text`, split on non-identifier
/// characters.
fn listed(text: &str, marker: &str, close: char) -> BTreeSet<String> {
    let rest = text
        .split(marker)
        .nth(1)
        .unwrap_or_else(|| panic!("no {marker:?}"));
    let list = rest.split(close).next().unwrap_or_default();
    list.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect()
}

#[test]
fn hand_written_vote_kinds_are_the_vote_category() {
    let votes: BTreeSet<String> = NodeKind::ALL
        .iter()
        .filter(|k| k.category() == NodeCategory::Vote)
        .map(|k| k.as_str().to_owned())
        .collect();
    let python = read("python/python/quorumlock/compat/_native.py");
    assert_eq!(
        listed(&python, "_VOTES = frozenset({", '}'),
        votes,
        "_native.py"
    );
    let ruby = read("ruby/lib/quorumlock/redlock.rb");
    assert_eq!(listed(&ruby, "VOTE_KINDS = %w[", ']'), votes, "redlock.rb");
}
