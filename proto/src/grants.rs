//! A waiter's registrations for grants (REDLOCK.md §9, "Granted by a release"): whether a
//! call registers, the value and number of each registration, which grant notices count, what
//! a set of grants means between attempts, and what the call sends when it ends. The driver
//! sends the commands these decisions name ([`crate::command::mark_registered`],
//! [`crate::command::leave`]) and records which nodes granted the current registration.

use std::sync::Arc;

use crate::acquisition::{Acquisition, Granted};
use crate::command;
use crate::config::LockOptions;
use crate::line::bit;
use crate::value::{self, Random, VALUE_BYTES};

/// One registration: what a release that pops the waiter sets the key to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Registration {
    /// The value a release sets the key to: fresh random, like an attempt's.
    pub value: Arc<str>,
    /// Its number among the call's registrations, from 1: a grant notice carries it.
    pub number: u64,
    /// When the registering marks were sent, at the latest: each node's grant counts the
    /// lock's ttl from no earlier, so the validity of a win counts from here.
    pub sent_us: u64,
}

impl Registration {
    /// The registering mark of this registration ([`command::mark_registered`]) of waiter
    /// `waiter` on `key`, for a lock of `ttl_ms`, its flag and line lasting `line_ttl_ms`;
    /// first in line with `front`. `None` for a key without a waiter line.
    pub fn mark(
        &self,
        key: &[u8],
        waiter: &[u8],
        line_ttl_ms: u64,
        ttl_ms: u64,
        front: bool,
    ) -> Option<command::Command> {
        let reg = command::Registration {
            value: &self.value,
            ttl_ms,
            number: self.number,
        };
        command::mark_registered(key, waiter, line_ttl_ms, reg, front)
    }
}

/// What the grants heard so far mean, between attempts ([`Grants::check`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Nothing to do yet: no grant, short of a quorum, or an attempt in flight.
    Wait,
    /// A quorum of grants with enough validity left: the machine holds the lock
    /// ([`crate::acquisition::Output::Done`]).
    Won,
    /// A quorum, but too little validity left: give the keys back ([`Grants::give_back`]),
    /// register again first in line, and attempt at once
    /// ([`Acquisition::handle_vacant`]).
    Again,
}

/// How a call that may have registered ends ([`Grants::end`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum End {
    /// It never registered (or its registration was dropped): ordinary unmarks.
    Unregistered,
    /// It did not win with its registration: LEAVE with this value on every node, which
    /// hands on any key granted to it, including grants still on their way.
    GiveBack(Arc<str>),
    /// It won with its registration: LEAVE without a value on the lines it still stands in
    /// (a key granted meanwhile is the lock's own).
    Won,
}

/// Whether a grant notice of registration `number` counts for a waiter whose current
/// registration is `current` (0: none), the rule of [`Grants::counts`] for drivers that keep
/// the number apart from their `Grants` (the engine's registry, which records notices on the
/// subscriber tasks; the edge package's listeners).
pub fn counts(current: u64, number: u64) -> bool {
    current != 0 && current == number
}

/// A waiting call's registrations for grants.
#[derive(Clone, Debug, Default)]
pub struct Grants {
    current: Option<Registration>,
    count: u64,
    won: bool,
    #[cfg(feature = "mutants")]
    mutant: crate::mutant::Mutant,
}

impl Grants {
    /// No registration yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The same with `mutant` planted in its decisions (the simulator's mutants).
    #[cfg(feature = "mutants")]
    pub fn with_mutant(mut self, mutant: crate::mutant::Mutant) -> Self {
        self.mutant = mutant;
        self
    }

    /// Whether a call for `keys` with `opts` registers for grants: one braced key, unfenced
    /// (a grant carries no token), no value of the caller's (a grant and an attempt would then
    /// write the same value, and a failed attempt's cleanup could delete a granted key), and
    /// no node a Redis Cluster member (`cluster`).
    pub fn eligible(keys: &[Vec<u8>], opts: &LockOptions, cluster: bool) -> bool {
        matches!(keys, [k] if command::waiter_grants(k).is_some())
            && !opts.get_fenced()
            && opts.get_value().is_none()
            && !cluster
    }

    /// A new registration with a fresh value from `random`, its marks sent from `now_us`
    /// on; it replaces the current one, whose grants no longer count.
    ///
    /// # Errors
    /// The random source's failure (the call then waits unregistered).
    pub fn register(
        &mut self,
        now_us: u64,
        random: &mut dyn Random,
    ) -> Result<&Registration, String> {
        let mut bytes = [0u8; VALUE_BYTES];
        random.fill(&mut bytes)?;
        self.count += 1;
        Ok(self.current.insert(Registration {
            value: value::from_random(&bytes).into(),
            number: self.count,
            sent_us: now_us,
        }))
    }

    /// The current registration.
    pub fn current(&self) -> Option<&Registration> {
        self.current.as_ref()
    }

    /// Whether a grant notice of registration `number` counts: only the current
    /// registration's. A grant of an earlier one was given back since (its LEAVE handed
    /// that key on), even when its notice arrives after the new registration.
    pub fn counts(&self, number: u64) -> bool {
        #[cfg(feature = "mutants")]
        if self.mutant == crate::mutant::Mutant::StaleGrants {
            return self.current.is_some();
        }
        counts(self.current.as_ref().map_or(0, |r| r.number), number)
    }

    /// Between attempts, `granted` (node bits) granted the current registration: a quorum
    /// with enough validity wins `m`'s call ([`Acquisition::handle_granted`]).
    pub fn check(&mut self, m: &mut Acquisition, granted: u64, nodes: usize, now_us: u64) -> Step {
        let Some(reg) = &self.current else {
            return Step::Wait;
        };
        if granted == 0 {
            return Step::Wait;
        }
        let nodes: Vec<usize> = (0..nodes).filter(|i| granted & bit(*i) != 0).collect();
        match m.handle_granted(reg.value.clone(), &nodes, reg.sent_us, now_us) {
            Granted::Won => {
                self.won = true;
                Step::Won
            }
            Granted::TooLate => Step::Again,
            Granted::NotNow => Step::Wait,
        }
    }

    /// Whether an ordinary attempt must first give back the grants heard (`granted`, node
    /// bits) and register again: grants short of a quorum, from a split among waiters or a
    /// holder that held a minority.
    pub fn before_attempt(&self, granted: u64) -> bool {
        self.current.is_some() && granted != 0
    }

    /// Ends the current registration: the driver sends LEAVE with the returned value to every
    /// node, before anything else on each connection, so that the keys granted to it are
    /// handed on before its next request there.
    pub fn give_back(&mut self) -> Option<Arc<str>> {
        self.current.take().map(|r| r.value)
    }

    /// The registration never reached a node (no subscription, so no marks were sent).
    pub fn forget(&mut self) {
        self.current = None;
    }

    /// The call won with `value`: by its grants when it is the registration's.
    pub fn won_with(&mut self, value: &str) {
        self.won |= self.current.as_ref().is_some_and(|r| &*r.value == value);
    }

    /// The call ends: what its registration asks for.
    pub fn end(&mut self) -> End {
        let won = std::mem::take(&mut self.won);
        match self.current.take() {
            None => End::Unregistered,
            Some(_) if won => End::Won,
            Some(r) => End::GiveBack(r.value),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acquisition::Member;
    use crate::config::Timing;
    use std::time::Duration;

    struct Counting(u8);

    impl Random for Counting {
        fn fill(&mut self, out: &mut [u8]) -> Result<(), String> {
            self.0 = self.0.wrapping_add(1);
            out.fill(self.0);
            Ok(())
        }
    }

    fn machine(now: u64) -> Acquisition {
        let members: Arc<[Member]> = (0..5)
            .map(|_| Member {
                address: String::new(),
                cluster: false,
            })
            .collect();
        let opts = LockOptions::default().ttl(Duration::from_secs(10));
        let timing = Timing {
            drift_factor: 0.01,
            drift_constant: Duration::from_millis(2),
            max_ttl: Duration::from_secs(60),
            quarantine_period: Duration::from_secs(65),
        };
        Acquisition::new(members, opts, &timing, now).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn only_one_braced_unfenced_key_without_a_given_value_registers() {
        let k = |s: &str| vec![s.as_bytes().to_vec()];
        let o = LockOptions::default();
        assert!(Grants::eligible(&k("ql:{a}"), &o, false));
        assert!(!Grants::eligible(&k("bare"), &o, false));
        assert!(!Grants::eligible(&k("ql:{a}"), &o, true), "cluster");
        let two = vec![b"ql:{a}".to_vec(), b"ql:{b}".to_vec()];
        assert!(!Grants::eligible(&two, &o, false));
        assert!(!Grants::eligible(
            &k("ql:{a}"),
            &o.clone().fenced(true),
            false
        ));
        let given = o.value("0123456789abcdef0123");
        assert!(!Grants::eligible(&k("ql:{a}"), &given, false));
    }

    #[test]
    fn only_the_current_registration_s_grants_count() {
        let mut g = Grants::new();
        assert!(!g.counts(1), "nothing registered");
        let first = g.register(5, &mut Counting(0)).ok().cloned();
        assert_eq!(first.as_ref().map(|r| r.number), Some(1));
        assert!(g.counts(1));
        assert_eq!(g.give_back(), first.map(|r| r.value));
        assert!(!g.counts(1), "given back");
        let second = g.register(9, &mut Counting(7)).ok().cloned();
        assert_eq!(second.as_ref().map(|r| (r.number, r.sent_us)), Some((2, 9)));
        assert!(!g.counts(1), "a late notice of the first");
        assert!(g.counts(2));
        assert!(
            counts(2, 2) && !counts(2, 1) && !counts(0, 0),
            "the rule on its own"
        );
        assert_ne!(g.current().map(|r| &r.value), None);
    }

    #[test]
    fn a_call_that_did_not_win_by_its_grants_gives_them_back_at_the_end() {
        let mut g = Grants::new();
        assert_eq!(g.end(), End::Unregistered);
        let value = g.register(0, &mut Counting(0)).map(|r| r.value.clone());
        g.won_with("an attempt's value");
        assert_eq!(
            g.end(),
            End::GiveBack(value.unwrap_or_else(|e| panic!("{e}")))
        );
        assert_eq!(g.end(), End::Unregistered, "ended once");
        let value = g.register(0, &mut Counting(0)).map(|r| r.value.clone());
        g.won_with(&value.unwrap_or_else(|e| panic!("{e}")));
        assert_eq!(g.end(), End::Won);
        g.register(0, &mut Counting(0)).ok();
        g.forget();
        assert_eq!(g.end(), End::Unregistered);
    }

    #[test]
    fn a_quorum_of_grants_wins_between_attempts_and_too_little_validity_goes_back() {
        let mut g = Grants::new();
        let mut m = machine(0);
        assert_eq!(
            g.check(&mut m, 0b11111, 5, 0),
            Step::Wait,
            "no registration"
        );
        g.register(0, &mut Counting(0)).ok();
        assert!(!g.before_attempt(0));
        assert!(g.before_attempt(0b00001));
        // The machine starts its first attempt: no win while it is in flight.
        let mut r = Counting(9);
        while m.poll_output(0, &mut r).is_some() {}
        assert_eq!(g.check(&mut m, 0b00111, 5, 10), Step::Wait);
        // Between attempts (after a lost round), with 9.9 s of a 10 s ttl gone.
        for node in 0..5 {
            m.handle_answer(1, node, Ok(crate::report::NodeKind::HeldByOther), 20);
        }
        while m.poll_output(20, &mut r).is_some() {}
        assert_eq!(g.check(&mut m, 0b00011, 5, 30), Step::Wait, "a minority");
        assert_eq!(g.check(&mut m, 0b00111, 5, 9_900_000), Step::Again);
        assert_eq!(g.check(&mut m, 0b00111, 5, 1_000), Step::Won);
        assert_eq!(g.end(), End::Won);
    }
}
