//! The per-node halves of acquire, extend and release: which command goes out and how the
//! reply becomes a vote. A cluster member whose keys span several hash slots sends one
//! request per slot in parallel and joins the answers (`slots.rs`): it votes for a lock only
//! when every slot's request did, and removes what it wrote otherwise.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use futures_util::future::join_all;
use quorumlock_proto::command::{self, Extension, Notify};

use super::writes::Writing;
use super::{Node, NodeFailure, Prepared, Traffic, slots};
use crate::report::NodeKind;

impl Node {
    /// The slot groups of a cluster member's request over `keys` (`stride` 2: lock keys
    /// followed by their counter keys), or `None` when one request does.
    fn split(
        &self,
        keys: &[Vec<u8>],
        stride: usize,
    ) -> Result<Option<Vec<Vec<usize>>>, NodeFailure> {
        if !self.target.is_cluster() {
            return Ok(None);
        }
        let groups = slots::groups(keys, stride)?;
        Ok((groups.len() > 1).then_some(groups))
    }

    /// On a cluster member, marks an acquisition of `value` in flight until the guard is
    /// dropped; call it before the request goes out (`writes.rs`).
    fn writing(&self, value: &str) -> Option<Writing<'_>> {
        self.is_cluster().then(|| self.writes.begin(value))
    }

    /// On a cluster member, waits until the acquisitions of `value` that began before this
    /// call have ended, so that a request needing their keys does not overtake them.
    async fn after_writes(&self, value: &str) {
        if self.is_cluster() {
            self.writes.settled(value, self.index).await;
        }
    }

    /// ACQUIRE on this node: `SET key value NX PX ttl` for one key, ACQUIRE-MULTI for a set.
    /// `Ok` is a vote for, `HeldByOther` a key already present. `prepared`, when given, is
    /// `command::acquire(keys, value, ttl_ms)` built once for the round.
    pub(crate) async fn acquire(
        &self,
        keys: &[Vec<u8>],
        value: &str,
        ttl_ms: u64,
        prepared: Option<&Prepared>,
    ) -> Result<NodeKind, NodeFailure> {
        let _writing = self.writing(value);
        let Some(groups) = self.split(keys, 1)? else {
            if let Some(p) = prepared {
                return self.acquire_prepared(p).await;
            }
            return self.acquire_slot(keys, value, ttl_ms).await;
        };
        let parts = join_all(groups.iter().map(|g| {
            let sub = slots::subset(keys, 1, g);
            async move { self.acquire_slot(&sub, value, ttl_ms).await }
        }))
        .await;
        let won: Vec<Result<bool, NodeFailure>> = parts
            .into_iter()
            .map(|r| r.map(|k| k == NodeKind::Ok))
            .collect();
        self.all_or_nothing(keys, value, won).await
    }

    /// ACQUIRE in one request with the round's `prepared` command; on a cluster member the
    /// caller holds the [`writing`](Self::writing) guard. Called directly for a single
    /// master (the common case, whose future then holds one send only).
    pub(crate) async fn acquire_prepared(
        &self,
        prepared: &Prepared,
    ) -> Result<NodeKind, NodeFailure> {
        let reply = self.run_prepared(prepared, Traffic::Lock).await?;
        command::read_acquire(&reply)
    }

    async fn acquire_slot(
        &self,
        keys: &[Vec<u8>],
        value: &str,
        ttl_ms: u64,
    ) -> Result<NodeKind, NodeFailure> {
        let reply = self
            .run(&command::acquire(keys, value, ttl_ms), Traffic::Lock)
            .await?;
        command::read_acquire(&reply)
    }

    /// Joins the slot requests of one acquisition (`won` per group): `Ok` when every group
    /// won. Otherwise the member's `lock_keys` are released here (compare-and-delete, so only
    /// what this attempt wrote), and the answer is the first failure, else `HeldByOther`.
    async fn all_or_nothing(
        &self,
        lock_keys: &[Vec<u8>],
        value: &str,
        won: Vec<Result<bool, NodeFailure>>,
    ) -> Result<NodeKind, NodeFailure> {
        if won.iter().all(|w| matches!(w, Ok(true))) {
            return Ok(NodeKind::Ok);
        }
        if let Err((kind, text)) = self.release_now(lock_keys, value, Notify::Off, None).await {
            // Not an "untouched" kind: the attempt's own cleanup tries again.
            return Err((
                NodeKind::Other,
                format!("a partial acquisition could not be undone ({kind}: {text})"),
            ));
        }
        match won.into_iter().find_map(Result::err) {
            Some(failure) => Err(failure),
            None => Ok(NodeKind::HeldByOther),
        }
    }

    /// EXTEND on this node: `Ok` when every key held the value (and is now at least
    /// `ttl_ms` long), `NotHeld` when a key was absent, `HeldByOther` when another value held
    /// one. Nothing is written unless the answer is `Ok` (on a cluster member, each slot's
    /// keys are lengthened only if that slot's keys all held the value).
    ///
    /// `prepared`, when given, is `command::extend(keys, value, ttl_ms)` built once for the
    /// round.
    pub(crate) async fn extend(
        &self,
        keys: &[Vec<u8>],
        value: &str,
        ttl_ms: u64,
        prepared: Option<&Prepared>,
    ) -> Result<NodeKind, NodeFailure> {
        self.after_writes(value).await;
        let Some(groups) = self.split(keys, 1)? else {
            if let Some(p) = prepared {
                let reply = self.run_prepared(p, Traffic::Lock).await?;
                return command::read_extend(&reply);
            }
            return self.extend_slot(keys, value, ttl_ms).await;
        };
        let parts = join_all(groups.iter().map(|g| {
            let sub = slots::subset(keys, 1, g);
            async move { self.extend_slot(&sub, value, ttl_ms).await }
        }))
        .await;
        let mut kinds = Vec::with_capacity(parts.len());
        for p in parts {
            kinds.push(p?);
        }
        Ok(command::join_slots(&kinds))
    }

    /// The requests an extension batch of `locks` goes out in on this node, as positions
    /// into `locks`: `(true, group)` for one EXTEND-BATCH, `(false, [i])` for a lock sent
    /// alone through [`extend`](Self::extend). A plain node takes the whole batch in one
    /// request; a cluster member one per hash slot, and a lock whose keys span slots alone.
    pub(crate) fn batch_groups(&self, locks: &[Extension<'_>]) -> Vec<(bool, Vec<usize>)> {
        if !self.target.is_cluster() {
            return vec![(true, (0..locks.len()).collect())];
        }
        slots::batch_groups(locks.iter().map(|l| l.keys))
    }

    /// One request of an extension batch (see [`batch_groups`](Self::batch_groups)): one
    /// EXTEND answer (or failure) per lock of `locks`, in order. With `one_request`,
    /// EXTEND-BATCH over all of `locks` (`prepared`, when given, is that command built once
    /// for every node); otherwise `locks` holds one lock, sent through
    /// [`extend`](Self::extend).
    pub(crate) async fn extend_batch(
        &self,
        locks: &[Extension<'_>],
        one_request: bool,
        prepared: Option<&Prepared>,
    ) -> Vec<Result<NodeKind, NodeFailure>> {
        if !one_request {
            let mut out = Vec::with_capacity(locks.len());
            for l in locks {
                out.push(self.extend(l.keys, l.value, l.ttl_ms, None).await);
            }
            return out;
        }
        let reply = match prepared {
            Some(p) => self.run_prepared(p, Traffic::Lock).await,
            None => self.run(&command::extend_batch(locks), Traffic::Lock).await,
        };
        match reply.and_then(|r| command::read_extend_batch(&r, locks.len())) {
            Ok(answers) => answers,
            Err(failure) => vec![Err(failure); locks.len()],
        }
    }

    async fn extend_slot(
        &self,
        keys: &[Vec<u8>],
        value: &str,
        ttl_ms: u64,
    ) -> Result<NodeKind, NodeFailure> {
        let reply = self
            .run(&command::extend(keys, value, ttl_ms), Traffic::Lock)
            .await?;
        command::read_extend(&reply)
    }

    /// RELEASE on this node: `Released` (all keys deleted), `Partial` (some), `HeldByOther`
    /// (none, another value present) or `NotHeld`. Deleted keys are published on their
    /// release channels as `notify` says. `prepared`, when given, is
    /// `command::release(keys, value, notify)` built once for the round.
    pub(crate) async fn release(
        &self,
        keys: &[Vec<u8>],
        value: &str,
        notify: Notify,
        prepared: Option<&Prepared>,
    ) -> Result<NodeKind, NodeFailure> {
        if self.is_cluster() {
            // Boxed: only a cluster member waits, and the wait would widen every release's
            // future.
            Box::pin(self.writes.settled(value, self.index)).await;
        }
        self.release_now(keys, value, notify, prepared).await
    }

    /// [`release`](Self::release) without waiting for acquisitions of `value` in flight:
    /// for the undoing of a partial acquisition by that acquisition itself.
    async fn release_now(
        &self,
        keys: &[Vec<u8>],
        value: &str,
        notify: Notify,
        prepared: Option<&Prepared>,
    ) -> Result<NodeKind, NodeFailure> {
        // Built for every node of every release: the common case (a single master, the
        // round's prepared command) awaits one send, and the rare ones are boxed, so that the
        // future holds one redis-rs send, not several.
        let flagless = self.flagless.load(Ordering::Relaxed);
        let (deleted, other) = match self.split(keys, 1)? {
            None => match prepared {
                Some(p) if !flagless => match self.run_prepared(p, Traffic::Any).await {
                    Ok(reply) => command::read_release(&reply, keys.len())?,
                    Err(e) => Box::pin(self.release_refused(keys, value, notify, e)).await?,
                },
                _ => Box::pin(self.release_slot(keys, value, notify)).await?,
            },
            Some(groups) => Box::pin(self.release_groups(keys, value, notify, groups)).await?,
        };
        Ok(command::release_kind(deleted, other, keys.len()))
    }

    /// [`release_slot`](Self::release_slot) on each slot group of a cluster member's keys:
    /// how many keys were deleted, and how many held another value.
    async fn release_groups(
        &self,
        keys: &[Vec<u8>],
        value: &str,
        notify: Notify,
        groups: Vec<Vec<usize>>,
    ) -> Result<(usize, usize), NodeFailure> {
        let parts = join_all(groups.iter().map(|g| {
            let sub = slots::subset(keys, 1, g);
            async move { self.release_slot(&sub, value, notify).await }
        }))
        .await;
        let mut total = (0, 0);
        for p in parts {
            let (d, o) = p?;
            total = (total.0 + d, total.1 + o);
        }
        Ok(total)
    }

    /// RELEASE-ONE or RELEASE on keys of one slot: how many keys were deleted, and how many
    /// held another value.
    async fn release_slot(
        &self,
        keys: &[Vec<u8>],
        value: &str,
        notify: Notify,
    ) -> Result<(usize, usize), NodeFailure> {
        let notify = if self.flagless.load(Ordering::Relaxed) {
            notify.without_flags()
        } else {
            notify
        };
        match self
            .run(&command::release(keys, value, notify), Traffic::Any)
            .await
        {
            Ok(reply) => command::read_release(&reply, keys.len()),
            Err(e) => self.release_refused(keys, value, notify, e).await,
        }
    }

    /// After a release failed with `e`: when it declared waiter flags and lines and the ACL
    /// refused them (`NOPERM`: a key pattern that covers the lock keys but not
    /// `<key>:w` / `<key>:q`, checked before the script runs), this node releases without
    /// them from now on, this time included, publishing every time (REDLOCK.md §9). Any
    /// other failure is returned as it is.
    async fn release_refused(
        &self,
        keys: &[Vec<u8>],
        value: &str,
        notify: Notify,
        e: NodeFailure,
    ) -> Result<(usize, usize), NodeFailure> {
        if !command::refused_flags(keys, notify, e.0) {
            return Err(e);
        }
        if !self.flagless.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                node = %self.address,
                error = %e.1,
                "a release that declares waiter flags and lines was refused; this node's releases publish every time (allow the <key>:w and <key>:q keys)"
            );
        }
        let reply = self
            .run(
                &command::release(keys, value, notify.without_flags()),
                Traffic::Any,
            )
            .await?;
        command::read_release(&reply, keys.len())
    }
}

impl Node {
    /// Sends a waiter's marks or unmarks (REDLOCK.md §9), `marks` being the prepared
    /// [`command::mark`] or [`command::unmark`] of its keys. On a single master every mark
    /// is queued on the connection at the future's first poll, so a request polled right
    /// after it follows it; failures are dropped (a mark only brings a notice).
    pub(crate) async fn mark(&self, marks: &[Arc<Prepared>]) {
        join_all(marks.iter().map(|m| self.run_prepared(m, Traffic::Lock))).await;
    }
}

impl Node {
    /// Whether none of `keys` exists here (`NotHeld`) or some does (`HeldByOther`): a read
    /// that tells a waiter whether a release came before its subscription. (A cluster
    /// connection splits a multi-key `EXISTS` by slot and adds the counts.)
    pub(crate) async fn vacant(&self, keys: &[Vec<u8>]) -> Result<NodeKind, NodeFailure> {
        let reply = self.run(&command::vacant(keys), Traffic::Lock).await?;
        command::read_vacant(&reply)
    }
}

impl Node {
    /// FENCED-ACQUIRE on this node. `keys` holds the lock keys followed by their counter
    /// keys. `Ok(Some(tokens))` is a vote for with one new counter per resource;
    /// `Ok(None)` a key held by another owner.
    pub(crate) async fn fenced_acquire(
        &self,
        keys: &[Vec<u8>],
        value: &str,
        ttl_ms: u64,
        counter_ttl_ms: u64,
    ) -> Result<Option<Vec<u64>>, NodeFailure> {
        let _writing = self.writing(value);
        let Some(groups) = self.split(keys, 2)? else {
            return self
                .fenced_acquire_slot(keys, value, ttl_ms, counter_ttl_ms)
                .await;
        };
        let parts = join_all(groups.iter().map(|g| {
            let sub = slots::subset(keys, 2, g);
            async move {
                self.fenced_acquire_slot(&sub, value, ttl_ms, counter_ttl_ms)
                    .await
            }
        }))
        .await;
        if parts.iter().all(|p| matches!(p, Ok(Some(_)))) {
            let mut tokens = vec![0; keys.len() / 2];
            for (g, part) in groups.iter().zip(parts) {
                for (&i, t) in g.iter().zip(part.ok().flatten().unwrap_or_default()) {
                    tokens[i] = t;
                }
            }
            return Ok(Some(tokens));
        }
        let won = parts.into_iter().map(|p| p.map(|t| t.is_some())).collect();
        match self
            .all_or_nothing(&keys[..keys.len() / 2], value, won)
            .await?
        {
            NodeKind::Ok => Err((
                NodeKind::Protocol,
                "a partial fenced acquisition reported success".to_owned(),
            )),
            _ => Ok(None),
        }
    }

    async fn fenced_acquire_slot(
        &self,
        keys: &[Vec<u8>],
        value: &str,
        ttl_ms: u64,
        counter_ttl_ms: u64,
    ) -> Result<Option<Vec<u64>>, NodeFailure> {
        let request = command::fenced_acquire(keys, value, ttl_ms, counter_ttl_ms);
        let reply = self.run(&request, Traffic::Fenced).await?;
        command::read_fenced_acquire(&reply, keys.len())
    }

    /// RAISE on this node (fencing phase 2): `Ok` when our keys are still there and the
    /// counters are now at least `tokens`; `NotHeld` (nothing written) otherwise.
    pub(crate) async fn raise(
        &self,
        keys: &[Vec<u8>],
        value: &str,
        tokens: &[u64],
        counter_ttl_ms: u64,
    ) -> Result<NodeKind, NodeFailure> {
        self.after_writes(value).await;
        let Some(groups) = self.split(keys, 2)? else {
            return self.raise_slot(keys, value, tokens, counter_ttl_ms).await;
        };
        let parts = join_all(groups.iter().map(|g| {
            let sub = slots::subset(keys, 2, g);
            let sub_tokens: Vec<u64> = g.iter().map(|&i| tokens[i]).collect();
            async move {
                self.raise_slot(&sub, value, &sub_tokens, counter_ttl_ms)
                    .await
            }
        }))
        .await;
        let mut kinds = Vec::with_capacity(parts.len());
        for p in parts {
            kinds.push(p?);
        }
        Ok(command::join_slots(&kinds))
    }

    async fn raise_slot(
        &self,
        keys: &[Vec<u8>],
        value: &str,
        tokens: &[u64],
        counter_ttl_ms: u64,
    ) -> Result<NodeKind, NodeFailure> {
        let request = command::raise(keys, value, tokens, counter_ttl_ms);
        let reply = self.run(&request, Traffic::Fenced).await?;
        command::read_raise(&reply)
    }
}
