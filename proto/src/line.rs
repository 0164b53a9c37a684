//! A waiting acquisition's place in its keys' lines (REDLOCK.md §9): when it marks the keys'
//! waiter flags, where it stands first again after losing the attempt a release woke it for,
//! and which nodes it leaves when the call ends. Nodes are bits of one `u64` (node `i` is
//! [`bit`]`(i)`); the driver sends the marks ([`crate::command::mark`]) and unmarks
//! ([`crate::command::unmark`]) to the nodes these decisions name.

use std::time::Duration;

use crate::config::LockOptions;

/// The longest life of a waiter's mark (a day): longer retry delays renew it on each attempt.
pub const MAX_MARK_TTL_MS: u64 = 86_400_000;

/// The bit of node `i` in a set of nodes.
pub fn bit(i: usize) -> u64 {
    1 << (i % 64)
}

/// When a waiter marks its keys' waiter flags ([`crate::command::mark`]): at its `EXISTS`
/// check, then before an attempt only when the last mark could expire before the attempt
/// after it. A mark lasts twice the longest time between the starts of two attempts (a round,
/// a fenced acquisition's raise and a cleanup, each bounded by the node timeout, then the
/// retry delay and its jitter), at least a second and at most a day. A waiter keeps its place
/// in line while the flag lives, so one that keeps losing renews its mark about once per half
/// its life, not on every attempt.
#[derive(Clone, Debug)]
pub struct Marks {
    ttl_ms: u64,
    /// The longest time between the starts of two attempts, in µs.
    gap_us: u64,
    last_us: Option<u64>,
}

impl Marks {
    /// The schedule for an acquisition with `opts` and `node_timeout`.
    pub fn new(opts: &LockOptions, node_timeout: Duration) -> Self {
        let gap = opts
            .get_retry_delay()
            .saturating_add(opts.get_retry_jitter())
            .saturating_add(node_timeout.saturating_mul(3));
        let gap_us = u64::try_from(gap.as_micros()).unwrap_or(u64::MAX);
        let ttl_ms = (gap_us / 1_000)
            .saturating_add(1)
            .saturating_mul(2)
            .clamp(1_000, MAX_MARK_TTL_MS);
        Marks {
            ttl_ms,
            gap_us,
            last_us: None,
        }
    }

    /// How long a mark lasts, in milliseconds (its `PX`).
    pub fn ttl_ms(&self) -> u64 {
        self.ttl_ms
    }

    /// Records marks sent at `now_us` (the check's, which always marks).
    pub fn marked(&mut self, now_us: u64) {
        self.last_us = Some(now_us);
    }

    /// Whether an attempt starting at `now_us` marks first: no mark yet, or the last one may
    /// expire before the attempt after this one. Records the mark when it is due.
    pub fn due(&mut self, now_us: u64) -> bool {
        let lasts_us = self.ttl_ms.saturating_mul(1_000);
        let due = self
            .last_us
            .is_none_or(|at| now_us.saturating_sub(at).saturating_add(self.gap_us) >= lasts_us);
        if due {
            self.marked(now_us);
        }
        due
    }
}

/// The marks a waiter sends again after the attempt a release woke it for lost
/// ([`Line::requeue`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Requeue {
    /// The nodes whose releases popped the waiter: it marks there again, first in line when
    /// [`Requeue::front`].
    pub popped: u64,
    /// Whether the marks on [`Requeue::popped`] stand first in line (a waiter for one key).
    pub front: bool,
    /// The other nodes it marked, when their marks were due: ordinary marks there.
    pub renew: u64,
}

/// One acquisition as a waiter in its keys' lines, from its first wait on.
#[derive(Clone, Debug)]
pub struct Line {
    marks: Marks,
    /// Whether the acquisition is for several keys: a pop names the node, not the key.
    several: bool,
    /// Every node.
    all: u64,
    /// The nodes it marked: they may hold it in line.
    marked: u64,
    /// The nodes it marked again after its first marks (renewals, requeues): a release there
    /// may have popped it before the mark as well as after, so it leaves their lines whatever
    /// it heard.
    remarked: u64,
    /// Whether the attempt in flight answers a release that named this waiter.
    woken: bool,
    /// Whether the attempt in flight renews the marks with its requests.
    renewing: bool,
}

impl Line {
    /// The line of an acquisition with `opts` and `node_timeout` over `keys` keys and
    /// `nodes` nodes; it stands nowhere until [`Line::join`].
    pub fn new(opts: &LockOptions, node_timeout: Duration, keys: usize, nodes: usize) -> Self {
        Line {
            marks: Marks::new(opts, node_timeout),
            several: keys > 1,
            all: (0..nodes).fold(0, |set, i| set | bit(i)),
            marked: 0,
            remarked: 0,
            woken: false,
            renewing: false,
        }
    }

    /// How long a mark lasts, in milliseconds (its `PX`).
    pub fn ttl_ms(&self) -> u64 {
        self.marks.ttl_ms()
    }

    /// At the first wait, with the `EXISTS` check: marks go to every node.
    pub fn join(&mut self, now_us: u64) {
        self.marks.marked(now_us);
        self.marked = self.all;
    }

    /// An attempt starts at `now_us`. `listening`: the acquisition hears releases; `named`:
    /// a release since the last attempt named this waiter. Returns whether the attempt's
    /// requests renew the marks first ([`Line::sends_marks`]): only while listening, when
    /// they could lapse before the next attempt, and never in an attempt woken by name (one
    /// that loses stands first again where it was popped: [`Line::requeue`]).
    pub fn attempt(&mut self, now_us: u64, listening: bool, named: bool) -> bool {
        self.woken = named;
        self.renewing = listening && self.marked != 0 && !named && self.marks.due(now_us);
        self.renewing
    }

    /// Whether the current attempt's request to `node` renews the marks first (a fenced
    /// acquisition's raise does not: `raise`).
    pub fn sends_marks(&mut self, node: usize, raise: bool) -> bool {
        let marks = self.renewing && !raise;
        if marks {
            self.remarked |= bit(node);
        }
        marks
    }

    /// Whether the attempt in flight answers a release that named this waiter: if it loses,
    /// [`Line::requeue`] is due once its cleanup ended (a cleanup's release pops the first
    /// in line).
    pub fn woken(&self) -> bool {
        self.woken
    }

    /// After the attempt a release woke this waiter for lost, and its cleanup ended, at
    /// `now_us`; `popped`: the nodes whose releases popped it. It stands first again where it
    /// was popped, so that the next release there wakes it rather than the waiter behind it,
    /// or nobody. A waiter for several keys joins the back there instead (which key's line
    /// popped it is not known, and a free key must not wait for it), and the marks the woken
    /// attempt skipped go to the other nodes when they were due.
    pub fn requeue(&mut self, now_us: u64, popped: u64) -> Requeue {
        self.woken = false;
        let popped = popped & self.marked;
        let renew = if self.marks.due(now_us) {
            self.marked & !popped
        } else {
            0
        };
        self.remarked |= popped | renew;
        Requeue {
            popped,
            front: !self.several,
            renew,
        }
    }

    /// The waiter marked `nodes` again outside [`Line::requeue`] (registering anew for
    /// grants): it leaves their lines whatever it heard.
    pub fn remark(&mut self, nodes: u64) {
        self.remarked |= nodes & self.marked;
    }

    /// The call ends, won or not; `popped`: the nodes whose releases popped this waiter.
    /// Returns the nodes whose lines it leaves: every node it marked, less those whose
    /// release popped it and that it did not mark again (the common hand-off: named by every
    /// node, it sends nothing). A waiter for several keys leaves every line it marked.
    pub fn leave(&mut self, popped: u64) -> u64 {
        let popped = if self.several { 0 } else { popped };
        let nodes = self.marked & !(popped & !self.remarked);
        self.marked = 0;
        self.remarked = 0;
        nodes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_last_two_gaps_and_are_renewed_before_they_could_lapse() {
        let opts = LockOptions::default()
            .retry_delay(Duration::from_millis(2_000))
            .retry_jitter(Duration::from_millis(500));
        let mut m = Marks::new(&opts, Duration::from_millis(50));
        // gap = 2 000 + 500 + 3 x 50 ms
        assert_eq!(m.ttl_ms(), 5_302);
        assert!(m.due(0), "the first attempt while subscribed marks");
        assert!(!m.due(1_000), "a fresh mark outlives the next gap");
        assert!(!m.due(2_651_000));
        assert!(
            m.due(2_652_000),
            "the mark could lapse before the attempt after this one"
        );
        assert!(!m.due(2_653_000));
        m.marked(10_000_000);
        assert!(!m.due(10_000_001));
        let short = LockOptions::default()
            .retry_delay(Duration::from_millis(10))
            .retry_jitter(Duration::ZERO);
        assert_eq!(Marks::new(&short, Duration::from_millis(5)).ttl_ms(), 1_000);
    }

    fn line(keys: usize) -> Line {
        let opts = LockOptions::default()
            .retry_delay(Duration::from_millis(2_000))
            .retry_jitter(Duration::ZERO);
        Line::new(&opts, Duration::from_millis(50), keys, 5)
    }

    #[test]
    fn a_waiter_in_no_line_marks_and_leaves_nothing() {
        let mut l = line(1);
        assert!(!l.attempt(0, true, false), "not joined: no marks");
        assert!(!l.sends_marks(0, false));
        assert_eq!(l.leave(0), 0);
    }

    #[test]
    fn renewals_go_with_attempts_only_while_listening_and_not_when_woken_by_name() {
        let mut l = line(1);
        l.join(0);
        assert!(!l.attempt(1_000, true, false), "fresh marks");
        assert!(!l.attempt(10_000_000, false, false), "not listening");
        assert!(!l.attempt(10_000_000, true, true), "woken by name");
        assert!(l.woken());
        assert!(l.attempt(10_000_000, true, false), "due");
        assert!(!l.woken());
        assert!(l.sends_marks(2, false));
        assert!(!l.sends_marks(3, true), "a raise carries no marks");
        // Node 2 was marked again: it is left even though its release popped the waiter;
        // nodes 0 and 1 popped it and hold it no more.
        assert_eq!(l.leave(0b00111), 0b11100);
    }

    #[test]
    fn a_woken_waiter_that_lost_stands_first_where_it_was_popped() {
        let mut l = line(1);
        l.join(0);
        assert!(!l.attempt(1_000, true, true));
        let r = l.requeue(2_000, 0b00111);
        assert_eq!(
            r,
            Requeue {
                popped: 0b00111,
                front: true,
                renew: 0
            }
        );
        assert!(!l.woken());
        // Marked again where it was popped: it leaves every line it may be in.
        assert_eq!(l.leave(0b00111), 0b11111);
        assert_eq!(l.leave(0), 0, "left once");
    }

    #[test]
    fn a_requeue_renews_the_skipped_marks_when_due() {
        let mut l = line(1);
        l.join(0);
        assert!(
            !l.attempt(5_000_000, true, true),
            "woken: the due renewal waits"
        );
        let r = l.requeue(5_000_100, 0b00011);
        assert_eq!(r.popped, 0b00011);
        assert_eq!(r.renew, 0b11100);
    }

    #[test]
    fn a_waiter_for_several_keys_joins_the_back_and_leaves_every_line() {
        let mut l = line(2);
        l.join(0);
        let r = l.requeue(1_000, 0b00001);
        assert!(!r.front);
        assert_eq!(r.popped, 0b00001);
        assert_eq!(l.leave(0b11111), 0b11111);
    }

    /// Random walks over the driver's calls (a fixed xorshift seed): whatever the order, a
    /// waiter marks and leaves only nodes that exist, requeues only where it stands, leaves
    /// every node it marked again, and leaves once.
    #[test]
    fn a_waiter_never_touches_a_node_it_does_not_stand_on() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for walk in 0..2_000 {
            let keys = 1 + (walk % 2) as usize;
            let mut l = line(keys);
            let all = 0b11111;
            let (mut joined, mut remarked, mut now) = (false, 0u64, 0u64);
            for _ in 0..12 {
                now += next() % 3_000_000;
                let popped = next() & all;
                match next() % 4 {
                    0 => {
                        l.join(now);
                        joined = true;
                    }
                    1 => {
                        let (listening, named) = (next() % 2 == 0, next() % 2 == 0);
                        let renews = l.attempt(now, listening, named);
                        assert!(!renews || (joined && listening && !named));
                        for node in 0..5 {
                            if l.sends_marks(node, false) {
                                remarked |= bit(node);
                            }
                        }
                    }
                    2 => {
                        let r = l.requeue(now, popped);
                        assert_eq!(r.popped & !popped, 0);
                        assert_eq!(r.renew & r.popped, 0);
                        assert!(joined || (r.popped | r.renew) == 0);
                        assert_eq!(r.front, keys == 1);
                        remarked |= r.popped | r.renew;
                    }
                    _ => {}
                }
                assert_eq!((l.marked | l.remarked) & !all, 0, "only nodes that exist");
            }
            let left = l.leave(next() & all);
            assert_eq!(left & !all, 0);
            if joined {
                assert_eq!(left & remarked, remarked, "marked again: always left");
            } else {
                assert_eq!(left, 0);
            }
            assert_eq!(l.leave(0), 0, "left once");
        }
    }

    #[test]
    fn a_named_waiter_that_won_leaves_only_the_lines_it_was_not_popped_from() {
        let mut l = line(1);
        l.join(0);
        assert!(!l.attempt(1_000, true, true));
        assert_eq!(l.leave(0b01101), 0b10010);
        assert_eq!(l.leave(0b11111), 0, "left once");
    }
}
