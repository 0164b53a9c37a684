//! The long safe run: every safe scenario, seeds spread round-robin, zero violations.
//! `SEEDS=N` scales it (default 10 000). Run in release: `cargo test -p quorumlock-sim --release`.

use quorumlock_sim::runner::{batch, parse_seed, replay};
use quorumlock_sim::{Mutant, Scenario};

#[expect(
    clippy::disallowed_methods,
    reason = "wall clock only to print schedules/s; the simulation never reads it"
)]
fn wall() -> std::time::Instant {
    std::time::Instant::now()
}

#[test]
fn safe_scenarios_have_no_violation() {
    let total: u64 = std::env::var("SEEDS")
        .ok()
        .and_then(|s| parse_seed(&s))
        .unwrap_or(10_000);
    let scenarios = Scenario::safe();
    let per = total.div_ceil(scenarios.len() as u64);
    let start = wall();
    let (mut runs, mut events, mut failures) = (0u64, 0u64, Vec::new());
    println!("| scenario | schedules | locks | won by a release's grants | events |");
    println!("|---|---|---|---|---|");
    for s in &scenarios {
        let b = batch(s, Mutant::None, 0, per);
        println!(
            "| {} | {} | {} | {} | {} |",
            s.name, b.runs, b.grants, b.by_grants, b.events
        );
        runs += b.runs;
        events += b.events;
        // Grants are in use wherever waiters register (notification on, unfenced calls): a
        // change that stops them from ever winning a call shows here.
        if s.notify && !s.fenced && b.by_grants == 0 {
            failures.push(format!("{}: no lock was won by a release's grant", s.name));
        }
        if let Some((seed, what)) = b.failure {
            println!("{}", replay(s, Mutant::None, seed, 40));
            failures.push(format!("{}: SEED={seed:#x}: {what}", s.name));
        }
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{runs} safe schedules, {events} events in {secs:.1} s: {:.0} schedules/s, {:.0} events/s",
        runs as f64 / secs,
        events as f64 / secs
    );
    assert!(failures.is_empty(), "violations: {failures:#?}");
}
