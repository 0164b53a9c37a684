//! Integration tests of the `quorumlock` binary against real redis-server nodes: exit codes,
//! child supervision, admin subcommands, JSON shapes, nodes from flags, env and config file,
//! client settings (max_ttl, quarantine, eviction check, notify).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod admin;
mod cluster;
mod common;
mod exit_codes;
mod settings;
mod supervise;
