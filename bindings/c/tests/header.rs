//! The header gate: regenerates `include/quorumlock.h` with the pinned cbindgen and compares
//! it byte for byte with the checked-in file (`QL_BLESS=1` writes it instead, which is what
//! `make header` runs), and checks the version defines and the code tables against the
//! workspace version and the engine.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn header_path() -> PathBuf {
    crate_dir().join("../../include/quorumlock.h")
}

fn generate() -> String {
    let config = cbindgen::Config::from_file(crate_dir().join("cbindgen.toml")).unwrap();
    let mut out = Vec::new();
    cbindgen::Builder::new()
        .with_config(config)
        .with_src(crate_dir().join("src/lib.rs"))
        .generate()
        .expect("cbindgen failed")
        .write(&mut out);
    String::from_utf8(out).unwrap()
}

fn checked_in() -> String {
    std::fs::read_to_string(header_path()).expect("include/quorumlock.h is missing")
}

#[test]
fn header_is_fresh() {
    let fresh = generate();
    if std::env::var_os("QL_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(header_path(), &fresh).unwrap();
    }
    assert!(
        fresh == checked_in(),
        "include/quorumlock.h is stale; run `make header` and commit the result"
    );
}

fn define(header: &str, name: &str) -> String {
    let prefix = format!("#define {name} ");
    header
        .lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("{name} is not defined"))
        .trim()
        .to_owned()
}

#[test]
fn version_defines_match_the_workspace() {
    let header = checked_in();
    let parts: Vec<u32> = env!("CARGO_PKG_VERSION")
        .split('.')
        .map(|p| p.parse().unwrap())
        .collect();
    let names = ["MAJOR", "MINOR", "PATCH"];
    for (name, want) in names.iter().zip(&parts) {
        let got: u32 = define(&header, &format!("QUORUMLOCK_VERSION_{name}"))
            .parse()
            .unwrap();
        assert_eq!(got, *want, "QUORUMLOCK_VERSION_{name}");
    }
    // The combined value, evaluated as the C preprocessor would.
    let combined = define(&header, "QUORUMLOCK_VERSION_NUMBER");
    assert_eq!(
        combined,
        "((QUORUMLOCK_VERSION_MAJOR << 16) | (QUORUMLOCK_VERSION_MINOR << 8) | QUORUMLOCK_VERSION_PATCH)"
    );
    assert!(
        parts[1] < 256 && parts[2] < 256,
        "minor and patch must fit 8 bits"
    );
}

fn snake(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    out
}

#[test]
fn header_codes_match_the_engine() {
    let header = checked_in();
    for &k in quorumlock::ErrorKind::ALL {
        let line = format!("  {} = {},", k.as_str(), k.code());
        assert!(header.contains(&line), "missing `{line}`");
    }
    assert!(header.contains("  QL_OK = 0,") && header.contains("  QL_INTERNAL = 99,"));
    for &k in quorumlock::NodeKind::ALL {
        let line = format!("  QL_NODE_{} = {},", snake(k.as_str()), k.code());
        assert!(header.contains(&line), "missing `{line}`");
    }
}
