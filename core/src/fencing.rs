//! Fenced acquisition (REDLOCK.md §7): every successful acquisition returns, per resource,
//! a 64-bit token strictly greater than every token returned before for that resource.
//!
//! Phase 1 runs FENCED-ACQUIRE instead of `SET NX`: where it takes the lock it also
//! advances the resource's counter to `max(old + 1, S * 2^20)` (S: the node's Unix time in
//! seconds) and returns it. At the success decision, `Q` is the set of nodes that voted
//! for, `t = max(c_i, i in Q)`, and `R = { i in Q : c_i == t }`. If `|R| < q`, phase 2
//! sends RAISE(value, t) to the nodes of `Q` below `t`: an owner-checked script that lifts
//! the counter to `t` only while our key is still there. The acquisition succeeds only if
//! `|R| >= q` afterwards (and the validity, measured after phase 2, is long enough).
//!
//! Why tokens increase (G1, proof sketch of §7.6). Let X and Y succeed with `T2_X < T2_Y`.
//! `|R_X| >= q` and `|Q_Y| >= q`, so some node j is in both. On j, X's key existed from
//! its write `a_j` through the moment `w_j <= T2_X` at which the counter reached `t_X`
//! (FENCED-ACQUIRE returned it, or RAISE passed its owner check): keys survive until T2
//! (lemma K), and values are unique per attempt, so nothing but expiry removes them.
//! Y's write `b_j` on j cannot fall inside `[a_j, w_j]` (`SET NX` would fail), nor before
//! `a_j` (Y's key would then still exist at `a_j`, since it survives until `T2_Y > T2_X
//! >= a_j`). So `b_j > w_j`, and as counters never decrease, Y's script on j returned more
//! than `t_X`: `t_Y >= c_j(Y) > t_X`. The proof uses only nodes of `R_X`, which is why
//! phase 2 raises only nodes of `Q`, where our key is known to exist, and checks it again.
//!
//! The time floor `S * 2^20` keeps tokens increasing across nodes that lost their counters
//! in a restart, as long as the restart quarantine keeps such nodes out for
//! `max_ttl + quarantine_margin` and node clocks stay within Δ of real time with
//! `2Δ + 2 s <= quarantine_margin` (G2, §7.7). Fenced acquisitions therefore also treat a
//! node whose uptime cannot be read as quarantined.

use std::sync::Arc;

/// Lock keys followed by their counter keys (`<lock key>:fence`), in the same order.
pub(crate) fn with_counters(keys: &[Vec<u8>]) -> Arc<[Vec<u8>]> {
    quorumlock_proto::fencing::with_counters(keys).into()
}
