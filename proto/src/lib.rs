//! # quorumlock-proto
//!
//! The decisions of quorumlock's Redlock engine, without I/O: no sockets, no runtime, no OS
//! clock and no OS randomness. Drivers (the tokio engine in the `quorumlock` crate, a
//! WebAssembly package, a simulator) own connections, clocks, timers and randomness, pass
//! times, random bytes and parsed replies in, and get data out: which scripts to send, and
//! what a round of replies means.
//!
//! This crate holds what is already free of I/O: the options and their checks
//! ([`config`]), the error model ([`error`], [`report`]), the quorum arithmetic and the
//! verdicts of a round ([`quorum`]), the acquisition's state machine ([`acquisition`]), a
//! waiter's place in its keys' lines ([`line`](mod@line)) and its registrations for grants
//! ([`grants`]), lock values ([`value`]) and the Lua scripts
//! ([`scripts`]). It builds for `wasm32-unknown-unknown`.
//!
//! The cargo feature `mutants` (off by default, enabled only by the simulator
//! `quorumlock-sim`) adds `mutant`: deliberate protocol bugs the simulator plants in an
//! acquisition to show that its checker catches them.
#![forbid(unsafe_code)]

pub mod acquire;
pub mod acquisition;
pub mod command;
pub mod config;
pub mod error;
pub mod extend;
pub mod fencing;
pub mod grants;
pub mod hold;
pub mod line;
#[cfg(feature = "mutants")]
pub mod mutant;
pub mod probe;
pub mod quorum;
pub mod report;
pub mod round;
pub mod scripts;
pub mod value;
pub mod warning;
