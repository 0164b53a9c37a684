//! Running many schedules: the long safe run, the search for a first failing seed, replays with
//! a trace, and the names a `SCENARIO=` / `MUTANT=` variable may give.

use crate::mutant::Mutant;
use crate::scenario::Scenario;
use crate::world::run;

/// What a batch of runs found.
#[derive(Debug, Default)]
pub struct Batch {
    /// Schedules run.
    pub runs: u64,
    /// Events processed.
    pub events: u64,
    /// Locks granted.
    pub grants: u64,
    /// Of those, the locks won by releases' grants.
    pub by_grants: u64,
    /// The first failing seed and its violation, if any.
    pub failure: Option<(u64, String)>,
}

/// Runs `scenario` under `mutant` for seeds `first..first + count`, stopping at the first
/// violation.
pub fn batch(scenario: &Scenario, mutant: Mutant, first: u64, count: u64) -> Batch {
    let mut b = Batch::default();
    for seed in first..first + count {
        let out = run(scenario, mutant, seed, false);
        b.runs += 1;
        b.events += out.events;
        b.grants += out.grants as u64;
        b.by_grants += out.by_grants;
        if let Some(v) = out.violation {
            b.failure = Some((seed, format!("{}: {}", v.kind, v.detail)));
            break;
        }
    }
    b
}

/// The last `lines` lines of the trace of one schedule up to its first violation (or its end),
/// with the verdict.
pub fn replay(scenario: &Scenario, mutant: Mutant, seed: u64, lines: usize) -> String {
    let out = run(scenario, mutant, seed, true);
    let until = out.violation.as_ref().map_or(i64::MAX, |v| v.at);
    let shown: Vec<&(i64, String)> = out.trace.iter().filter(|(t, _)| *t <= until).collect();
    let skip = shown.len().saturating_sub(lines);
    let mut text = format!(
        "replay: scenario {:?}, {}, SEED={seed:#x}: {} events, {} grants\n",
        scenario.name,
        mutant.name(),
        out.events,
        out.grants
    );
    for (t, l) in &shown[skip..] {
        text.push_str(&format!("{t:>10} µs  {l}\n"));
    }
    match out.violation {
        Some(v) => text.push_str(&format!("VIOLATION {}: {}\n", v.kind, v.detail)),
        None => text.push_str("no violation\n"),
    }
    text
}

/// Every scenario, safe and broken, and every mutant's scenario.
pub fn all_scenarios() -> Vec<(Scenario, Mutant)> {
    let mut v: Vec<(Scenario, Mutant)> = Scenario::safe()
        .into_iter()
        .chain(Scenario::broken())
        .map(|s| (s, Mutant::None))
        .collect();
    v.extend(Mutant::ALL.iter().map(|m| (Scenario::for_mutant(*m), *m)));
    v
}

/// The scenario (and mutant) whose name contains `name`.
pub fn find(name: &str) -> Option<(Scenario, Mutant)> {
    all_scenarios()
        .into_iter()
        .find(|(s, _)| s.name.contains(name))
}

/// Parses a seed written in decimal or as `0x…` hex.
pub fn parse_seed(s: &str) -> Option<u64> {
    let s = s.trim();
    match s.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}
