//! Fenced acquisition (REDLOCK.md §7): the counter keys as the driver sends them. Phase 1,
//! phase 2 and why tokens strictly increase: `quorumlock_proto::fencing` and
//! `quorumlock_proto::acquisition`.

use std::sync::Arc;

/// Lock keys followed by their counter keys (`<lock key>:fence`), in the same order.
pub(crate) fn with_counters(keys: &[Vec<u8>]) -> Arc<[Vec<u8>]> {
    quorumlock_proto::fencing::with_counters(keys).into()
}
