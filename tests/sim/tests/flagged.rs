//! Every broken-assumption scenario and every mutant must be flagged by the checker within a
//! bounded number of seeds; prints the table with the first failing seeds.

use quorumlock_sim::Mutant;
use quorumlock_sim::runner::{all_scenarios, batch, find, parse_seed, replay};

/// Seeds tried before a scenario counts as not flagged.
const BOUND: u64 = 10_000;
/// The extend mutant's race is rare (docs/SAFETY.md): its first failing
/// seeds came at 167, 1 353 and 21 449 before 2026-12-06, at 10 218, 12 775, 21 497 and
/// 48 348 with a first version of that day's change (about one schedule in 5 000), so
/// 10 000 seeds can miss it by chance whenever the schedules shift. 40 000 seeds miss it
/// with a probability near e^-8.
const EXTEND_SET_BOUND: u64 = 40_000;
/// Seeds each mutant's scenario must pass under the real protocol (the control).
const CONTROL: u64 = 500;

#[test]
fn broken_scenarios_and_mutants_are_flagged() {
    let (mut missed, mut unsafe_controls) = (Vec::new(), Vec::new());
    println!(
        "| scenario / mutant | expect | schedules run | first failing seed | violation | control: real protocol, same scenario |"
    );
    println!("|---|---|---|---|---|---|");
    for (s, m) in all_scenarios().into_iter().filter(|(s, _)| !s.safe) {
        let bound = if m == Mutant::ExtendSet {
            EXTEND_SET_BOUND
        } else {
            BOUND
        };
        let b = batch(&s, m, 0, bound);
        let (seed, what) = match &b.failure {
            Some((seed, what)) => (format!("{seed:#x}"), what.split(':').next().unwrap_or("")),
            None => ("none".to_owned(), ""),
        };
        let control = if m == Mutant::None {
            "n/a (broken assumption)".to_owned()
        } else {
            let c = batch(&s, Mutant::None, 0, CONTROL);
            match c.failure {
                None => format!("0 violations in {} schedules", c.runs),
                Some((seed, what)) => {
                    unsafe_controls.push(format!("{}: SEED={seed:#x}: {what}", s.name));
                    format!("VIOLATION at seed {seed:#x}")
                }
            }
        };
        println!(
            "| {} | flagged | {} | {seed} | {what} | {control} |",
            s.name, b.runs
        );
        if b.failure.is_none() {
            missed.push(s.name);
        }
    }
    assert!(
        missed.is_empty(),
        "not flagged within the bound: {missed:?}"
    );
    assert!(
        unsafe_controls.is_empty(),
        "a mutant's scenario fails the real protocol: {unsafe_controls:?}"
    );
}

/// `SEED=0x… [SCENARIO=name] cargo test -p quorumlock-sim --release replay -- --nocapture`
/// prints one schedule's trace (default scenario: the first safe one).
#[test]
fn replay_one_seed() {
    let Some(seed) = std::env::var("SEED").ok().and_then(|s| parse_seed(&s)) else {
        return;
    };
    let name = std::env::var("SCENARIO").unwrap_or_else(|_| "safe".to_owned());
    let lines = std::env::var("LINES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let (s, m) = find(&name).unwrap_or_else(|| panic!("no scenario named like {name:?}"));
    println!("{}", replay(&s, m, seed, lines));
}

/// One seed, one schedule: two runs of the same seed give the same trace, event for event.
#[test]
fn a_seed_replays_exactly() {
    for (s, m) in all_scenarios() {
        let a = quorumlock_sim::run(&s, m, 0x5eed, true);
        let b = quorumlock_sim::run(&s, m, 0x5eed, true);
        assert_eq!(a.trace, b.trace, "{}", s.name);
        assert!(a.events > 100, "{}: {} events", s.name, a.events);
    }
}
