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

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::client::Inner;
use crate::quorum::{self, Decide, Round};
use crate::report::NodeKind;

/// Lock keys followed by their counter keys (`<lock key>:fence`), in the same order.
pub(crate) fn with_counters(keys: &[Vec<u8>]) -> Arc<[Vec<u8>]> {
    quorumlock_proto::fencing::with_counters(keys).into()
}

/// The counters each node returned in phase 1, by node index.
pub(crate) type Slots = Arc<Mutex<Vec<Option<Vec<u64>>>>>;

pub(crate) fn slots(n: usize) -> Slots {
    Arc::new(Mutex::new(vec![None; n]))
}

pub(crate) fn record(slots: &Slots, index: usize, tokens: Vec<u64>) {
    if let Some(slot) = slots
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get_mut(index)
    {
        *slot = Some(tokens);
    }
}

/// After a phase 1 that reached the quorum: derives the tokens and runs phase 2 when
/// fewer than `q` nodes already hold them. Returns the tokens when `|R| >= q`; nodes of `Q`
/// whose RAISE failed get that outcome in `round`'s report.
pub(crate) async fn settle_tokens(
    inner: &Inner,
    round: &mut Round,
    slots: &Slots,
    all_keys: &Arc<[Vec<u8>]>,
    value: &Arc<str>,
    timeout: Duration,
    counter_ttl_ms: u64,
) -> Option<Vec<u64>> {
    let got: Vec<Option<Vec<u64>>> =
        std::mem::take(&mut *slots.lock().unwrap_or_else(PoisonError::into_inner));
    let phase1 = quorumlock_proto::fencing::phase1(round, &got)?;
    if phase1.settled(inner.nodes.len()) {
        return Some(phase1.tokens);
    }
    let (t, mut held, q) = (phase1.tokens, phase1.held, inner.quorum());
    let lagging: Vec<_> = phase1
        .lagging
        .iter()
        .filter_map(|i| inner.nodes.get(*i).cloned())
        .collect();
    tracing::debug!(held, lagging = lagging.len(), "fencing phase 2");
    let tokens: Arc<[u64]> = t.clone().into();
    let raised = quorum::round(&lagging, timeout, Decide::All, |node| {
        let (keys, value, tokens) = (all_keys.clone(), value.clone(), tokens.clone());
        async move { node.raise(&keys, &value, &tokens, counter_ttl_ms).await }
    })
    .await;
    for r in raised.results {
        if r.kind == NodeKind::Ok {
            held += 1;
        } else if let Some(slot) = round.results.iter_mut().find(|s| s.index == r.index) {
            slot.kind = r.kind;
            slot.detail = Some(format!(
                "fencing phase 2: {}",
                r.detail.as_deref().unwrap_or(r.kind.as_str())
            ));
        }
    }
    (held >= q).then_some(t)
}
