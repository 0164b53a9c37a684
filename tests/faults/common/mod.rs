//! The choreography shared by the fault tests (`docs/TESTING.md` §5 common setup): five
//! durable nodes under the clock shim, one unfaulted resource node, per-node proxies, a holder
//! A that holds exactly {n0, n1, n2}, and contending workers that record every window.
// Each test target uses a different subset of these helpers; a helper that cannot set up its
// nodes panics, which is what a test helper should do.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use quorumlock::{Client, EvictionCheck, LockOptions, MonoTime, Quarantine};
use quorumlock_harness::history::{Recorder, Row};
use quorumlock_harness::{Cluster, FaultProxy, Mode, Partition, Persist};

use crate::workload::{self, Behaviour, Job};

/// Lock TTL of every scenario: large margins make every outcome certain (§1.7).
pub const TTL_MS: u64 = 2_000;
/// Workers that contend with A.
pub const WORKERS: usize = 3;
/// The contended resource.
pub const RESOURCE: &str = "faults";

/// True when `QL_FAULTS_FULL=1`: more runs per scenario.
pub fn full() -> bool {
    std::env::var("QL_FAULTS_FULL").is_ok_and(|v| v == "1")
}

/// Runs of each matrix scenario: 1, or 3 with `QL_FAULTS_FULL=1`.
pub fn runs() -> u64 {
    if full() { 3 } else { 1 }
}

/// Lock options of every client: TTL 2 s, node timeout 100 ms, one attempt per call.
pub fn opts() -> LockOptions {
    LockOptions::default()
        .ttl(Duration::from_millis(TTL_MS))
        .node_timeout(Duration::from_millis(100))
        .retry_count(0)
}

/// Five lock nodes, their shared proxies, A's private proxies to n3 and n4 (in `Reset`), and
/// the resource node.
pub struct Bench {
    /// The lock nodes (behind a mutex: kill and restart need `&mut`).
    pub nodes: Mutex<Cluster>,
    /// The unfaulted resource node (holds the counter).
    pub resource: Cluster,
    /// One proxy per node, used by the workers and by A for n0–n2.
    pub proxies: Vec<FaultProxy>,
    /// A's proxies to n3 and n4, in `Reset`: A can hold only {n0, n1, n2}.
    pub a_cut: Vec<FaultProxy>,
}

impl Bench {
    /// Starts everything.
    pub fn start() -> Bench {
        let nodes = Cluster::builder().nodes(5).start().expect("lock nodes");
        let resource = Cluster::builder().nodes(1).start().expect("resource node");
        let proxies = (0..5)
            .map(|i| FaultProxy::start(nodes.addr(i)).expect("proxy"))
            .collect();
        let a_cut: Vec<FaultProxy> = (3..5)
            .map(|i| FaultProxy::start(nodes.addr(i)).expect("proxy"))
            .collect();
        for p in &a_cut {
            p.set(Mode::Reset);
        }
        Bench {
            nodes: Mutex::new(nodes),
            resource,
            proxies,
            a_cut,
        }
    }

    /// The lock nodes.
    pub fn nodes(&self) -> MutexGuard<'_, Cluster> {
        self.nodes.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// What the clients of a scenario connect to, and the resource counter: the proxies'
/// [`Bench`], or the kernel partitions' bench of `netns.rs`.
pub trait Setup: Send + Sync + 'static {
    /// A's node URLs: it can reach n0–n2 only.
    fn a_urls(&self) -> Vec<String>;
    /// The workers' node URLs: every node.
    fn worker_urls(&self) -> Vec<String>;
    /// The resource counter's value.
    fn counter(&self) -> u64;
    /// The resource node's address.
    fn resource_addr(&self) -> std::net::SocketAddr;
    /// The lock keys of [`RESOURCE`] left on the lock nodes ([`leftovers_on`]).
    fn leftovers(&self) -> Vec<Leftover>;
    /// Called once the clients are connected, right before A acquires.
    fn before_acquire(&self, _scenario: &Scenario) {}
}

impl Setup for Bench {
    /// Every node through its shared proxy.
    fn worker_urls(&self) -> Vec<String> {
        self.proxies.iter().map(FaultProxy::url).collect()
    }

    /// n0–n2 through the shared proxies, n3–n4 cut.
    fn a_urls(&self) -> Vec<String> {
        let mut urls: Vec<String> = self.proxies[..3].iter().map(FaultProxy::url).collect();
        urls.extend(self.a_cut.iter().map(FaultProxy::url));
        urls
    }

    fn counter(&self) -> u64 {
        resource_counter(&self.resource)
    }

    fn resource_addr(&self) -> std::net::SocketAddr {
        self.resource.addr(0)
    }

    fn leftovers(&self) -> Vec<Leftover> {
        leftovers_on(&self.nodes())
    }

    /// An `everysec` n2 marks what it has fsynced right before A's acquire.
    fn before_acquire(&self, scenario: &Scenario) {
        if scenario.n2_persist == Some(Persist::Everysec) {
            blocking(|| self.nodes().mark_fsync(2)).expect("mark_fsync n2");
        }
    }
}

/// A lock key left on a node after a run, with its `PTTL` (-1: no expiry).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leftover {
    /// The node.
    pub node: usize,
    /// The key.
    pub key: String,
    /// Its remaining time to live in ms, as `PTTL` answers.
    pub pttl: i64,
}

/// The keys of [`RESOURCE`]'s lock on every running node of `nodes`, without its fencing
/// counters (which keep no ttl unless `fence_counter_ttl` is set): the lock key, its waiter
/// flag and its line of waiters.
pub fn leftovers_on(nodes: &Cluster) -> Vec<Leftover> {
    let mut left = Vec::new();
    for node in (0..nodes.len()).filter(|&i| nodes.is_running(i)) {
        let Ok(keys) = nodes.keys(node, &format!("*{{{RESOURCE}}}*")) else {
            continue;
        };
        for key in keys.into_iter().filter(|k| !k.ends_with(b":fence")) {
            let pttl = nodes
                .command(node, &[b"PTTL", &key])
                .ok()
                .and_then(|r| r.as_int())
                .unwrap_or(-2);
            let key = String::from_utf8_lossy(&key).into_owned();
            left.push(Leftover { node, key, pttl });
        }
    }
    left
}

/// The counter on the resource node `resource`.
pub fn resource_counter(resource: &Cluster) -> u64 {
    let reply = resource
        .command(0, &[b"GET", workload::COUNTER_KEY])
        .unwrap();
    reply
        .as_bytes()
        .and_then(|b| std::str::from_utf8(b).ok()?.parse().ok())
        .unwrap_or(0)
}

/// Client settings of a scenario.
#[derive(Debug, Clone, Copy)]
pub struct ClientCfg {
    /// Restart quarantine of the workers' clients.
    pub quarantine: Quarantine,
    /// `max_ttl` of the workers' clients (with `quarantine_margin` 1 s: Qp = max_ttl + 1 s).
    pub max_ttl: Duration,
    /// What the workers' clients do with a node whose eviction policy can drop lock keys.
    pub eviction_check: EvictionCheck,
}

impl Default for ClientCfg {
    fn default() -> Self {
        ClientCfg {
            quarantine: Quarantine::On,
            max_ttl: Duration::from_secs(3),
            eviction_check: EvictionCheck::Refuse,
        }
    }
}

/// Connects one client to `urls`.
pub async fn connect(urls: Vec<String>, cfg: ClientCfg) -> Client {
    Client::builder()
        .nodes(urls)
        .lock_options(opts())
        .max_ttl(cfg.max_ttl)
        .quarantine(cfg.quarantine)
        .quarantine_margin(Duration::from_secs(1))
        .eviction_check(cfg.eviction_check)
        .connect()
        .await
        .expect("connect")
}

/// How long a worker of the common setup holds the lock.
pub const WORKER_HOLD: Duration = Duration::from_millis(300);

/// Worker `k`'s job: respectful, holding for `hold`, 15 ms between its attempts, acquiring
/// [`RESOURCE`] with `opts` until `until` and writing the counter on the resource node at
/// `resource`.
pub fn worker_job(
    k: usize,
    opts: LockOptions,
    hold: Duration,
    until: MonoTime,
    resource: std::net::SocketAddr,
) -> Job {
    Job {
        name: format!("w{k}"),
        resource: RESOURCE.into(),
        opts,
        hold,
        until,
        pause: Duration::from_millis(15),
        counter: Some(resource),
        behaviour: Behaviour::Respectful,
    }
}

/// Acquires `resource` once with `opts` and releases it; panics if either fails.
pub async fn lock_once(client: &Client, resource: &str, opts: &LockOptions) {
    let lock = client
        .acquire_with([resource], opts)
        .await
        .expect("acquire");
    lock.release().await.expect("release");
}

/// Runs a blocking harness call (kill, restart, SIGSTOP) from async code.
pub fn blocking<T>(f: impl FnOnce() -> T) -> T {
    tokio::task::block_in_place(f)
}

/// A fault script: called once A holds {n0, n1, n2}; it injects the fault, waits as it likes,
/// and heals. It runs concurrently with A and the workers.
pub type ScriptOn<B> = Box<dyn FnOnce(Arc<B>) -> tokio::task::JoinHandle<()> + Send>;

/// A fault script on the proxies' [`Bench`].
pub type Script = ScriptOn<Bench>;

/// One scenario.
pub struct Scenario {
    /// Name in the table.
    pub name: &'static str,
    /// True for MUST-PASS rows.
    pub must_pass: bool,
    /// Client settings.
    pub cfg: ClientCfg,
    /// A ignores its validity and works this long (the "ignores validity" mutant).
    pub a_ignores_validity: Option<Duration>,
    /// A acquires with `auto_extend` and works 2 × ttl while its validity lasts.
    pub a_auto_extends: bool,
    /// No fault: once every holder released, no lock key may be left on any node (failed
    /// attempts cleaned up; their waiter flags and lines may linger until they expire).
    pub clean_end: bool,
    /// n2 runs with `maxmemory 100mb` and `maxmemory-policy volatile-ttl` from the start: the
    /// workers' clients see it (their `eviction_check` decides), A's client does not look
    /// (`EvictionCheck::Off`), so A can hold n2.
    pub n2_evicts: bool,
    /// How long the workers contend after A acquired.
    pub secs: f64,
    /// Restart n2 with this persistence before A acquires (an `everysec` node also gets
    /// `mark_fsync` right before A's acquire).
    pub n2_persist: Option<Persist>,
    /// Every lock is fenced, and counter writes pass the fencing-token check.
    pub fenced: bool,
    /// The workers share one client and their calls wait (retries within a 2 s budget), so
    /// that a worker's release grants the lock to the next waiting worker of the same client
    /// (REDLOCK.md §9); the run must show grants.
    pub shared_workers: bool,
}

/// A scenario of the common setup with its defaults: A respectful, no restart, not fenced,
/// 4.5 s of contention.
pub fn scenario(name: &'static str, must_pass: bool) -> Scenario {
    Scenario {
        name,
        must_pass,
        cfg: ClientCfg::default(),
        a_ignores_validity: None,
        a_auto_extends: false,
        clean_end: false,
        n2_evicts: false,
        secs: 4.5,
        n2_persist: None,
        fenced: false,
        shared_workers: false,
    }
}

/// Runs `scenario` once with `script`, returning the recorder and the number of lost updates.
pub async fn run_once(scenario: &Scenario, script: Script) -> (Recorder, u64) {
    let bench = Arc::new(blocking(Bench::start));
    if let Some(persist) = scenario.n2_persist {
        blocking(|| bench.nodes().restart(2, persist)).expect("restart n2");
        if persist != Persist::Always && scenario.cfg.quarantine != Quarantine::Off {
            // Let the quarantine of the fresh non-durable n2 (max_ttl + 1 s) pass first.
            let qp = scenario.cfg.max_ttl + Duration::from_millis(1_300);
            tokio::time::sleep(qp).await;
        }
    }
    if scenario.n2_evicts {
        blocking(|| {
            let nodes = bench.nodes();
            for (name, value) in [("maxmemory", "100mb"), ("maxmemory-policy", "volatile-ttl")] {
                nodes
                    .command(2, &[b"CONFIG", b"SET", name.as_bytes(), value.as_bytes()])
                    .expect("CONFIG SET on n2");
            }
        });
    }
    contend(bench, scenario, script).await
}

/// The common setup's run on `bench`: A acquires {n0, n1, n2}, `script` starts, the workers
/// contend and A holds; returns the recorder and the number of lost updates.
pub async fn contend<B: Setup>(
    bench: Arc<B>,
    scenario: &Scenario,
    script: ScriptOn<B>,
) -> (Recorder, u64) {
    let rec = Arc::new(Recorder::new());
    let a_cfg = ClientCfg {
        eviction_check: if scenario.n2_evicts {
            EvictionCheck::Off
        } else {
            scenario.cfg.eviction_check
        },
        ..scenario.cfg
    };
    let a = connect(bench.a_urls(), a_cfg).await;
    let mut workers = Vec::new();
    let shared = match scenario.shared_workers {
        true => Some(connect(bench.worker_urls(), scenario.cfg).await),
        false => None,
    };
    for _ in 0..WORKERS {
        workers.push(match &shared {
            Some(client) => client.clone(),
            None => connect(bench.worker_urls(), scenario.cfg).await,
        });
    }
    bench.before_acquire(scenario);
    let lock_opts = || opts().fenced(scenario.fenced);
    let a_opts = lock_opts()
        .retry_count(20)
        .auto_extend(scenario.a_auto_extends);
    let lock = a
        .acquire_with([RESOURCE], &a_opts)
        .await
        .expect("A acquires {n0,n1,n2}");
    let a_start = MonoTime::now();
    let until = a_start + Duration::from_secs_f64(scenario.secs);
    let fault = script(Arc::clone(&bench));
    let resource = bench.resource_addr();
    let counter = Some(resource);
    let mut tasks = Vec::new();
    let worker_opts = match scenario.shared_workers {
        true => lock_opts().retry_count(1_000).wait(Duration::from_secs(2)),
        false => lock_opts(),
    };
    for (k, client) in workers.into_iter().enumerate() {
        let job = worker_job(k, worker_opts.clone(), WORKER_HOLD, until, resource);
        tasks.push(tokio::spawn(workload::run_worker(
            client,
            job,
            Arc::clone(&rec),
        )));
    }
    let a_job = Job {
        name: "A".into(),
        resource: RESOURCE.into(),
        opts: lock_opts(),
        hold: match (scenario.a_ignores_validity, scenario.a_auto_extends) {
            (Some(hold), _) => hold,
            (None, true) => Duration::from_millis(2 * TTL_MS),
            (None, false) => lock.remaining().saturating_sub(Duration::from_millis(10)),
        },
        until,
        pause: Duration::ZERO,
        counter,
        behaviour: match (scenario.a_ignores_validity, scenario.a_auto_extends) {
            (Some(_), _) => Behaviour::IgnoresValidity,
            (None, true) => Behaviour::AutoExtends,
            (None, false) => Behaviour::Respectful,
        },
    };
    workload::hold(&lock, a_start, &a_job, 0, &rec).await;
    for t in tasks {
        t.await.expect("worker");
    }
    fault.await.expect("fault script");
    let left = blocking(|| bench.leftovers());
    let forever: Vec<&Leftover> = left.iter().filter(|l| l.pttl == -1).collect();
    assert!(
        forever.is_empty(),
        "{}: lock keys without a ttl: {forever:?}",
        scenario.name
    );
    if scenario.clean_end {
        // Waiter flags and lines expire by themselves (REDLOCK.md §9).
        let locks: Vec<&Leftover> = left
            .iter()
            .filter(|l| !l.key.ends_with(":w") && !l.key.ends_with(":q") && !l.key.ends_with(":g"))
            .collect();
        assert!(
            locks.is_empty(),
            "{}: every holder released and every failed attempt cleaned, yet lock keys are left: {locks:?}",
            scenario.name
        );
    }
    if scenario.shared_workers {
        assert!(
            rec.grants() > 0,
            "{}: no release granted the lock to a waiting worker",
            scenario.name
        );
    }
    let lost = rec
        .writes_acked()
        .saturating_sub(blocking(|| bench.counter()));
    let rec = Arc::into_inner(rec).expect("workers finished");
    (rec, lost)
}

/// Runs `scenario` [`runs`] times (a fresh bench each time), prints its row and asserts the
/// expectation: zero violations and zero lost updates for MUST-PASS, at least one violation
/// for MUST-FAIL.
pub async fn run(scenario: Scenario, mut script: impl FnMut() -> Script) -> Row {
    judge(&scenario, || run_once(&scenario, script())).await
}

/// Runs `once` [`runs`] times, prints `scenario`'s row and asserts its expectation (see
/// [`run`]).
pub async fn judge<F, Fut>(scenario: &Scenario, mut once: F) -> Row
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = (Recorder, u64)>,
{
    let mut row = Row {
        scenario: scenario.name.into(),
        expect: if scenario.must_pass {
            "MUST-PASS"
        } else {
            "MUST-FAIL"
        }
        .into(),
        ..Row::default()
    };
    let mut details = Vec::new();
    for _ in 0..runs() {
        let (rec, lost) = once().await;
        let (violations, regressions) = (rec.violations(), rec.token_regressions());
        for v in violations.iter().take(3) {
            details.push(format!(
                "  {} [{}..{}) vs {} [{}..{}) overlap {} ms",
                v.a.holder,
                v.a.start_us,
                v.a.end_us,
                v.b.holder,
                v.b.start_us,
                v.b.end_us,
                v.overlap_us / 1000
            ));
        }
        if scenario.must_pass && (!violations.is_empty() || !regressions.is_empty()) {
            details.push(format!("  history: {}", save_history(scenario.name, &rec)));
        }
        for r in regressions.iter().take(3) {
            details.push(format!(
                "  token {} of {} (from {}) then {} of {} (from {})",
                r.earlier.token,
                r.earlier.holder,
                r.earlier.start_us,
                r.later.token,
                r.later.holder,
                r.later.start_us
            ));
        }
        row.add_run(&rec, Some(lost));
    }
    row.report();
    let detail = details.join("\n");
    if scenario.fenced {
        assert!(
            row.fenced > 0,
            "{}: no fenced holder recorded",
            scenario.name
        );
        println!(
            "{}: {} fenced holders, {} token regressions",
            scenario.name, row.fenced, row.token_regressions
        );
    }
    if scenario.must_pass {
        assert_eq!(row.violations, 0, "{}: overlaps\n{detail}", scenario.name);
        assert_eq!(
            row.token_regressions, 0,
            "{}: fencing tokens did not increase with the windows\n{detail}",
            scenario.name
        );
        assert_eq!(row.lost_updates, Some(0), "{}: lost updates", scenario.name);
        assert!(
            row.acquisitions > row.runs,
            "{}: no worker acquired",
            scenario.name
        );
    } else {
        assert!(
            row.violations >= 1,
            "{}: the checker must flag this scenario",
            scenario.name
        );
        assert!(
            row.max_overlap_us >= 100_000,
            "{}: a must-fail overlap is hundreds of ms, not noise: {row:?}",
            scenario.name
        );
    }
    row
}

/// Saves a failing run's history under `<run root>/histories/` (the sweep leaves that folder
/// alone) for `ql-harness check`; returns the path, or why it could not be written.
pub fn save_history(scenario: &str, rec: &Recorder) -> String {
    static SAVED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let dir = quorumlock_harness::run::run_root().join("histories");
    let slug: String = scenario
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .take(40)
        .collect();
    let n = SAVED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = dir.join(format!("{slug}-{}-{n}.jsonl", std::process::id()));
    match std::fs::create_dir_all(&dir).and_then(|()| rec.write_jsonl(&path)) {
        Ok(()) => path.display().to_string(),
        Err(e) => format!("not saved ({}: {e})", path.display()),
    }
}

/// Connects a fresh client with the quarantine on and returns node 2's kind in the report of
/// one acquisition of a side resource: proof that a restart was (or was not) quarantined.
pub async fn n2_kind_for_a_fresh_client(bench: &Bench) -> quorumlock::NodeKind {
    let client = connect(bench.worker_urls(), ClientCfg::default()).await;
    let lock = client
        .acquire_with(["probe"], &opts().retry_count(20))
        .await
        .expect("probe acquire");
    let kind = lock.report().nodes()[2].kind;
    let _ = lock.release().await;
    kind
}

/// Views (one worker each) of a flapping-partition run.
pub const VIEWS: usize = 4;

/// The links of a flapping-partition run ([`flapping`]): every worker reaches the nodes
/// through its own view, which a partition can cut node by node.
pub trait Links: Send + Sync {
    /// View `view`'s node URLs.
    fn urls(&self, view: usize) -> Vec<String>;
    /// Heals everything, then cuts the links `spec` names: silently, or with resets.
    fn cut(&self, spec: &Partition, reset: bool);
    /// Every link works again.
    fn heal(&self);
}

/// P5 and P5k: [`VIEWS`] workers, each through its own view of [`Links`] that `start`
/// makes (with its nodes), while the partition flaps every 300–700 ms for 3.5 s between
/// `One(2)`, `Minority`, `Majority` and `MajoritiesRing`, cut silently in one cycle of the four
/// and with resets in the next; healed 2.5 s before the end. Prints the row; asserts zero
/// overlaps, zero lost updates, and acquisitions after the heal.
pub async fn flapping<L: Links>(name: &str, mut start: impl FnMut() -> L) -> Row {
    let specs = [
        Partition::One(2),
        Partition::Minority,
        Partition::Majority,
        Partition::MajoritiesRing,
    ];
    let mut row = Row {
        scenario: name.into(),
        expect: "MUST-PASS".into(),
        ..Row::default()
    };
    for run in 0..runs() {
        let links = start();
        let resource = blocking(|| Cluster::builder().nodes(1).start()).unwrap();
        let rec = Arc::new(Recorder::new());
        let t0 = MonoTime::now();
        let until = t0 + Duration::from_millis(6_000);
        let mut tasks = Vec::new();
        for v in 0..VIEWS {
            let client = connect(links.urls(v), ClientCfg::default()).await;
            let job = worker_job(
                v,
                opts(),
                Duration::from_millis(200),
                until,
                resource.addr(0),
            );
            tasks.push(tokio::spawn(workload::run_worker(
                client,
                job,
                Arc::clone(&rec),
            )));
        }
        let mut k = usize::try_from(run).unwrap_or(0);
        while MonoTime::now() < t0 + Duration::from_millis(3_500) {
            let reset = !(k / specs.len()).is_multiple_of(2);
            blocking(|| links.cut(&specs[k % specs.len()], reset));
            k += 1;
            tokio::time::sleep(Duration::from_millis(300 + 100 * (k as u64 % 5))).await;
        }
        blocking(|| links.heal());
        let healed = MonoTime::now();
        for t in tasks {
            t.await.unwrap();
        }
        let after_heal = rec
            .windows()
            .iter()
            .filter(|w| w.start_us > healed.as_micros())
            .count();
        let starts: Vec<u64> = rec
            .windows()
            .iter()
            .map(|w| (w.start_us - t0.as_micros()) / 1000)
            .collect();
        assert!(
            after_heal > 0,
            "acquisitions resume after the heal: {starts:?}"
        );
        println!(
            "{name} run {run}: acquisitions start at {starts:?} ms, {after_heal} after the heal, {} failed attempts",
            rec.failures()
        );
        let lost = rec
            .writes_acked()
            .saturating_sub(blocking(|| resource_counter(&resource)));
        row.add_run(&rec, Some(lost));
    }
    row.report();
    assert_eq!(row.violations, 0, "{row:?}");
    assert_eq!(row.lost_updates, Some(0), "{row:?}");
    row
}
