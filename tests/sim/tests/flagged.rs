//! Every broken-assumption scenario and every mutant must be flagged by the checker within a
//! bounded number of seeds; prints the table with the first failing seeds.

use quorumlock_sim::runner::{all_scenarios, batch, find, parse_seed, replay};

/// Seeds tried before a scenario counts as not flagged.
const BOUND: u64 = 3_000;

#[test]
fn broken_scenarios_and_mutants_are_flagged() {
    let mut missed = Vec::new();
    println!("| scenario / mutant | expect | schedules run | first failing seed | violation |");
    println!("|---|---|---|---|---|");
    for (s, m) in all_scenarios().into_iter().filter(|(s, _)| !s.safe) {
        let b = batch(&s, m, 0, BOUND);
        let (seed, what) = match &b.failure {
            Some((seed, what)) => (format!("{seed:#x}"), what.split(':').next().unwrap_or("")),
            None => ("none".to_owned(), ""),
        };
        println!("| {} | flagged | {} | {seed} | {what} |", s.name, b.runs);
        if b.failure.is_none() {
            missed.push(s.name);
        }
    }
    assert!(
        missed.is_empty(),
        "not flagged within {BOUND} seeds: {missed:?}"
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
