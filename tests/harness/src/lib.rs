//! Test harness for quorumlock: starts real `redis-server` nodes as child processes, injects
//! faults into them, and checks lock histories for overlapping holders.
//!
//! See `docs/TESTING.md` §2. Rust tests use this crate as a library; the `ql-harness` binary
//! exposes the same functions to the other languages.

#![forbid(unsafe_code)]

mod aof;
pub mod checker;
pub mod cluster;
pub mod ctl;
pub mod history;
pub mod hostile;
pub mod netns;
mod node;
pub mod proxy;
pub mod redis_cluster;
pub mod resp;
pub mod run;
pub mod skew;
pub mod tls;

pub use checker::{Violation, Window, check};
pub use cluster::{Builder, Cluster, Persist};
pub use hostile::{HostileServer, HostileStats, Hostility, Scope};
pub use proxy::{FaultProxy, Mode, Partition, ProxyMesh, ProxyStats};
pub use resp::{Endpoint, Reply, command, command_timeout};
pub use tls::{Certs, ServerCert, Tls};

use nix::time::{ClockId, clock_gettime};

/// Microseconds on `CLOCK_BOOTTIME`, the same clock as core's `quorumlock::clock`.
///
/// It never jumps and keeps running while a process is stopped, so every timestamp the harness
/// records (fault times, `t_us` answers, deadlines) is comparable with the engine's.
pub fn now_us() -> u64 {
    read_us(ClockId::CLOCK_BOOTTIME)
}

/// Microseconds since the Unix epoch on `CLOCK_REALTIME`. Used only to name run folders.
pub(crate) fn wall_us() -> u64 {
    read_us(ClockId::CLOCK_REALTIME)
}

fn read_us(clock: ClockId) -> u64 {
    // clock_gettime cannot fail for these clocks on Linux; 0 is a harmless fallback.
    clock_gettime(clock).map_or(0, |t| {
        let us = i128::from(t.tv_sec()) * 1_000_000 + i128::from(t.tv_nsec()) / 1_000;
        u64::try_from(us).unwrap_or(0)
    })
}

/// Sleeps for `ms` milliseconds.
pub(crate) fn sleep_ms(ms: u64) {
    std::thread::sleep(std::time::Duration::from_millis(ms));
}
