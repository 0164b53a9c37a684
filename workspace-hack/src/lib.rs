//! Build-time only: see this crate's Cargo.toml. It has no code; its dependencies turn on one
//! feature set per third-party crate for the whole workspace.
