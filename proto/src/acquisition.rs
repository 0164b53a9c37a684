//! One acquire call as a state machine without I/O (REDLOCK.md §3, §7, §9): attempts with a
//! fresh value each, the round of votes with its early decision and deadline, fencing phase 2,
//! the verdict on the validity left, the cleanup of a failed attempt, and the waits between
//! attempts (retry delay with jitter, wake-ups by release notices) within the wait budget.
//!
//! The driver owns sockets, timers and randomness. It loops:
//! 1. [`Acquisition::poll_output`] until `None`, acting on each [`Output`]: send a request,
//!    start a cleanup, start listening for releases, or return the result;
//! 2. waits for the first of: a reply ([`Acquisition::handle_answer`],
//!    [`Acquisition::handle_counters`]), the time of [`Acquisition::poll_timeout`]
//!    ([`Acquisition::handle_timeout`]), the end of the cleanup it started
//!    ([`Acquisition::handle_cleaned`]), a release notice ([`Acquisition::handle_released`]),
//!    a vacancy seen after subscribing ([`Acquisition::handle_vacant`]), or cancellation
//!    ([`Acquisition::cancel`]).
//!
//! Times are the driver's monotonic clock in microseconds. Requests of one round must all be
//! written (queued on their connections) before the driver acts on any reply, so that a
//! cleanup is always queued behind the request it cleans.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use crate::acquire::{AttemptVerdict, cleanup_plan, must_clean, next_attempt, remember, verdict};
use crate::config::{LockOptions, Timing};
use crate::error::{Error, ErrorKind, MAX_ATTEMPT_REPORTS, Result};
use crate::fencing;
use crate::quorum::{Decide, Round, quorum, validity_us};
use crate::report::{NodeKind, NodeResult, Report};
use crate::round::{Answer, Tally};
use crate::value::{self, Random, VALUE_BYTES};

/// The longest pause before the attempt that follows a wake-up when the waiter won some nodes
/// in its last attempt, a split vote among waiters (REDLOCK.md §9: `uniform(0, 20 ms)`).
/// Otherwise a wake-up tries at once: a client wakes one waiter per release, and a spread
/// among the waiters of different clients (1 ms until 2026-12-05) gained nothing in the
/// hand-off benchmark with 8 or 32 clients, and cost its mean when a releaser re-acquires.
pub const SPLIT_SPREAD: Duration = Duration::from_millis(20);

/// The shortest time a failed attempt decided by refusals waits for its silent nodes'
/// answers before it cleans them; otherwise it waits as long as its round took until it was
/// decided, and never past the round's deadline (REDLOCK.md §3.2).
pub const SUSPECT_WAIT: Duration = Duration::from_millis(1);

/// One configured node as the machine sees it.
#[derive(Clone, Debug)]
pub struct Member {
    /// The node's address, for reports.
    pub address: String,
    /// A Redis Cluster member: its client retries a request after an I/O error by itself, so
    /// a `HeldByOther` there may follow our own first write, and a failed attempt cleans it.
    pub cluster: bool,
}

/// A request to send to one node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// ACQUIRE (`SET key value NX PX ttl`, or ACQUIRE-MULTI) over the lock keys.
    Acquire {
        /// This attempt's value.
        value: Arc<str>,
    },
    /// FENCED-ACQUIRE over the lock keys and their counters (answer with counters).
    FencedAcquire {
        /// This attempt's value.
        value: Arc<str>,
    },
    /// Fencing phase 2: the owner-checked RAISE of the counters to `tokens`.
    Raise {
        /// This attempt's value.
        value: Arc<str>,
        /// The tokens, one per resource.
        tokens: Arc<[u64]>,
    },
}

/// What the driver must do next.
#[derive(Debug)]
pub enum Output {
    /// Attempt number `number` (1-based) starts: the requests of its round follow.
    Attempt {
        /// The attempt's number.
        number: u32,
    },
    /// Send `request` to node `node` as part of round `round` (an id to give back with the
    /// answer).
    Send {
        /// The round's id.
        round: u64,
        /// The node's index.
        node: usize,
        /// What to send.
        request: Request,
    },
    /// Release `value` on `nodes` (a failed attempt's cleanup), and call
    /// [`Acquisition::handle_cleaned`] when every node answered or timed out.
    Clean {
        /// The node indices.
        nodes: Vec<usize>,
        /// The failed attempt's value.
        value: Arc<str>,
    },
    /// The first wait of this call starts: a driver with release notices subscribes now,
    /// then checks whether the keys were released before the subscription was live
    /// ([`crate::acquire::vacant`]) and calls [`Acquisition::handle_vacant`] if so.
    Listen,
    /// The call is over.
    Done(Result<Grant>),
}

/// A granted lock.
#[derive(Clone, Debug)]
pub struct Grant {
    /// The value written on the nodes.
    pub value: Arc<str>,
    /// When the successful attempt started (T1).
    pub t1_us: u64,
    /// When it was decided (T2).
    pub t2_us: u64,
    /// `T1 + ttl - drift`: the lock is safe to use until then.
    pub valid_until_us: u64,
    /// Attempts made, this one included.
    pub attempts: u32,
    /// The successful round, per node.
    pub report: Report,
    /// The reports of the failed attempts before it (at most `MAX_ATTEMPT_REPORTS`).
    pub history: Vec<Report>,
    /// Fencing tokens, one per resource, when fenced.
    pub tokens: Option<Vec<u64>>,
}

/// What [`Acquisition::handle_granted`] made of the grants heard.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Granted {
    /// The call is won: [`Output::Done`] follows.
    Won,
    /// Not yet: fewer than a quorum, or an attempt in flight (its verdict comes first).
    NotNow,
    /// A quorum, but less validity left than the call needs.
    TooLate,
}

/// What cancelling left to do.
#[derive(Debug)]
pub struct Cancelled {
    /// The attempt in flight's cleanup: release its value on these nodes.
    pub clean: Option<(Vec<usize>, Arc<str>)>,
    /// The `Cancelled` error for the caller (once the cleanups ended).
    pub error: Error,
}

#[derive(Debug)]
struct Attempt {
    value: Arc<str>,
    t1: u64,
    tally: Tally,
    counters: Vec<Option<Vec<u64>>>,
    jitter: [u8; 8],
    spread: [u8; 8],
}

#[derive(Debug)]
struct Raising {
    attempt: Attempt,
    phase1: Round,
    tally: Tally,
    tokens: Vec<u64>,
    held: usize,
}

/// A failed attempt whose only nodes that may hold its key had not answered when it was
/// decided: their answers tell which of them the cleanup needs. In a contended hand-off most
/// losing attempts are decided by other holders' refusals while the last nodes' replies are
/// on their way, and those replies are refusals too. A node that does not answer within
/// [`SUSPECT_WAIT`] or the time the round took (at most until the round's deadline) is
/// cleaned as it was before, so a silent node costs a failed attempt little more than the
/// round's own duration.
#[derive(Debug)]
struct Suspects {
    /// Not answered yet.
    nodes: Vec<usize>,
    /// Answered with a write or an unknown outcome: to clean.
    dirty: Vec<usize>,
    deadline: u64,
    value: Arc<str>,
}

#[derive(Debug)]
struct Wait {
    until: u64,
    /// A cleanup runs, or `suspects` decide whether one is needed.
    cleaning: bool,
    suspects: Option<Suspects>,
    spread_cap: Duration,
    spread: [u8; 8],
    /// A release notice already moved this wait.
    woken: bool,
    /// Set when no attempt follows: the error to return once the cleanup ended.
    last: Option<Error>,
}

#[derive(Debug)]
enum State {
    Ready,
    Voting(Box<Attempt>),
    Raising(Box<Raising>),
    Waiting(Wait),
    Finished,
}

/// One acquire call in progress.
#[derive(Debug)]
pub struct Acquisition {
    members: Arc<[Member]>,
    opts: LockOptions,
    ttl: Duration,
    ttl_ms: u64,
    node_timeout: Duration,
    drift: Duration,
    min_validity_us: i64,
    start: u64,
    attempt: u32,
    round: u64,
    history: Vec<Report>,
    state: State,
    out: VecDeque<Output>,
    #[cfg(feature = "mutants")]
    mutant: crate::mutant::Mutant,
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

impl Acquisition {
    /// A call over `members` with `opts`, started at `now_us`.
    ///
    /// # Errors
    /// `InvalidArgument` when the options do not pass `timing`'s checks.
    pub fn new(
        members: Arc<[Member]>,
        opts: LockOptions,
        timing: &Timing,
        now_us: u64,
    ) -> Result<Self> {
        let ttl = opts.get_ttl();
        let ttl_ms = timing.check(&opts, ttl)?;
        if members.is_empty() {
            return Err(Error::invalid("at least one node is needed"));
        }
        Ok(Self {
            node_timeout: opts.effective_node_timeout(ttl),
            drift: timing.drift(ttl),
            min_validity_us: i64::try_from(opts.effective_min_validity(ttl).as_micros())
                .unwrap_or(i64::MAX),
            members,
            opts,
            ttl,
            ttl_ms,
            start: now_us,
            attempt: 0,
            round: 0,
            history: Vec::new(),
            state: State::Ready,
            out: VecDeque::new(),
            #[cfg(feature = "mutants")]
            mutant: crate::mutant::Mutant::None,
        })
    }

    /// The same call with `mutant` planted in its decisions (the simulator's mutants; see
    /// [`crate::mutant`]).
    #[cfg(feature = "mutants")]
    pub fn with_mutant(mut self, mutant: crate::mutant::Mutant) -> Self {
        self.mutant = mutant;
        self
    }

    /// The TTL in milliseconds, for the requests.
    pub fn ttl_ms(&self) -> u64 {
        self.ttl_ms
    }

    /// The bound on each node's reply.
    pub fn node_timeout(&self) -> Duration {
        self.node_timeout
    }

    /// The options of this call.
    pub fn options(&self) -> &LockOptions {
        &self.opts
    }

    /// Attempts started so far.
    pub fn attempts(&self) -> u32 {
        self.attempt
    }

    /// The id of the latest round (the one [`Acquisition::handle_timeout`] times out).
    pub fn round(&self) -> u64 {
        self.round
    }

    /// Whether a release notice would wake this call now: it waits between attempts and no
    /// notice woke this wait yet. A driver whose notices are level-triggered listens only
    /// while this holds.
    pub fn wants_release_notice(&self) -> bool {
        matches!(&self.state, State::Waiting(w) if w.last.is_none() && !w.woken)
    }

    /// The next thing to do, or `None` until an event arrives. `random` gives each attempt
    /// its value and jitter.
    pub fn poll_output(&mut self, now_us: u64, random: &mut dyn Random) -> Option<Output> {
        if matches!(self.state, State::Ready) {
            self.begin(now_us, random);
        }
        self.out.pop_front()
    }

    /// When [`Acquisition::handle_timeout`] is due: the round's deadline, the end of the wait
    /// for a failed attempt's silent nodes ([`SUSPECT_WAIT`]), or the end of the current
    /// wait. `None` when nothing is timed (waiting for a cleanup, or finished).
    pub fn poll_timeout(&self) -> Option<u64> {
        match &self.state {
            State::Voting(a) => Some(a.tally.deadline_us()),
            State::Raising(r) => Some(r.tally.deadline_us()),
            State::Waiting(w) if !w.cleaning => Some(w.until),
            State::Waiting(w) => w.suspects.as_ref().map(|s| s.deadline),
            _ => None,
        }
    }

    /// The time of [`Acquisition::poll_timeout`] came. Returns the nodes that timed out in
    /// the current round (for the driver's metrics and connection checks); a failed
    /// attempt's silent nodes that the machine stops waiting for are cleaned, not reported:
    /// their wait may be far shorter than the node timeout.
    pub fn handle_timeout(&mut self, now_us: u64) -> Vec<usize> {
        let expired = match &mut self.state {
            State::Voting(a) => a.tally.expire(now_us),
            State::Raising(r) => r.tally.expire(now_us),
            State::Waiting(w) => {
                if let Some(s) = w.suspects.as_mut()
                    && now_us >= s.deadline
                {
                    let silent = std::mem::take(&mut s.nodes);
                    s.dirty.extend(silent);
                    self.settle(now_us);
                    return Vec::new();
                }
                if !w.cleaning && now_us >= w.until {
                    self.state = State::Ready;
                }
                return Vec::new();
            }
            _ => return Vec::new(),
        };
        self.advance(now_us);
        expired
    }

    /// Node `node` answered in round `round`. False when the answer no longer counts (an
    /// earlier round, or the node was already decided); the driver still counts it in its
    /// node metrics unless it reported that node as timed out.
    pub fn handle_answer(&mut self, round: u64, node: usize, answer: Answer, now_us: u64) -> bool {
        self.handle_batch(round, vec![(node, answer, None)], now_us)
    }

    /// Node `node` took the lock in a fenced round `round` and returned its counters.
    pub fn handle_counters(
        &mut self,
        round: u64,
        node: usize,
        counters: Vec<u64>,
        now_us: u64,
    ) -> bool {
        self.handle_batch(
            round,
            vec![(node, Ok(NodeKind::Ok), Some(counters))],
            now_us,
        )
    }

    /// Several answers of round `round` that arrived together (for instance, those ready when
    /// the requests were sent, such as nodes refused without I/O): all are recorded before
    /// the round may be decided, so the report names each of them. Each answer may carry the
    /// node's fencing counters. Returns whether any answer counted.
    pub fn handle_batch(
        &mut self,
        round: u64,
        answers: Vec<(usize, Answer, Option<Vec<u64>>)>,
        now_us: u64,
    ) -> bool {
        if round != self.round {
            return false;
        }
        let mut recorded = false;
        for (node, answer, counters) in answers {
            let took = match &mut self.state {
                State::Voting(a) => {
                    let took = a.tally.record(node, answer, now_us);
                    if took && let (Some(c), Some(slot)) = (counters, a.counters.get_mut(node)) {
                        *slot = Some(c);
                    }
                    took
                }
                State::Raising(r) => r.tally.record(node, answer, now_us),
                State::Waiting(w) => match w.suspects.as_mut() {
                    Some(s) if s.nodes.contains(&node) => {
                        s.nodes.retain(|&n| n != node);
                        let kind = answer.as_ref().map_or_else(|(k, _)| *k, |k| *k);
                        // A cluster member's client retries by itself after an I/O error, so
                        // whatever it answers late may follow our own write: cleaned.
                        let cluster = self.members.get(node).is_some_and(|m| m.cluster);
                        if cluster || must_clean(kind, false) {
                            s.dirty.push(node);
                        }
                        true
                    }
                    _ => false,
                },
                _ => false,
            };
            recorded |= took;
        }
        if recorded {
            if matches!(self.state, State::Waiting(_)) {
                self.settle(now_us);
            } else {
                self.advance(now_us);
            }
        }
        recorded
    }

    /// Once every suspect answered or timed out: the cleanup of those that may hold the key,
    /// or none, and what follows it.
    fn settle(&mut self, now_us: u64) {
        let State::Waiting(w) = &mut self.state else {
            return;
        };
        let Some(s) = w.suspects.take_if(|s| s.nodes.is_empty()) else {
            return;
        };
        if s.dirty.is_empty() {
            self.handle_cleaned(now_us);
        } else {
            self.out.push_back(Output::Clean {
                nodes: s.dirty,
                value: s.value,
            });
        }
    }

    /// The cleanup of the last [`Output::Clean`] ended.
    pub fn handle_cleaned(&mut self, now_us: u64) {
        let State::Waiting(w) = &mut self.state else {
            return;
        };
        w.cleaning = false;
        if let Some(error) = w.last.take() {
            self.finish(Err(error));
        } else if now_us >= w.until {
            self.state = State::Ready;
        }
    }

    /// A release notice arrived. While waiting between attempts, the next attempt moves to
    /// within a short spread of now; returns true when it did (a wake-up).
    pub fn handle_released(&mut self, now_us: u64) -> bool {
        let State::Waiting(w) = &mut self.state else {
            return false;
        };
        if w.last.is_some() || w.woken {
            return false;
        }
        w.woken = true;
        let spread = value::below(micros(w.spread_cap), w.spread);
        w.until = w.until.min(now_us.saturating_add(spread));
        true
    }

    /// After [`Output::Listen`], the driver found the keys released on a quorum: the next
    /// attempt starts as soon as the cleanup ended.
    pub fn handle_vacant(&mut self, now_us: u64) {
        if let State::Waiting(w) = &mut self.state
            && w.last.is_none()
        {
            w.until = w.until.min(now_us);
        }
    }

    /// Releases granted this waiter the keys (REDLOCK.md §9, "Granted by a release"): each of
    /// `nodes` set its key to `value`, the value the waiter registered with its first marks, for
    /// the lock's ttl counted from no earlier than `registered_us`, when those marks were sent.
    /// Between attempts (no round in flight), a quorum of `nodes` with enough validity left
    /// from `registered_us` wins the call ([`Output::Done`]; a failed attempt's nodes that
    /// may still hold its key are cleaned first). `TooLate`: a quorum, but not enough validity
    /// left (a long wait); the driver hands the keys on. A grant is never a fenced lock.
    pub fn handle_granted(
        &mut self,
        value: Arc<str>,
        nodes: &[usize],
        registered_us: u64,
        now_us: u64,
    ) -> Granted {
        let n = self.members.len();
        if !matches!(self.state, State::Waiting(_) | State::Ready) {
            return Granted::NotNow;
        }
        let granted = (0..n).filter(|i| nodes.contains(i)).count();
        if granted < quorum(n) || self.opts.get_fenced() {
            return Granted::NotNow;
        }
        #[cfg(feature = "mutants")]
        let registered_us = if self.mutant == crate::mutant::Mutant::GrantFromNow {
            now_us
        } else {
            registered_us
        };
        let elapsed = Duration::from_micros(now_us.saturating_sub(registered_us));
        let v = validity_us(self.ttl, elapsed, self.drift);
        if v <= 0 || v < self.min_validity_us {
            return Granted::TooLate;
        }
        if let State::Waiting(Wait {
            suspects: Some(s), ..
        }) = std::mem::replace(&mut self.state, State::Ready)
        {
            self.out.push_back(Output::Clean {
                nodes: s.nodes.into_iter().chain(s.dirty).collect(),
                value: s.value,
            });
        }
        let results = self
            .addresses(0..n)
            .into_iter()
            .map(|(i, address)| {
                let kind = if nodes.contains(&i) {
                    NodeKind::Ok
                } else {
                    NodeKind::Pending
                };
                NodeResult::new(i, address, kind, None, None)
            })
            .collect();
        let grant = Grant {
            value,
            t1_us: registered_us,
            t2_us: now_us,
            valid_until_us: registered_us
                .saturating_add(micros(self.ttl.saturating_sub(self.drift))),
            attempts: self.attempt,
            report: Report::new(results),
            history: std::mem::take(&mut self.history),
            tokens: None,
        };
        self.finish(Ok(grant));
        Granted::Won
    }

    /// The caller gave up: what the attempt in flight must clean, and the error to return.
    /// The machine is finished afterwards.
    ///
    /// Outputs not polled yet are accounted for: a queued cleanup is returned here, and a
    /// grant the driver never saw is undone (its nodes are cleaned) rather than leaked.
    pub fn cancel(&mut self) -> Cancelled {
        let mut clean = match std::mem::replace(&mut self.state, State::Finished) {
            State::Voting(a) => self.dirty(a.tally.round()).map(|n| (n, a.value)),
            State::Raising(r) => self.dirty(&r.phase1).map(|n| (n, r.attempt.value)),
            State::Waiting(Wait {
                suspects: Some(s), ..
            }) => Some((s.nodes.into_iter().chain(s.dirty).collect(), s.value)),
            _ => None,
        };
        for out in std::mem::take(&mut self.out) {
            match out {
                Output::Clean { nodes, value } => clean = Some((nodes, value)),
                Output::Done(Ok(g)) => {
                    let round = Round {
                        results: g.report.nodes().to_vec(),
                    };
                    clean = self.dirty(&round).map(|n| (n, g.value));
                }
                _ => {}
            }
        }
        let error = Error::new(ErrorKind::Cancelled, "the acquisition was cancelled")
            .with_attempts(self.attempt)
            .with_history(std::mem::take(&mut self.history));
        Cancelled { clean, error }
    }

    fn begin(&mut self, now_us: u64, random: &mut dyn Random) {
        self.attempt = self.attempt.saturating_add(1);
        let value: Arc<str> = match self.opts.get_value() {
            Some(given) => given.into(),
            None => {
                let mut bytes = [0u8; VALUE_BYTES];
                if let Err(e) = random.fill(&mut bytes) {
                    let error = Error::invalid(format!("the random source failed: {e}"))
                        .with_attempts(self.attempt);
                    self.finish(Err(error));
                    return;
                }
                value::from_random(&bytes).into()
            }
        };
        let mut jitter = [0u8; 8];
        let mut spread = [0u8; 8];
        // Jitter and spread are not safety properties: zeros if the source fails.
        let _ = random.fill(&mut jitter);
        let _ = random.fill(&mut spread);
        self.round += 1;
        let fenced = self.opts.get_fenced();
        self.out.push_back(Output::Attempt {
            number: self.attempt,
        });
        for node in 0..self.members.len() {
            let request = if fenced {
                Request::FencedAcquire {
                    value: value.clone(),
                }
            } else {
                Request::Acquire {
                    value: value.clone(),
                }
            };
            self.out.push_back(Output::Send {
                round: self.round,
                node,
                request,
            });
        }
        let tally = Tally::new(
            self.addresses(0..self.members.len()),
            Decide::AtQuorum,
            now_us,
            self.node_timeout,
        );
        #[cfg(feature = "mutants")]
        let tally = tally.with_mutant(self.mutant);
        self.state = State::Voting(Box::new(Attempt {
            value,
            t1: now_us,
            tally,
            counters: vec![None; self.members.len()],
            jitter,
            spread,
        }));
    }

    fn addresses(&self, nodes: impl IntoIterator<Item = usize>) -> Vec<(usize, &str)> {
        nodes
            .into_iter()
            .filter_map(|i| Some((i, self.members.get(i)?.address.as_str())))
            .collect()
    }

    /// Moves on once the current round is decided.
    fn advance(&mut self, now_us: u64) {
        match std::mem::replace(&mut self.state, State::Finished) {
            State::Voting(a) if a.tally.is_decided() => self.voted(*a, now_us),
            State::Raising(r) if r.tally.is_decided() => self.raised(*r, now_us),
            other => self.state = other,
        }
    }

    fn voted(&mut self, mut a: Attempt, now_us: u64) {
        // The attempt's tally is done: its results move on without a copy.
        let round = a.tally.take_round();
        // Nodes still silent are awaited until then (see `Suspects`).
        let wait = now_us.saturating_sub(a.t1).max(micros(SUSPECT_WAIT));
        let defer = Some(a.tally.deadline_us().min(now_us.saturating_add(wait)));
        let q = quorum(self.members.len());
        let votes = round.count(NodeKind::Ok);
        #[cfg(feature = "mutants")]
        let votes = self.mutant.votes(votes);
        if !self.opts.get_fenced() || votes < q {
            return self.judge(a, round, None, defer, now_us);
        }
        let Some(p1) = fencing::phase1(&round, &a.counters) else {
            return self.judge(a, round, None, defer, now_us);
        };
        let settled = p1.settled(self.members.len());
        #[cfg(feature = "mutants")]
        let settled = settled
            || self.mutant == crate::mutant::Mutant::NoPhase2
            || self.mutant.votes(p1.held) >= q;
        if settled {
            return self.judge(a, round, Some(p1.tokens), defer, now_us);
        }
        self.round += 1;
        let tokens: Arc<[u64]> = p1.tokens.clone().into();
        for &node in &p1.lagging {
            let request = Request::Raise {
                value: a.value.clone(),
                tokens: tokens.clone(),
            };
            self.out.push_back(Output::Send {
                round: self.round,
                node,
                request,
            });
        }
        let tally = Tally::new(
            self.addresses(p1.lagging.iter().copied()),
            Decide::All,
            now_us,
            self.node_timeout,
        );
        self.state = State::Raising(Box::new(Raising {
            attempt: a,
            phase1: round,
            tally,
            tokens: p1.tokens,
            held: p1.held,
        }));
    }

    fn raised(&mut self, r: Raising, now_us: u64) {
        let Raising {
            attempt,
            mut phase1,
            tally,
            tokens,
            mut held,
        } = r;
        for result in tally.into_round().results {
            if result.kind == NodeKind::Ok {
                held += 1;
            } else if let Some(slot) = phase1.results.iter_mut().find(|s| s.index == result.index) {
                slot.kind = result.kind;
                slot.detail = Some(format!(
                    "fencing phase 2: {}",
                    result.detail.as_deref().unwrap_or(result.kind.as_str())
                ));
            }
        }
        #[cfg(feature = "mutants")]
        let held = self.mutant.votes(held);
        let tokens = (held >= quorum(self.members.len())).then_some(tokens);
        self.judge(attempt, phase1, tokens, None, now_us);
    }

    /// The verdict on a decided attempt (after phase 2 when fenced): the grant, or the
    /// cleanup and what follows it. `defer`: the deadline of the attempt's round while its
    /// late answers still reach the machine (not after phase 2, whose round is another).
    fn judge(
        &mut self,
        a: Attempt,
        round: Round,
        tokens: Option<Vec<u64>>,
        defer: Option<u64>,
        now_us: u64,
    ) {
        let fence_failed = self.opts.get_fenced() && tokens.is_none();
        let elapsed = Duration::from_micros(now_us.saturating_sub(a.t1));
        let (drift, valid_from) = (self.drift, a.t1);
        #[cfg(feature = "mutants")]
        let (elapsed, drift, valid_from) = {
            use crate::mutant::Mutant;
            match self.mutant {
                Mutant::NoElapsed => (Duration::ZERO, drift, now_us),
                Mutant::NoDrift => (elapsed, Duration::ZERO, valid_from),
                _ => (elapsed, drift, valid_from),
            }
        };
        let v = validity_us(self.ttl, elapsed, drift);
        let (kind, message) = match self.verdict(&round, v, fence_failed) {
            AttemptVerdict::Granted => {
                let grant = Grant {
                    value: a.value,
                    t1_us: a.t1,
                    t2_us: now_us,
                    valid_until_us: valid_from
                        .saturating_add(micros(self.ttl.saturating_sub(drift))),
                    attempts: self.attempt,
                    report: round.into_report(),
                    history: std::mem::take(&mut self.history),
                    tokens,
                };
                return self.finish(Ok(grant));
            }
            AttemptVerdict::Failed(kind, message) => (kind, message),
        };
        let dirty = self.dirty(&round);
        #[cfg(feature = "mutants")]
        let dirty = dirty.filter(|_| self.mutant != crate::mutant::Mutant::NoCleanup);
        let votes = round.count(NodeKind::Ok);
        // Only nodes that had not answered may hold the key: their answers decide.
        let suspects = match (&dirty, defer) {
            (Some(nodes), Some(deadline))
                if nodes.iter().all(|&i| {
                    round
                        .results
                        .iter()
                        .any(|r| r.index == i && r.kind == NodeKind::Pending)
                }) =>
            {
                Some(Suspects {
                    nodes: nodes.clone(),
                    dirty: Vec::new(),
                    deadline,
                    value: a.value.clone(),
                })
            }
            _ => None,
        };
        let report = round.into_report();
        remember(&mut self.history, &report, MAX_ATTEMPT_REPORTS);
        let error = Error::new(kind, message)
            .with_attempts(self.attempt)
            .with_validity_us(v)
            .with_report(report);
        let cleaning = dirty.is_some();
        if let Some(nodes) = dirty.filter(|_| suspects.is_none()) {
            self.out.push_back(Output::Clean {
                nodes,
                value: a.value,
            });
        }
        let elapsed = Duration::from_micros(now_us.saturating_sub(self.start));
        let Some(delay) = next_attempt(&self.opts, self.attempt, elapsed, a.jitter) else {
            let error = error.with_history(std::mem::take(&mut self.history));
            if cleaning {
                self.state = State::Waiting(Wait {
                    until: now_us,
                    cleaning,
                    suspects,
                    spread_cap: Duration::ZERO,
                    spread: a.spread,
                    woken: false,
                    last: Some(error),
                });
            } else {
                self.finish(Err(error));
            }
            return;
        };
        if self.attempt == 1 {
            self.out.push_back(Output::Listen);
        }
        self.state = State::Waiting(Wait {
            until: now_us.saturating_add(micros(delay)),
            cleaning,
            suspects,
            // A waiter that won some nodes just lost a split vote to other waiters: spread it
            // much wider.
            spread_cap: if votes > 0 {
                SPLIT_SPREAD
            } else {
                Duration::ZERO
            },
            spread: a.spread,
            woken: false,
            last: None,
        });
    }

    /// The verdict on a decided attempt's `round` with `v` µs of validity left.
    fn verdict(&self, round: &Round, v: i64, fence_failed: bool) -> AttemptVerdict {
        #[cfg(feature = "mutants")]
        if let Some(phantom) = self.mutant.phantom_vote(round) {
            return verdict(&phantom, v, self.min_validity_us, fence_failed);
        }
        verdict(round, v, self.min_validity_us, fence_failed)
    }

    /// The nodes a failed or abandoned attempt must clean, or `None` when there are none.
    fn dirty(&self, round: &Round) -> Option<Vec<usize>> {
        let clusters: Vec<bool> = self.members.iter().map(|m| m.cluster).collect();
        let nodes = cleanup_plan(round, &clusters);
        (!nodes.is_empty()).then_some(nodes)
    }

    fn finish(&mut self, result: Result<Grant>) {
        self.state = State::Finished;
        self.out.push_back(Output::Done(result));
    }
}

#[cfg(test)]
mod tests;
