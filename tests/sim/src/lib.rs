//! # quorumlock-sim
//!
//! A deterministic simulator of quorumlock's Redlock protocol. One global event queue in
//! simulated microseconds ([`event`]) drives simulated Redis nodes ([`node`]) with their own
//! clocks ([`clock`]), per client×node links with delay and loss ([`link`]), and clients
//! ([`client`]). A client's acquire call is `quorumlock_proto::acquisition::Acquisition`, the
//! same state machine the engine drives (`core/src/acquire.rs`); [`client`] is its driver in
//! simulated time, and also runs the holder (work, extend, release) with proto's verdicts;
//! [`waiting`] drives a call as a waiter (release notices and grants, over the nodes' waiter
//! lines in [`lines`]).
//! The [`checker`] flags overlapping holders, non-increasing fencing tokens and leaked keys.
//! [`scenario`]s configure the faults; [`mutant`]s are planted in the machine (proto's feature
//! `mutants`) or, for the extend, in the simulated holder. One seed gives one schedule
//! ([`rng`]), so any failure replays exactly ([`world::run`] with `trace`).
#![forbid(unsafe_code)]

pub mod checker;
pub mod client;
pub mod clock;
pub mod event;
pub mod lines;
pub mod link;
pub mod mutant;
pub mod node;
pub mod rng;
pub mod runner;
pub mod scenario;
pub mod waiting;
pub mod world;

pub use mutant::Mutant;
pub use scenario::Scenario;
pub use world::{Outcome, run};
