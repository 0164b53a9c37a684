//! # quorumlock-sim
//!
//! A deterministic simulator of quorumlock's Redlock protocol. One global event queue in
//! simulated microseconds ([`event`]) drives simulated Redis nodes ([`node`]) with their own
//! clocks ([`clock`]), per client×node links with delay and loss ([`link`]), and clients whose
//! every decision is a call into `quorumlock-proto` ([`client`]). The [`checker`] flags
//! overlapping holders, non-increasing fencing tokens and leaked keys. [`scenario`]s configure
//! the faults; [`mutant`]s alter the proto calls. One seed gives one schedule ([`rng`]), so any
//! failure replays exactly ([`world::run`] with `trace`).
#![forbid(unsafe_code)]

pub mod checker;
pub mod client;
pub mod clock;
pub mod event;
pub mod link;
pub mod mutant;
pub mod node;
pub mod rng;
pub mod runner;
pub mod scenario;
pub mod world;

pub use mutant::Mutant;
pub use scenario::Scenario;
pub use world::{Outcome, run};
