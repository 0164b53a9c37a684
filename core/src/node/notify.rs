//! Release notification (REDLOCK.md §9): a waiting acquisition listens for releases of its
//! keys so that a release cuts its retry delay short. For braced keys a waiter marks the key's
//! waiter flag and stands in the key's line on each node (`quorumlock_proto::command::mark`),
//! and while the flag exists a release pops the first waiter and publishes its id on that
//! waiter's client's channel, `<lock key>:released:<client>` (a *named* notice): it wakes
//! exactly that waiter, whatever its turn in the client. When the waiter registered for grants,
//! the release also set the key to the waiter's value and the notice reads `<id> g<n>`, `n`
//! being the registration's number: the registry records the node as granted
//! ([`Listener::granted`]) for the waiter's current registration only. Bare keys, and flags
//! with nobody in line (an older client's waiter), publish the key on `<lock key>:released`,
//! which every client's waiters hear.
//!
//! Each node has one subscriber task with its own pub/sub connection (RESP2 needs one; under
//! RESP3 it is kept for simplicity), opened when the first waiter of the client listens and
//! closed after [`IDLE_CLOSE`] without listeners; a channel stays subscribed for [`LINGER`]
//! after its last listener left. Waiters register in a registry shared by
//! the client's nodes; a message on a channel marks its node in every waiter of that channel.
//!
//! One plain release wakes one waiter of the client per channel: the one that has waited longest
//! (the channel's first listener), once it heard a quorum; waiters for several keys ahead of
//! it are woken too, since their other keys may keep them waiting (see [`turn`]). The client's
//! other waiters of that key would only collide with it (a release frees the lock for one
//! holder). A woken waiter that loses its attempt stays first. When the first leaves, the
//! next gets what the leaver heard since its last attempt: nothing after a win (the driver
//! resets a winner: that release was its), the pending notice of one that gave up.
//! The others still retry on their own delays, so the order among a client's waiters is
//! the order of notified hand-overs, not a strict queue. Commands reach a node's task through one queue, so a `SUBSCRIBE` and a later
//! `UNSUBSCRIBE` of the same channel are sent in the order the registry decided them.
//!
//! Notifications are hints: a lost message, a dropped pub/sub connection or a channel the
//! ACL denies costs at most one normal retry delay, never correctness.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use redis::aio::{PubSubSink, PubSubStream};
use tokio::runtime::Handle;
use tokio::sync::{Notify, mpsc, oneshot};

use super::probe::Checks;
use super::{Node, classify, lock};
use crate::clock::MonoTime;
use crate::report::NodeKind;
use crate::warning::{Warning, WarningKind};
use quorumlock_proto::command;
use quorumlock_proto::grants;
use quorumlock_proto::line::bit;

/// How long a node's pub/sub connection stays open without listeners.
const IDLE_CLOSE: Duration = Duration::from_secs(30);
/// How long a channel stays subscribed after its last listener left: a client that waits for
/// one lock again and again (a worker that takes it in turn with other processes) then sends
/// no `UNSUBSCRIBE` and `SUBSCRIBE` per wait.
const LINGER: Duration = Duration::from_secs(1);
/// The pause before reconnecting a lost pub/sub connection that still has listeners.
const RECONNECT_DELAY: Duration = Duration::from_millis(250);

/// What one waiting acquisition has heard since it last looked: one bit per node.
struct Heard {
    /// The waiter's id in the keys' lines (`command::waiter_id`).
    id: Vec<u8>,
    nodes: AtomicU64,
    /// The nodes whose notices since the last reset named this waiter.
    named: AtomicU64,
    /// The nodes whose releases popped this waiter from the line.
    popped: AtomicU64,
    /// The nodes whose releases granted this waiter the key (REDLOCK.md §9) for its current
    /// registration: a subset of `popped`.
    granted: AtomicU64,
    /// The number of the waiter's current registration for grants (0: none).
    registration: AtomicU64,
    /// How many nodes must be heard from: a quorum, or every node whose subscription is live.
    threshold: AtomicUsize,
    /// Whether the acquisition waits for more than one key.
    multi: bool,
    /// The waiter won its lock ([`Listener::won`]): what it hears from now on is late.
    won: AtomicBool,
    wake: Notify,
}

impl Heard {
    fn new(id: Vec<u8>, threshold: usize, keys: usize) -> Self {
        Heard {
            id,
            nodes: AtomicU64::new(0),
            named: AtomicU64::new(0),
            popped: AtomicU64::new(0),
            granted: AtomicU64::new(0),
            registration: AtomicU64::new(0),
            threshold: AtomicUsize::new(threshold),
            multi: keys > 1,
            won: AtomicBool::new(false),
            wake: Notify::new(),
        }
    }

    /// Whether a release was heard from enough nodes since the last reset.
    fn ready(&self) -> bool {
        self.nodes.load(Ordering::Relaxed).count_ones() as usize
            >= self.threshold.load(Ordering::Relaxed)
    }
}

/// How many ids of waiters that won [`Registry`] remembers, so that the late notices naming
/// them wake nobody.
const WINNERS: usize = 32;

/// Which waiters listen on which channel; shared by the client's subscriber tasks.
struct Registry {
    channels: Mutex<HashMap<Vec<u8>, Vec<Arc<Heard>>>>,
    /// The ids of the last [`WINNERS`] waiters that won their lock: a notice naming one of
    /// them is late (the release it tells was the winner's, answered by its attempt).
    winners: Mutex<VecDeque<Vec<u8>>>,
    /// `:<client>`, the end of this client's named channels.
    suffix: Vec<u8>,
}

/// The waiters of a channel whose turn it is: the longest waiting one, and before it any
/// waiter for several keys (whose other keys may keep it waiting: it must not hold up the
/// waiters behind it).
fn turn(waiters: &[Arc<Heard>]) -> &[Arc<Heard>] {
    let end = waiters
        .iter()
        .position(|w| !w.multi)
        .map_or(waiters.len(), |i| i + 1);
    &waiters[..end]
}

impl Registry {
    fn new(client: &[u8]) -> Self {
        let mut suffix = Vec::with_capacity(client.len() + 1);
        suffix.push(b':');
        suffix.extend_from_slice(client);
        Registry {
            channels: Mutex::default(),
            winners: Mutex::default(),
            suffix,
        }
    }

    /// A message on `channel` came from `node`. A named one (on this client's channel of a
    /// key) wakes the waiter it names once it heard a quorum, whatever its turn; one that
    /// names no waiter here (it left as the release came) counts as a plain notice. On a plain
    /// channel every waiter notes the release, and those whose turn it is are woken once
    /// they heard a quorum.
    fn deliver(&self, node: usize, channel: &[u8], payload: &[u8]) {
        let bit = bit(node);
        let map = lock(&self.channels);
        let plain = match channel.strip_suffix(self.suffix.as_slice()) {
            Some(plain) => {
                let (payload, granted) = command::read_notice(payload);
                let named = map
                    .get(channel)
                    .and_then(|w| w.iter().find(|w| w.id == payload));
                if let Some(w) = named {
                    if w.won.load(Ordering::Relaxed) {
                        return;
                    }
                    w.nodes.fetch_or(bit, Ordering::Relaxed);
                    w.named.fetch_or(bit, Ordering::Relaxed);
                    w.popped.fetch_or(bit, Ordering::Relaxed);
                    if let Some(n) = granted {
                        // A grant of a registration the waiter gave back since (its LEAVE
                        // handed that key on) is no grant now.
                        if !grants::counts(w.registration.load(Ordering::Relaxed), n) {
                            return;
                        }
                        w.granted.fetch_or(bit, Ordering::Relaxed);
                    }
                    if w.ready() {
                        w.wake.notify_one();
                    }
                    return;
                }
                // A winner's late notice, or a key granted to a waiter that left: its LEAVE
                // hands the key on, with a notice of its own.
                if granted.is_some() || lock(&self.winners).iter().any(|id| id == payload) {
                    return;
                }
                plain
            }
            None => channel,
        };
        if let Some(waiters) = map.get(plain) {
            for w in waiters {
                w.nodes.fetch_or(bit, Ordering::Relaxed);
            }
            for w in turn(waiters).iter().filter(|w| w.ready()) {
                w.wake.notify_one();
            }
        }
    }

    fn all(&self) -> Vec<Vec<u8>> {
        lock(&self.channels).keys().cloned().collect()
    }

    fn has(&self, channel: &[u8]) -> bool {
        lock(&self.channels).contains_key(channel)
    }

    fn is_empty(&self) -> bool {
        lock(&self.channels).is_empty()
    }
}

enum Cmd {
    Subscribe(Vec<u8>),
    Unsubscribe(Vec<u8>),
    /// Answered once every command queued before it is done: true when the node's
    /// subscriptions are live.
    Sync(oneshot::Sender<bool>),
}

/// The client's release notification: one subscriber task per node.
pub(crate) struct Notifier {
    registry: Arc<Registry>,
    queues: Vec<mpsc::UnboundedSender<Cmd>>,
    /// This client's id in waiter ids and named channels: 16 random hex digits.
    client: Vec<u8>,
    /// The number of the next waiter.
    next: AtomicU64,
}

impl Notifier {
    /// Starts one (idle) subscriber task per node on `runtime`.
    pub(crate) fn new(nodes: &[Arc<Node>], runtime: &Handle) -> Self {
        let client = command::client_id(crate::value::random8());
        let registry = Arc::new(Registry::new(&client));
        let queues = nodes
            .iter()
            .map(|node| {
                let (tx, rx) = mpsc::unbounded_channel();
                let task = Subscriber {
                    index: node.index,
                    address: node.address.clone(),
                    client: node.target.pubsub_client().clone(),
                    timeout: node.checks.connect_timeout,
                    checks: node.checks.clone(),
                    registry: registry.clone(),
                    conn: None,
                    denied: false,
                    subscribed: HashSet::new(),
                    lingering: HashMap::new(),
                };
                runtime.spawn(task.run(rx));
                tx
            })
            .collect();
        Self {
            registry,
            queues,
            client,
            next: AtomicU64::new(0),
        }
    }

    /// A new waiter id of this client (`command::waiter_id`).
    pub(crate) fn waiter(&self) -> Vec<u8> {
        command::waiter_id(&self.client, self.next.fetch_add(1, Ordering::Relaxed))
    }

    /// Listens for releases of `keys` on every node and waits (up to `timeout`) until the
    /// subscriptions are live; with `id` ([`Self::waiter`]) as a waiter standing in the keys'
    /// lines, on this client's named channels too. `None` when no node could subscribe: the
    /// caller polls.
    pub(crate) async fn listen(
        self: &Arc<Self>,
        keys: &[Vec<u8>],
        id: Option<Vec<u8>>,
        quorum: usize,
        timeout: Duration,
    ) -> Option<Listener> {
        let client = id.is_some().then_some(self.client.as_slice());
        let channels = command::release_channels(keys, client);
        let heard = Arc::new(Heard::new(id.unwrap_or_default(), quorum, keys.len()));
        {
            let mut map = lock(&self.registry.channels);
            for ch in &channels {
                let waiters = map.entry(ch.clone()).or_default();
                if waiters.is_empty() {
                    // Queued under the registry lock: the order of SUBSCRIBE and UNSUBSCRIBE
                    // of one channel is the order of the registry's decisions.
                    for q in &self.queues {
                        let _ = q.send(Cmd::Subscribe(ch.clone()));
                    }
                }
                waiters.push(heard.clone());
            }
        }
        let listener = Listener {
            notifier: self.clone(),
            heard,
            channels,
        };
        let acks = self.queues.iter().map(|q| {
            let (tx, rx) = oneshot::channel();
            let _ = q.send(Cmd::Sync(tx));
            async move { rx.await.unwrap_or(false) }
        });
        let live = tokio::time::timeout(timeout, futures_util::future::join_all(acks))
            .await
            .map_or(0, |acks| acks.into_iter().filter(|&ok| ok).count());
        if live == 0 {
            return None;
        }
        // With fewer live subscriptions than the quorum, every live node publishing is the
        // best evidence the waiter can get.
        listener
            .heard
            .threshold
            .store(quorum.min(live), Ordering::Relaxed);
        Some(listener)
    }
}

/// One waiting acquisition's subscription; unsubscribes (when it was the last listener of a
/// channel) on drop.
pub(crate) struct Listener {
    notifier: Arc<Notifier>,
    heard: Arc<Heard>,
    channels: Vec<Vec<u8>>,
}

impl Listener {
    /// Forgets what was heard so far: called as an attempt starts, whose requests see the
    /// state those notices announced.
    pub(crate) fn reset(&self) {
        self.heard.nodes.store(0, Ordering::Relaxed);
        self.heard.named.store(0, Ordering::Relaxed);
    }

    /// The nodes whose notices since the last [`reset`](Self::reset) named this waiter.
    pub(crate) fn named(&self) -> u64 {
        self.heard.named.load(Ordering::Relaxed)
    }

    /// The nodes whose releases popped this waiter from its line.
    pub(crate) fn popped(&self) -> u64 {
        self.heard.popped.load(Ordering::Relaxed)
    }

    /// The nodes whose releases granted this waiter the key: they set it to the value the
    /// waiter registered with its first marks ([`command::mark_registered`]).
    pub(crate) fn granted(&self) -> u64 {
        self.heard.granted.load(Ordering::Relaxed)
    }

    /// The waiter's registration for grants is now number `n`: the grants of earlier ones
    /// (given back) are forgotten, and their notices no longer count.
    pub(crate) fn expect_grants(&self, n: u64) {
        // Under the registry's lock, which `Registry::deliver` holds from reading the number
        // to recording the grant: a notice of the old number cannot land after the reset.
        let _map = lock(&self.notifier.registry.channels);
        self.heard.registration.store(n, Ordering::Relaxed);
        self.heard.granted.store(0, Ordering::Relaxed);
    }

    /// This waiter won its lock: notices that name it from now on are late, and wake
    /// nobody.
    pub(crate) fn won(&self) {
        self.heard.won.store(true, Ordering::Relaxed);
        if self.heard.id.is_empty() {
            return;
        }
        let mut winners = lock(&self.notifier.registry.winners);
        if winners.len() == WINNERS {
            winners.pop_front();
        }
        winners.push_back(self.heard.id.clone());
    }

    /// Completes once releases were heard from the threshold's number of nodes (a quorum, or
    /// every node whose subscription is live) since the last [`reset`](Self::reset).
    /// Only the client's longest waiter of a channel is woken this way (see the module's
    /// documentation); the others keep their retry delay until they are first.
    pub(crate) async fn released(&self) {
        loop {
            if self.woken() {
                return;
            }
            self.heard.wake.notified().await;
        }
    }

    /// Whether this waiter heard a release and was named, or it is its turn on one of its
    /// channels (read under the registry's lock, which a leaving waiter's hand-over also
    /// takes).
    fn woken(&self) -> bool {
        let map = lock(&self.notifier.registry.channels);
        self.heard.ready()
            && (self.named() != 0
                || self.channels.iter().any(|ch| {
                    map.get(ch)
                        .is_some_and(|w| turn(w).iter().any(|w| Arc::ptr_eq(w, &self.heard)))
                }))
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        let mut map = lock(&self.notifier.registry.channels);
        // What this waiter heard since its last attempt (nothing after it won: that was
        // late) goes to the waiters whose turn comes now.
        let heard = if self.heard.won.load(Ordering::Relaxed) {
            0
        } else {
            self.heard.nodes.load(Ordering::Relaxed)
        };
        for ch in &self.channels {
            let Some(waiters) = map.get_mut(ch) else {
                continue;
            };
            let Some(at) = waiters.iter().position(|w| Arc::ptr_eq(w, &self.heard)) else {
                continue;
            };
            let closed_the_turn = turn(waiters).len() == at + 1 && !self.heard.multi;
            waiters.remove(at);
            if closed_the_turn {
                for next in &turn(waiters)[at..] {
                    // (keeping what named it: those notices were its own)
                    let named = next.named.load(Ordering::Relaxed);
                    next.nodes.store(heard | named, Ordering::Relaxed);
                    if next.ready() {
                        next.wake.notify_one();
                    }
                }
            }
            if waiters.is_empty() {
                map.remove(ch);
                for q in &self.notifier.queues {
                    let _ = q.send(Cmd::Unsubscribe(ch.clone()));
                }
            }
        }
    }
}

/// One node's subscriber task and its pub/sub connection.
struct Subscriber {
    index: usize,
    address: String,
    client: redis::Client,
    timeout: Duration,
    checks: Arc<Checks>,
    registry: Arc<Registry>,
    conn: Option<(PubSubSink, PubSubStream)>,
    /// The ACL denies SUBSCRIBE on this connection (warned once per connection).
    denied: bool,
    /// Channels subscribed on this connection (not denied).
    subscribed: HashSet<Vec<u8>>,
    /// Subscribed channels without listeners, and when to unsubscribe them.
    lingering: HashMap<Vec<u8>, MonoTime>,
}

impl Subscriber {
    async fn run(mut self, mut rx: mpsc::UnboundedReceiver<Cmd>) {
        let mut idle_since: Option<MonoTime> = None;
        let mut retry_at: Option<MonoTime> = None;
        loop {
            let idle_close = idle_since.map(|t| t + IDLE_CLOSE);
            tokio::select! {
                cmd = rx.recv() => match cmd {
                    None => return,
                    Some(Cmd::Subscribe(ch)) => {
                        idle_since = None;
                        self.subscribe(&ch).await;
                    }
                    Some(Cmd::Unsubscribe(ch)) => {
                        if self.conn.is_some() && self.subscribed.contains(&ch) {
                            self.lingering.insert(ch, MonoTime::now() + LINGER);
                        } else if self.registry.is_empty() && self.lingering.is_empty() {
                            idle_since = Some(MonoTime::now());
                        }
                    }
                    Some(Cmd::Sync(ack)) => {
                        let _ = ack.send(self.conn.is_some() && !self.denied);
                    }
                },
                msg = next_message(&mut self.conn) => match msg {
                    Some(msg) => {
                        if let Ok(ch) = msg.get_channel::<Vec<u8>>() {
                            self.registry.deliver(self.index, &ch, msg.get_payload_bytes());
                        }
                    }
                    None => {
                        tracing::debug!(node = self.index, "pub/sub connection lost");
                        self.conn = None;
                    }
                },
                () = sleep_until(self.lingering.values().min().copied()), if !self.lingering.is_empty() => {
                    self.unsubscribe_expired().await;
                    if self.registry.is_empty() && self.lingering.is_empty() {
                        idle_since = Some(MonoTime::now());
                    }
                }
                () = sleep_until(idle_close), if self.conn.is_some() => {
                    tracing::debug!(node = self.index, "closing the idle pub/sub connection");
                    self.conn = None;
                    idle_since = None;
                }
                () = sleep_until(retry_at), if self.conn.is_none() => {
                    retry_at = None;
                    if !self.registry.is_empty() {
                        self.connect().await;
                    }
                }
            }
            if self.conn.is_none() {
                // Whatever dropped the connection (a loss, a failed command, idleness), its
                // subscriptions are gone; listeners left get a new one after a pause.
                self.subscribed.clear();
                self.lingering.clear();
                if retry_at.is_none() && !self.registry.is_empty() {
                    retry_at = Some(MonoTime::now() + RECONNECT_DELAY);
                }
            }
        }
    }

    /// Opens the connection and subscribes every channel that has listeners now.
    async fn connect(&mut self) -> bool {
        let opened = tokio::time::timeout(self.timeout, self.client.get_async_pubsub()).await;
        let pubsub = match opened {
            Ok(Ok(p)) => p,
            Ok(Err(e)) => {
                tracing::debug!(node = self.index, error = %e, "pub/sub connect failed");
                return false;
            }
            Err(_) => {
                tracing::debug!(node = self.index, "pub/sub connect timed out");
                return false;
            }
        };
        let (sink, stream) = pubsub.split();
        self.conn = Some((sink, stream));
        self.denied = false;
        // A new connection has only the subscriptions made below.
        self.subscribed.clear();
        self.lingering.clear();
        for ch in self.registry.all() {
            if !self.send(true, &ch).await {
                break;
            }
        }
        self.conn.is_some()
    }

    async fn subscribe(&mut self, ch: &[u8]) {
        if self.conn.is_none() {
            // Connecting subscribes every registered channel, this one included.
            self.connect().await;
        } else if self.lingering.remove(ch).is_some() {
            // Still subscribed on this connection.
        } else if self.registry.has(ch) && !self.subscribed.contains(ch) {
            self.send(true, ch).await;
        }
    }

    /// Unsubscribes the lingering channels whose time came and that found no new listener.
    async fn unsubscribe_expired(&mut self) {
        let now = MonoTime::now();
        let due: Vec<Vec<u8>> = self
            .lingering
            .iter()
            .filter(|(_, at)| **at <= now)
            .map(|(ch, _)| ch.clone())
            .collect();
        for ch in due {
            self.lingering.remove(&ch);
            // A listener that arrived since has its SUBSCRIBE queued: it keeps the channel.
            if self.conn.is_some() && !self.registry.has(&ch) {
                self.send(false, &ch).await;
            }
        }
    }

    /// Sends SUBSCRIBE (or UNSUBSCRIBE) and waits for the confirmation. False when the
    /// connection was dropped because of the failure.
    async fn send(&mut self, subscribe: bool, ch: &[u8]) -> bool {
        let Some((sink, _)) = &mut self.conn else {
            return false;
        };
        let r = if subscribe {
            tokio::time::timeout(self.timeout, sink.subscribe(ch)).await
        } else {
            tokio::time::timeout(self.timeout, sink.unsubscribe(ch)).await
        };
        let e = match r {
            Ok(Ok(())) => {
                if subscribe {
                    self.subscribed.insert(ch.to_vec());
                } else {
                    self.subscribed.remove(ch);
                }
                return true;
            }
            Ok(Err(e)) => e,
            Err(_) => {
                tracing::debug!(node = self.index, "pub/sub command timed out; reconnecting");
                self.conn = None;
                return false;
            }
        };
        let (kind, text) = classify(&e);
        if kind == NodeKind::NoPermission {
            // Redis 7 denies channels to ACL users by default: poll instead, warn once.
            if !std::mem::replace(&mut self.denied, true) {
                self.checks.warner.warn(Warning::new(
                    WarningKind::NotifyDenied,
                    Some((self.index, &self.address)),
                    format!("release notification is denied by the ACL ({text}); waiters poll this node. Allow the channels: add &quorumlock:* (or the key prefix's channels) to the lock user"),
                ));
            }
            return true;
        }
        tracing::debug!(node = self.index, %text, "pub/sub command failed; reconnecting");
        self.conn = None;
        false
    }
}

async fn next_message(conn: &mut Option<(PubSubSink, PubSubStream)>) -> Option<redis::Msg> {
    match conn {
        Some((_, stream)) => stream.next().await,
        None => std::future::pending().await,
    }
}

async fn sleep_until(at: Option<MonoTime>) {
    match at {
        Some(t) => tokio::time::sleep(t.saturating_since(MonoTime::now())).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A client's notifier with no subscriber tasks behind it.
    fn notifier() -> Arc<Notifier> {
        Arc::new(Notifier {
            registry: Arc::new(Registry::new(b"c")),
            queues: Vec::new(),
            client: b"c".to_vec(),
            next: AtomicU64::new(0),
        })
    }

    /// A waiter listening on `k`'s channel after those already there.
    fn join(notifier: &Arc<Notifier>, threshold: usize) -> Listener {
        join_keys(notifier, threshold, &[b"k"])
    }

    /// A waiter listening on the channels of `keys` after those already there.
    fn join_keys(notifier: &Arc<Notifier>, threshold: usize, keys: &[&[u8]]) -> Listener {
        let keys: Vec<Vec<u8>> = keys.iter().map(|k| k.to_vec()).collect();
        let heard = Arc::new(Heard::new(notifier.waiter(), threshold, keys.len()));
        let channels = command::release_channels(&keys, Some(&notifier.client));
        let mut map = lock(&notifier.registry.channels);
        for ch in &channels {
            map.entry(ch.clone()).or_default().push(heard.clone());
        }
        drop(map);
        Listener {
            notifier: notifier.clone(),
            heard,
            channels,
        }
    }

    /// Whether `l` is woken now (`released` completes at once when it is).
    async fn woken(l: &Listener) -> bool {
        tokio::time::timeout(Duration::from_millis(20), l.released())
            .await
            .is_ok()
    }

    fn release(n: &Notifier, nodes: &[usize]) {
        for &i in nodes {
            n.registry.deliver(i, b"k:released", b"k");
        }
    }

    /// Releases on `nodes` that name waiter `id` on this client's channel of `k`.
    fn name(n: &Notifier, id: &[u8], nodes: &[usize]) {
        for &i in nodes {
            n.registry.deliver(i, b"k:released:c", id);
        }
    }

    #[tokio::test]
    async fn grant_notices_name_their_waiter_and_a_winner_passes_nothing_on() {
        let n = notifier();
        let (a, b) = (join(&n, 2), join(&n, 2));
        a.expect_grants(1);
        name(&n, b"c.0 g1", &[0]);
        name(&n, b"c.0", &[1]);
        assert!(woken(&a).await, "named by a quorum, one of them a grant");
        assert!(!woken(&b).await);
        assert_eq!((a.named(), a.popped(), a.granted()), (0b11, 0b11, 0b01));
        // The attempt's reset keeps the grants: they hold the registered value.
        a.reset();
        assert_eq!(a.granted(), 0b01);
        // A grant to a waiter that left wakes nobody: its LEAVE hands the key on.
        name(&n, b"c.9 g1", &[0, 1, 2]);
        assert!(!woken(&b).await);
        // A grant of a registration given back since counts for nothing.
        a.expect_grants(2);
        name(&n, b"c.0 g1", &[2]);
        assert_eq!(a.granted(), 0);
        name(&n, b"c.0 g2", &[0]);
        assert_eq!(a.granted(), 0b01);
        // The grants a winner hears late are neither counted nor handed on when it leaves.
        a.won();
        name(&n, b"c.0 g2", &[2, 3]);
        assert_eq!(a.granted(), 0b01);
        drop(a);
        assert!(!woken(&b).await, "the winner's late grants woke b");
    }

    #[tokio::test]
    async fn a_notice_naming_a_winner_wakes_nobody() {
        let n = notifier();
        let (a, b) = (join(&n, 2), join(&n, 2));
        let id = a.heard.id.clone();
        a.won();
        drop(a);
        name(&n, &id, &[0, 1, 2]);
        assert!(!woken(&b).await, "the winner's late notices woke b");
        // A waiter that gave up hands its notices on: they were releases nobody took.
        let c = join(&n, 2);
        let id = b.heard.id.clone();
        drop(b);
        name(&n, &id, &[0, 1]);
        assert!(woken(&c).await);
    }

    #[tokio::test]
    async fn a_named_waiter_is_woken_whatever_its_turn_and_leaves_the_queue_there() {
        let n = notifier();
        let (a, b) = (join(&n, 2), join(&n, 2));
        assert_eq!(
            (&a.heard.id[..], &b.heard.id[..]),
            (&b"c.0"[..], &b"c.1"[..])
        );
        // b stands first in the nodes' line (it marked there first): it is named, not a.
        name(&n, b"c.1", &[0]);
        assert!(!woken(&b).await, "one node is not a quorum");
        name(&n, b"c.1", &[3]);
        assert!(woken(&b).await, "named by a quorum, second in the client");
        assert!(!woken(&a).await, "a named release wakes nobody else");
        assert_eq!((b.named(), b.popped()), (0b1001, 0b1001));
        // The attempt resets what it heard; the nodes that popped b stay known.
        b.reset();
        assert_eq!((b.named(), b.popped()), (0, 0b1001));
        // A notice naming a waiter that left counts as a plain one: a's turn.
        drop(b);
        name(&n, b"c.1", &[1, 2]);
        assert!(woken(&a).await);
    }

    #[tokio::test]
    async fn notices_before_an_attempt_are_forgotten_and_the_next_quorum_wakes() {
        let n = notifier();
        let l = join(&n, 2);
        // Notices from a quorum of nodes before an attempt ...
        release(&n, &[0, 1]);
        // ... are forgotten when it starts, so its failure starts no second attempt.
        l.reset();
        assert!(!woken(&l).await);
        // The next release still wakes the waiter, but only once a quorum published.
        release(&n, &[2]);
        assert!(!woken(&l).await, "one node is not a quorum");
        release(&n, &[0]);
        assert!(woken(&l).await);
        // Other channels and repeated notices from one node do not count.
        l.reset();
        n.registry.deliver(0, b"other:released", b"other");
        release(&n, &[1, 1]);
        assert!(!woken(&l).await);
    }

    #[tokio::test]
    async fn one_release_wakes_the_longest_waiter_only() {
        let n = notifier();
        let (a, b, c) = (join(&n, 2), join(&n, 2), join(&n, 2));
        release(&n, &[0, 1]);
        assert!(woken(&a).await);
        assert!(
            !woken(&b).await && !woken(&c).await,
            "one release, one waiter"
        );
        // a tries and loses: it stays first for the next release.
        a.reset();
        release(&n, &[2, 0]);
        assert!(woken(&a).await);
        assert!(!woken(&b).await);
        // a tries and wins: b is first, and the release a answered does not wake it.
        a.reset();
        drop(a);
        assert!(!woken(&b).await, "b was woken by a spent release");
        release(&n, &[1, 2]);
        assert!(woken(&b).await);
        assert!(!woken(&c).await);
    }

    #[tokio::test]
    async fn a_waiter_leaving_with_a_notice_unused_hands_it_on() {
        let n = notifier();
        let (a, b) = (join(&n, 2), join(&n, 2));
        release(&n, &[0, 1]);
        drop(a);
        assert!(woken(&b).await);
        // Half a release heard by the first when it leaves is not lost either.
        let c = join(&n, 2);
        b.reset();
        release(&n, &[2]);
        drop(b);
        assert!(!woken(&c).await, "one node is not a quorum");
        release(&n, &[0]);
        assert!(
            woken(&c).await,
            "the notice heard before the hand-over counts"
        );
    }

    #[tokio::test]
    async fn a_waiter_for_several_keys_does_not_hold_up_the_next() {
        let n = notifier();
        // a waits for k and j (j may stay held), b for k only, c behind b.
        let a = join_keys(&n, 2, &[b"k", b"j"]);
        let (b, c) = (join(&n, 2), join(&n, 2));
        release(&n, &[0, 1]);
        assert!(woken(&a).await && woken(&b).await);
        assert!(!woken(&c).await, "b's turn ends the turn");
        // A release of j alone wakes a, whose turn it is there.
        a.reset();
        n.registry.deliver(0, b"j:released", b"j");
        n.registry.deliver(1, b"j:released", b"j");
        assert!(woken(&a).await);
    }

    #[test]
    fn the_last_listener_leaving_unregisters_its_channel() {
        let n = notifier();
        drop(join(&n, 1));
        assert!(n.registry.is_empty());
    }
}
