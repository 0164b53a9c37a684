//! Integration tests of the `quorumlock` binary against real redis-server nodes: exit codes,
//! child supervision, admin subcommands, JSON shapes, nodes from flags, env and config file.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod admin;
mod common;
mod exit_codes;
mod supervise;
