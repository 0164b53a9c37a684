//! The record of one scenario run: every holder's window on the shared clock, acquisition
//! counts, acknowledged resource writes, and the summary line the fault tests print
//! (`docs/TESTING.md` §4.2–4.3).

use std::io::Write as _;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::checker::{self, Violation, Window};

/// Collects windows and counters from every worker of one run. Shared through an `Arc`.
#[derive(Debug, Default)]
pub struct Recorder {
    windows: Mutex<Vec<Window>>,
    acquisitions: AtomicU64,
    failures: AtomicU64,
    grants: AtomicU64,
    writes_acked: AtomicU64,
    fence_rejections: AtomicU64,
    tokens: Mutex<Vec<Token>>,
}

/// A fenced holder's token and the start of its window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    /// The locked resource.
    pub resource: String,
    /// Who held it.
    pub holder: String,
    /// When its window started.
    pub start_us: u64,
    /// Its fencing token.
    pub token: u64,
}

/// Two fenced holders of one resource whose tokens do not increase with their windows (G1,
/// `docs/REDLOCK.md` §7.1): `later` started after `earlier` but its token is not larger.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenRegression {
    /// The holder whose window started first.
    pub earlier: Token,
    /// The holder that started next on the same resource.
    pub later: Token,
}

impl Recorder {
    /// An empty recorder.
    pub fn new() -> Recorder {
        Recorder::default()
    }

    /// Records one holder's window `[start_us, end_us)` on `resource` and counts the
    /// acquisition.
    pub fn window(&self, resource: &str, holder: &str, start_us: u64, end_us: u64) {
        self.acquisitions.fetch_add(1, Ordering::Relaxed);
        let w = Window {
            resource: resource.to_string(),
            holder: holder.to_string(),
            start_us,
            end_us,
        };
        self.windows
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(w);
    }

    /// Records a fenced holder's `token` for its window on `resource` starting at `start_us`.
    pub fn token(&self, resource: &str, holder: &str, start_us: u64, token: u64) {
        let t = Token {
            resource: resource.to_string(),
            holder: holder.to_string(),
            start_us,
            token,
        };
        self.tokens
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(t);
    }

    /// Fenced holders recorded so far.
    pub fn fenced(&self) -> u64 {
        let n = self.tokens.lock().unwrap_or_else(|e| e.into_inner()).len();
        u64::try_from(n).unwrap_or(u64::MAX)
    }

    /// The token oracle (G1): on each resource, ordered by the start of their windows, every
    /// fenced holder got a larger token than the one before it. Where windows do not overlap
    /// (mutual exclusion held), that order is the order in which the acquisitions were
    /// decided. Returns each consecutive pair that breaks it.
    pub fn token_regressions(&self) -> Vec<TokenRegression> {
        let mut tokens = self
            .tokens
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        tokens.sort_by(|a, b| (&a.resource, a.start_us).cmp(&(&b.resource, b.start_us)));
        tokens
            .windows(2)
            .filter(|p| p[0].resource == p[1].resource && p[1].token <= p[0].token)
            .map(|p| TokenRegression {
                earlier: p[0].clone(),
                later: p[1].clone(),
            })
            .collect()
    }

    /// Counts a failed acquisition attempt.
    pub fn failed(&self) {
        self.failures.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts an acquisition that releases granted (REDLOCK.md §9): its report has no node
    /// latency, since no request of the call answered it.
    pub fn granted(&self) {
        self.grants.fetch_add(1, Ordering::Relaxed);
    }

    /// Acquisitions that releases granted.
    pub fn grants(&self) -> u64 {
        self.grants.load(Ordering::Relaxed)
    }

    /// Counts a resource write that the resource node acknowledged.
    pub fn write_acked(&self) {
        self.writes_acked.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a resource write that the fencing-token check refused (a stale holder).
    pub fn fence_rejected(&self) {
        self.fence_rejections.fetch_add(1, Ordering::Relaxed);
    }

    /// Writes refused by the fencing-token check so far.
    pub fn fence_rejections(&self) -> u64 {
        self.fence_rejections.load(Ordering::Relaxed)
    }

    /// Every window recorded so far.
    pub fn windows(&self) -> Vec<Window> {
        self.windows
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Successful acquisitions.
    pub fn acquisitions(&self) -> u64 {
        self.acquisitions.load(Ordering::Relaxed)
    }

    /// Failed acquisition attempts.
    pub fn failures(&self) -> u64 {
        self.failures.load(Ordering::Relaxed)
    }

    /// Acknowledged resource writes.
    pub fn writes_acked(&self) -> u64 {
        self.writes_acked.load(Ordering::Relaxed)
    }

    /// Runs the overlap checker over every window.
    pub fn violations(&self) -> Vec<Violation> {
        checker::check(&self.windows())
    }

    /// Writes the windows as JSON lines (`{"resource","holder","start_us","end_us"}`, with
    /// `"token"` for a fenced holder), in the order they were recorded.
    pub fn write_jsonl(&self, path: &Path) -> std::io::Result<()> {
        let tokens = self
            .tokens
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let mut f = std::io::BufWriter::new(std::fs::File::create(path)?);
        for w in self.windows() {
            let mut line = serde_json::json!({
                "resource": w.resource, "holder": w.holder,
                "start_us": w.start_us, "end_us": w.end_us,
            });
            let token = tokens.iter().find(|t| {
                t.resource == w.resource && t.holder == w.holder && t.start_us == w.start_us
            });
            if let Some(t) = token {
                line["token"] = t.token.into();
            }
            writeln!(f, "{line}")?;
        }
        f.flush()
    }

    /// A recorder holding the windows (and tokens) of a file [`write_jsonl`](Self::write_jsonl)
    /// wrote, for `ql-harness check`.
    pub fn read_jsonl(path: &Path) -> std::io::Result<Recorder> {
        let rec = Recorder::new();
        let text = std::fs::read_to_string(path)?;
        for (n, line) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            let bad = |what: &str| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("{}:{}: {what}", path.display(), n + 1),
                )
            };
            let v: serde_json::Value =
                serde_json::from_str(line).map_err(|e| bad(&e.to_string()))?;
            let text = |k: &str| {
                v[k].as_str()
                    .ok_or_else(|| bad(&format!("no string {k:?}")))
            };
            let number = |k: &str| {
                v[k].as_u64()
                    .ok_or_else(|| bad(&format!("no number {k:?}")))
            };
            let (resource, holder) = (text("resource")?, text("holder")?);
            let start = number("start_us")?;
            rec.window(resource, holder, start, number("end_us")?);
            if v.get("token").is_some() {
                rec.token(resource, holder, start, number("token")?);
            }
        }
        Ok(rec)
    }
}

/// The result of one scenario over all its runs: one line of the safety table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Row {
    /// Scenario name, for example `P4 minority paused`.
    pub scenario: String,
    /// `MUST-PASS` or `MUST-FAIL`.
    pub expect: String,
    /// Runs of the scenario.
    pub runs: u64,
    /// Successful acquisitions over all runs.
    pub acquisitions: u64,
    /// Overlapping window pairs over all runs.
    pub violations: u64,
    /// Longest overlap, microseconds.
    pub max_overlap_us: u64,
    /// Lost updates on the resource counter, if the scenario has one.
    pub lost_updates: Option<u64>,
    /// Resource writes refused by the fencing-token check (fenced scenarios only).
    pub fence_rejections: u64,
    /// Fenced holders over all runs (not in the table's line).
    pub fenced: u64,
    /// Consecutive fenced holders whose tokens did not increase (the token oracle; not in
    /// the table's line).
    pub token_regressions: u64,
}

impl Row {
    /// Adds one run's results.
    pub fn add_run(&mut self, rec: &Recorder, lost_updates: Option<u64>) {
        let v = rec.violations();
        self.runs += 1;
        self.acquisitions += rec.acquisitions();
        self.violations += u64::try_from(v.len()).unwrap_or(u64::MAX);
        let max = v.iter().map(|v| v.overlap_us).max().unwrap_or(0);
        self.max_overlap_us = self.max_overlap_us.max(max);
        if let Some(n) = lost_updates {
            self.lost_updates = Some(self.lost_updates.unwrap_or(0) + n);
        }
        self.fence_rejections += rec.fence_rejections();
        self.fenced += rec.fenced();
        let regressions = rec.token_regressions().len();
        self.token_regressions += u64::try_from(regressions).unwrap_or(u64::MAX);
    }

    /// `| scenario | expect | runs | acquisitions | violations | max overlap ms | lost updates |
    /// fenced rejections |`
    pub fn line(&self) -> String {
        let lost = self
            .lost_updates
            .map_or_else(|| "-".to_string(), |n| n.to_string());
        format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            self.scenario,
            self.expect,
            self.runs,
            self.acquisitions,
            self.violations,
            self.max_overlap_us / 1000,
            lost,
            self.fence_rejections
        )
    }

    /// Prints the line (prefixed `FAULTS-ROW `) and appends it to the file named by
    /// `QL_FAULTS_TABLE`, if set.
    pub fn report(&self) {
        let line = self.line();
        println!("FAULTS-ROW {line}");
        if let Some(path) = std::env::var_os("QL_FAULTS_TABLE") {
            let appended = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .and_then(|mut f| writeln!(f, "{line}"));
            if let Err(e) = appended {
                eprintln!("QL_FAULTS_TABLE: {e}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_sums_runs_and_keeps_the_longest_overlap() {
        let rec = Recorder::new();
        rec.window("r", "a", 0, 1_000_000);
        rec.window("r", "b", 400_000, 1_500_000);
        rec.window("r", "c", 2_000_000, 2_100_000);
        let mut row = Row {
            scenario: "x".into(),
            expect: "MUST-FAIL".into(),
            ..Row::default()
        };
        row.add_run(&rec, Some(2));
        row.add_run(&Recorder::new(), Some(1));
        assert_eq!(row.runs, 2);
        assert_eq!(row.acquisitions, 3);
        assert_eq!(row.violations, 1);
        assert_eq!(row.max_overlap_us, 600_000);
        assert_eq!(row.line(), "| x | MUST-FAIL | 2 | 3 | 1 | 600 | 3 | 0 |");
    }

    #[test]
    fn a_history_survives_its_file() {
        let rec = Recorder::new();
        rec.window("r", "a#1/v1", 0, 1_000);
        rec.token("r", "a#1/v1", 0, 7);
        rec.window("r", "b#1/v2", 500, 2_000);
        rec.window("r", "c#1/v3", 2_000, 2_500);
        rec.token("r", "c#1/v3", 2_000, 5);
        let path = std::env::temp_dir().join(format!("ql-history-{}.jsonl", std::process::id()));
        rec.write_jsonl(&path).unwrap();
        let back = Recorder::read_jsonl(&path).unwrap();
        std::fs::write(&path, "{\"resource\":\"r\"}\n").unwrap();
        let broken = Recorder::read_jsonl(&path).unwrap_err();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(back.windows(), rec.windows());
        assert_eq!(back.violations(), rec.violations());
        assert_eq!(back.violations().len(), 1);
        assert_eq!(back.token_regressions(), rec.token_regressions());
        assert_eq!(back.token_regressions().len(), 1);
        assert!(
            broken.to_string().contains(":1: no string \"holder\""),
            "{broken}"
        );
    }

    #[test]
    fn the_token_oracle_flags_tokens_that_do_not_increase_with_the_windows() {
        let rec = Recorder::new();
        rec.token("r", "a", 100, 7);
        rec.token("r", "c", 300, 9);
        rec.token("r", "b", 200, 8);
        rec.token("other", "x", 150, 1);
        assert!(rec.token_regressions().is_empty(), "in order per resource");
        rec.token("r", "stale", 400, 9);
        rec.token("r", "back", 500, 3);
        let found: Vec<(String, String)> = rec
            .token_regressions()
            .into_iter()
            .map(|r| (r.earlier.holder, r.later.holder))
            .collect();
        assert_eq!(
            found,
            vec![
                ("c".into(), "stale".into()),
                ("stale".into(), "back".into())
            ],
            "an equal token and a smaller one are both caught"
        );
        let mut row = Row::default();
        row.add_run(&rec, None);
        assert_eq!((row.fenced, row.token_regressions), (6, 2));
    }
}
