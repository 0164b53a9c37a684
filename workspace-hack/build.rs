//! Cargo applies a crate's `[build-dependencies]` only when it has a build script.

fn main() {}
