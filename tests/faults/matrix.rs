//! The scenario matrix (`docs/TESTING.md` §5): MUST-PASS rows must show zero overlapping
//! windows and zero lost updates; MUST-FAIL rows must show at least one overlap, which proves
//! the checker can fail. Every row prints `FAULTS-ROW | scenario | expect | runs |
//! acquisitions | violations | max overlap ms | lost updates | fenced rejections |`.
//!
//! Common setup (see `common/mod.rs`): five durable nodes under the clock shim, TTL 2 s, holder
//! A holding exactly {n0, n1, n2}, three workers contending through per-node proxies, a
//! separate resource node with a counter incremented under the lock. The fault starts right
//! after A's acquire returns.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../harness/src/workload.rs"]
mod workload;

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{Bench, ClientCfg, Script, Setup, blocking, run, scenario};
use quorumlock::{NodeKind, Quarantine};
use quorumlock_harness::{Cluster, Mode, Partition, Persist, ProxyMesh};

async fn sleep_ms(ms: u64) {
    tokio::time::sleep(Duration::from_millis(ms)).await;
}

/// A script from an async fault body.
fn script<F, Fut>(f: F) -> Script
where
    F: FnOnce(Arc<Bench>) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    Box::new(move |bench| tokio::spawn(f(bench)))
}

fn no_fault() -> Script {
    script(|_| async {})
}

/// Sets `rate` on n0–n2, A's whole majority.
fn rate_on_a(rate: f64) -> Script {
    script(move |b| async move {
        for i in 0..3 {
            b.nodes().skew(i, 0, rate).unwrap();
        }
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn p1_no_fault() {
    let mut s = scenario("P1 no fault", true);
    s.clean_end = true;
    run(s, no_fault).await;
}

/// P1 with the workers sharing one client and waiting: each release grants the lock to the
/// worker first in line (REDLOCK.md §9).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn p1s_no_fault_grants_in_one_client() {
    let mut s = scenario("P1s no fault, workers in one client (grants)", true);
    s.clean_end = true;
    s.shared_workers = true;
    run(s, no_fault).await;
}

/// P4 with the workers sharing one client and waiting: grants while two nodes stop.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn p4s_minority_paused_grants_in_one_client() {
    let mut s = scenario(
        "P4s minority paused (n2,n3 SIGSTOP 2.5 s), workers in one client (grants)",
        true,
    );
    s.shared_workers = true;
    run(s, pause_minority).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn p4_minority_paused() {
    run(
        scenario("P4 minority paused (n2,n3 SIGSTOP 2.5 s)", true),
        pause_minority,
    )
    .await;
}

/// Stops n2 and n3 (SIGSTOP) for 2.5 s.
fn pause_minority() -> Script {
    script(|b| async move {
        for i in [2, 3] {
            b.nodes().pause(i).unwrap();
        }
        sleep_ms(2_500).await;
        for i in [2, 3] {
            b.nodes().resume(i).unwrap();
        }
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn p4k_minority_killed() {
    run(
        scenario(
            "P4k minority killed (n2,n3 kill -9, back after 1.5 s)",
            true,
        ),
        kill_n2_n3,
    )
    .await;
}

/// Kills n2 and n3 and restarts them, durable, 1.5 s later.
fn kill_n2_n3() -> Script {
    script(|b| async move {
        blocking(|| {
            let mut nodes = b.nodes();
            nodes.kill(2);
            nodes.kill(3);
        });
        sleep_ms(1_500).await;
        blocking(|| {
            let mut nodes = b.nodes();
            nodes.restart(2, Persist::Always).unwrap();
            nodes.restart(3, Persist::Always).unwrap();
        });
    })
}

/// P4k with fenced locks: phase 2 raises the counters of the nodes that come back, and the
/// tokens increase (G1).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn p4kf_fenced_tokens_increase_while_a_minority_is_killed() {
    let mut s = scenario(
        "P4kf as P4k (minority killed), fenced: tokens increase",
        true,
    );
    s.fenced = true;
    run(s, kill_n2_n3).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn p6_minority_slow_through_the_proxy() {
    run(
        scenario("P6 minority slow (proxy n1,n2 replies +150 ms)", true),
        || {
            script(|b| async move {
                for i in [1, 2] {
                    b.proxies[i].set(Mode::Delay {
                        c2s: Duration::ZERO,
                        s2c: Duration::from_millis(150),
                    });
                }
                sleep_ms(2_500).await;
                for i in [1, 2] {
                    b.proxies[i].set(Mode::Pass);
                }
            })
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn p7_clock_rate_1_005() {
    run(scenario("P7 clock rate 1.005 on n0-n2", true), || {
        rate_on_a(1.005)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn p7_clock_rate_0_5() {
    run(scenario("P7 clock rate 0.5 on n0-n2", true), || {
        rate_on_a(0.5)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn p3_durable_restart() {
    run(
        scenario("P3 kill -9 + immediate restart, appendfsync always", true),
        || crash_n2(Persist::Always, false, Some(false)),
    )
    .await;
}

/// kill -9 n2, then restart it at once with `persist`; with `lose_tail`, cut the AOF back to
/// the mark taken before A's acquire (a power loss on an everysec node). With
/// `expect_quarantined`, a fresh client must then see n2 quarantined (or not).
fn crash_n2(persist: Persist, lose_tail: bool, expect_quarantined: Option<bool>) -> Script {
    script(move |b| async move {
        sleep_ms(100).await;
        blocking(|| {
            let mut nodes = b.nodes();
            nodes.kill(2);
            if lose_tail {
                let cut = nodes.lose_unfsynced(2).unwrap();
                assert!(cut > 0, "A's SET must be in the lost AOF tail");
            }
            nodes.restart(2, persist).unwrap();
        });
        if let Some(want) = expect_quarantined {
            let kind = common::n2_kind_for_a_fresh_client(&b).await;
            assert_eq!(kind == NodeKind::Quarantined, want, "n2 is {kind:?}");
        }
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn p3q_non_durable_restart_with_quarantine() {
    let mut s = scenario("P3q immediate restart, no persistence, quarantine on", true);
    s.cfg.quarantine = Quarantine::On;
    run(s, || crash_n2(Persist::None, false, Some(true))).await;
}

/// P3q with fenced locks: the restarted n2 comes back without its counters, and the tokens
/// must still increase (G2: the quarantine and the time floor, REDLOCK.md §7.7).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn p3qf_fenced_tokens_increase_across_a_non_durable_restart() {
    let mut s = scenario(
        "P3qf as P3q (no persistence, quarantine on), fenced: tokens increase",
        true,
    );
    s.fenced = true;
    run(s, || crash_n2(Persist::None, false, Some(true))).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn p3q_power_loss_on_everysec_with_quarantine() {
    let mut s = scenario("P3q everysec + lost AOF tail, quarantine on", true);
    s.cfg.quarantine = Quarantine::On;
    s.n2_persist = Some(Persist::Everysec);
    run(s, || crash_n2(Persist::Everysec, true, Some(true))).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn f4_power_loss_on_everysec_without_quarantine() {
    let mut s = scenario("F4 everysec + lost AOF tail, quarantine off", false);
    s.cfg.quarantine = Quarantine::Off;
    s.n2_persist = Some(Persist::Everysec);
    run(s, || crash_n2(Persist::Everysec, true, None)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn p2_delayed_non_durable_restart() {
    let mut s = scenario(
        "P2 kill -9, restart empty after ttl + 500 ms, quarantine off",
        true,
    );
    s.cfg.quarantine = Quarantine::Off;
    run(s, || {
        script(|b| async move {
            sleep_ms(100).await;
            blocking(|| b.nodes().kill(2));
            sleep_ms(common::TTL_MS + 500).await;
            blocking(|| b.nodes().restart(2, Persist::None)).unwrap();
        })
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn p8_debug_sleep_on_one_of_the_holders_nodes() {
    run(scenario("P8 DEBUG SLEEP 3 s on n2", true), || {
        script(|b| async move {
            b.nodes().debug_sleep(2, 3.0).unwrap();
        })
    })
    .await;
}

/// P8 with a busy node: a script that never ends runs on n2 for 3 s (every other client gets
/// `BUSY` once it ran past `busy-reply-threshold`, 100 ms here), then `SCRIPT KILL` ends it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn p8_busy_script_on_one_of_the_holders_nodes() {
    run(
        scenario("P8 busy script 3 s on n2 (BUSY, then SCRIPT KILL)", true),
        || {
            script(|b| async move {
                let addr = blocking(|| {
                    let nodes = b.nodes();
                    nodes
                        .command(2, &[b"CONFIG", b"SET", b"busy-reply-threshold", b"100"])
                        .expect("CONFIG SET busy-reply-threshold");
                    nodes.addr(2)
                });
                let spin = tokio::task::spawn_blocking(move || {
                    let args: [&[u8]; 3] = [b"EVAL", b"while true do end", b"0"];
                    quorumlock_harness::command_timeout(addr, &args, Duration::from_secs(10))
                });
                sleep_ms(500).await;
                let busy = blocking(|| b.nodes().command(2, &[b"PING"])).expect("PING n2");
                assert!(
                    matches!(&busy, quorumlock_harness::Reply::Error(e) if e.starts_with("BUSY")),
                    "n2 is busy: {busy:?}"
                );
                sleep_ms(2_500).await;
                let killed = blocking(|| b.nodes().command(2, &[b"SCRIPT", b"KILL"]));
                assert!(killed.is_ok(), "SCRIPT KILL: {killed:?}");
                let ended = spin.await.unwrap();
                assert!(ended.is_ok(), "the spinning script's connection: {ended:?}");
            })
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn p8_client_pause_write_on_the_holders_majority() {
    run(scenario("P8 CLIENT PAUSE 3 s WRITE on n0-n2", true), || {
        script(|b| async move {
            blocking(|| {
                for i in 0..3 {
                    b.nodes().client_pause(i, 3_000, "WRITE").unwrap();
                }
            });
        })
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn f1_non_durable_restart_without_quarantine() {
    let mut s = scenario(
        "F1 immediate restart, no persistence, quarantine off",
        false,
    );
    s.cfg.quarantine = Quarantine::Off;
    run(s, || crash_n2(Persist::None, false, None)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn f2_clock_rate_2_on_the_holders_majority() {
    run(scenario("F2 clock rate 2 on n0-n2", false), || {
        rate_on_a(2.0)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn f3m_clock_jump_on_a_majority_of_the_holders_nodes() {
    run(scenario("F3m clock jump +10 s on n1,n2", false), || {
        script(|b| async move {
            for i in [1, 2] {
                b.nodes().skew(i, 10_000, 1.0).unwrap();
            }
        })
    })
    .await;
}

/// F3 on one node: A holds exactly a quorum ({n0, n1, n2}), so one node whose clock jumps
/// (its copy of A's key expires at once) is enough for a worker to win {n2, n3, n4}
/// (REDLOCK.md §12: a holder with exactly q keys loses the lock when one of them vanishes).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn f3_clock_jump_on_one_of_the_holders_nodes() {
    run(
        scenario(
            "F3 clock jump +10 s on n2 (A holds exactly a quorum)",
            false,
        ),
        || {
            script(|b| async move {
                b.nodes().skew(2, 10_000, 1.0).unwrap();
            })
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn f7_client_ignores_validity() {
    let mut s = scenario("F7 client ignores validity (works 2 x ttl)", false);
    s.a_ignores_validity = Some(Duration::from_millis(2 * common::TTL_MS));
    s.secs = 5.0;
    let row = run(s, no_fault).await;
    assert!(
        row.lost_updates.is_some_and(|n| n >= 1),
        "the lost-update check must flag the stale write: {row:?}"
    );
}

/// F7f: F7 with fencing (issue 8 item 1). The overlap is still there, since fencing does not
/// shorten a stale holder's window, but its late write is refused by the token check at the
/// resource, so no update is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn f7f_the_token_check_refuses_the_client_that_ignores_validity() {
    let mut s = scenario("F7f as F7, fenced (token checked at the resource)", false);
    s.a_ignores_validity = Some(Duration::from_millis(2 * common::TTL_MS));
    s.secs = 5.0;
    s.fenced = true;
    let row = run(s, no_fault).await;
    assert_eq!(
        row.lost_updates,
        Some(0),
        "fencing must prevent the lost update: {row:?}"
    );
    assert!(
        row.fence_rejections >= 1,
        "the stale holder's write must be refused: {row:?}"
    );
}

/// Evicts A's key on n2 (which runs `volatile-ttl`, see `Scenario::n2_evicts`): its memory
/// limit drops to what it uses plus 1 MB, and 32 KB values with a 60 s ttl fill it until the
/// lock key, whose ttl is the shortest, is gone.
fn evict_a_on_n2() -> Script {
    script(|b| async move {
        blocking(|| {
            let nodes = b.nodes();
            let key = nodes.keys(2, "*faults*").expect("KEYS on n2");
            assert_eq!(key.len(), 1, "A's key on n2: {key:?}");
            let info = nodes.command(2, &[b"INFO", b"memory"]).expect("INFO");
            let text = String::from_utf8_lossy(info.as_bytes().unwrap_or_default()).into_owned();
            let used: u64 = text
                .lines()
                .find_map(|l| l.strip_prefix("used_memory:"))
                .and_then(|v| v.trim().parse().ok())
                .expect("used_memory");
            let limit = (used + (1 << 20)).to_string();
            nodes
                .command(2, &[b"CONFIG", b"SET", b"maxmemory", limit.as_bytes()])
                .expect("CONFIG SET maxmemory");
            let filler = vec![b'x'; 32 << 10];
            for i in 0..1_000 {
                let name = format!("filler:{i}");
                let _ = nodes.command(2, &[b"SET", name.as_bytes(), &filler, b"PX", b"60000"]);
                if i % 4 == 0 {
                    let exists = nodes.command(2, &[b"EXISTS", &key[0]]).expect("EXISTS");
                    if exists.as_int() == Some(0) {
                        return;
                    }
                }
            }
            panic!("A's key on n2 was not evicted");
        });
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn f5_eviction_with_the_check_off() {
    let mut s = scenario(
        "F5 n2 volatile-ttl evicts A's key, eviction_check off",
        false,
    );
    s.n2_evicts = true;
    s.cfg.eviction_check = quorumlock::EvictionCheck::Off;
    run(s, evict_a_on_n2).await;
}

/// F5 with the workers' clients at the default `eviction_check = refuse`: they do not count
/// n2, so A's keys on n0 and n1 keep them out until they expire.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn f5r_eviction_refused_by_the_check() {
    let mut s = scenario(
        "F5r as F5, the workers refuse n2 (eviction_check refuse)",
        true,
    );
    s.n2_evicts = true;
    run(s, evict_a_on_n2).await;
}

/// P5: four workers, each with its own view through a proxy mesh, while the partition flaps
/// (`common::flapping`: cut links are blackholed in one cycle of the four specs, reset in the
/// next). Zero overlaps and zero lost updates, and acquisitions resume after the heal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn p5_flapping_partitions_through_a_proxy_mesh() {
    common::flapping(
        "P5 partitions flapping (proxy mesh, 4 views, cut = blackhole / reset)",
        || {
            let nodes = blocking(|| Cluster::builder().nodes(5).start()).unwrap();
            let addrs: Vec<_> = (0..5).map(|i| nodes.addr(i)).collect();
            let views: Vec<String> = (0..common::VIEWS).map(|v| format!("w{v}")).collect();
            let names: Vec<&str> = views.iter().map(String::as_str).collect();
            let mesh = ProxyMesh::new(&addrs, &names).unwrap();
            Mesh {
                mesh,
                views,
                _nodes: nodes,
            }
        },
    )
    .await;
}

/// P5's links: a proxy per (view, node).
struct Mesh {
    mesh: ProxyMesh,
    views: Vec<String>,
    /// Kept alive for the run.
    _nodes: Cluster,
}

impl common::Links for Mesh {
    fn urls(&self, view: usize) -> Vec<String> {
        self.mesh.urls(&self.views[view])
    }

    fn cut(&self, spec: &Partition, reset: bool) {
        let mode = if reset { Mode::Reset } else { Mode::Blackhole };
        self.mesh.partition_with(spec, mode);
    }

    fn heal(&self) {
        self.mesh.heal();
    }
}

/// Liveness after requests were discarded on open connections (`REDLOCK.md` §2.7: the next
/// request on a connection must get its own reply). Without the engine's echo check after a
/// timeout, every later request on those connections timed out (or got a shifted reply)
/// while a fresh client succeeded at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_recovers_after_a_blackhole_heals() {
    let c = blocking(|| quorumlock_harness::Cluster::builder().nodes(3).start()).unwrap();
    let ps: Vec<_> = (0..3)
        .map(|i| quorumlock_harness::FaultProxy::start(c.addr(i)).unwrap())
        .collect();
    let urls: Vec<String> = ps.iter().map(|p| p.url()).collect();
    let client = common::connect(urls, ClientCfg::default()).await;
    common::lock_once(&client, "x", &common::opts()).await;
    for p in &ps {
        p.set(Mode::Blackhole);
    }
    assert!(client.acquire_with(["x"], &common::opts()).await.is_err());
    for p in &ps {
        p.set(Mode::Pass);
    }
    let mut ok = false;
    for _ in 0..10 {
        if let Ok(l) = client.acquire_with(["y"], &common::opts()).await {
            let _ = l.release().await;
            ok = true;
            break;
        }
        sleep_ms(200).await;
    }
    assert!(ok, "no acquisition within 2 s after the heal");
}

/// Reconnecting while callers wait (`REDLOCK.md` §2.7): a node that refused connections for
/// 2.5 s has a reconnect loop backed off to 1 s (dials at about 20, 60, 140, 300, 620, 1260,
/// 2260, 3260 ms). A caller that keeps finding it down makes the loop dial every 100 ms, so
/// an acquisition succeeds within about 100 ms of the heal, not at the next backed-off dial
/// (760–810 ms later without the early dials).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_caller_gets_a_healed_node_back_without_the_full_backoff() {
    let c = blocking(|| quorumlock_harness::Cluster::builder().nodes(3).start()).unwrap();
    let ps: Vec<_> = (0..3)
        .map(|i| quorumlock_harness::FaultProxy::start(c.addr(i)).unwrap())
        .collect();
    let urls: Vec<String> = ps.iter().map(|p| p.url()).collect();
    let client = common::connect(urls, ClientCfg::default()).await;
    let opts = common::opts();
    common::lock_once(&client, "x", &opts).await;
    for p in &ps[..2] {
        p.set(Mode::Reset);
    }
    let cut = quorumlock::MonoTime::now();
    while quorumlock::MonoTime::now() - cut < Duration::from_millis(2_500) {
        assert!(client.acquire_with(["x"], &opts).await.is_err());
        sleep_ms(20).await;
    }
    for p in &ps[..2] {
        p.set(Mode::Pass);
    }
    let healed = quorumlock::MonoTime::now();
    loop {
        if let Ok(lock) = client.acquire_with(["x"], &opts).await {
            lock.release().await.unwrap();
            break;
        }
        sleep_ms(10).await;
    }
    let took = quorumlock::MonoTime::now() - healed;
    println!("acquired {} ms after the heal", took.as_millis());
    assert!(
        took < Duration::from_millis(400),
        "the reconnect waited out its backoff: {took:?} after the heal"
    );
}

/// P14, Kleppmann's delayed reply ("Is Redlock safe?"): A's replies from n0–n2 are held by
/// private proxies for `delay` while A waits for them (node timeout 3 s); its `SET`s were
/// applied at once. Past the ttl the keys expire before A hears of them, the workers take the
/// lock, and A must be refused (`ValidityTooShort`); below it, A may hold only what is left
/// of its validity. Either way no window may overlap (`common::judge`). Returns A's outcome
/// in each run.
async fn delayed_reply(
    name: &'static str,
    delay: Duration,
) -> Vec<Result<Duration, quorumlock::ErrorKind>> {
    let outcomes = std::cell::RefCell::new(Vec::new());
    common::judge(&scenario(name, true), || async {
        let (rec, lost, outcome) = delayed_reply_once(name, delay).await;
        outcomes.borrow_mut().push(outcome);
        (rec, lost)
    })
    .await;
    outcomes.into_inner()
}

/// One run of [`delayed_reply`]: the recorder, the lost updates and A's outcome.
async fn delayed_reply_once(
    name: &str,
    delay: Duration,
) -> (
    quorumlock_harness::history::Recorder,
    u64,
    Result<Duration, quorumlock::ErrorKind>,
) {
    use quorumlock::MonoTime;
    use quorumlock_harness::FaultProxy;
    use quorumlock_harness::history::Recorder;
    let bench = Arc::new(blocking(Bench::start));
    let a_links: Vec<FaultProxy> = (0..3)
        .map(|i| FaultProxy::start(bench.nodes().addr(i)).unwrap())
        .collect();
    let mut urls: Vec<String> = a_links.iter().map(FaultProxy::url).collect();
    urls.extend(bench.a_cut.iter().map(FaultProxy::url));
    let a = common::connect(urls, ClientCfg::default()).await;
    let rec = Arc::new(Recorder::new());
    let until = MonoTime::now() + Duration::from_millis(4_500);
    let resource = bench.resource_addr();
    let mut tasks = Vec::new();
    for k in 0..common::WORKERS {
        let client = common::connect(bench.worker_urls(), ClientCfg::default()).await;
        let job = common::worker_job(k, common::opts(), common::WORKER_HOLD, until, resource);
        tasks.push((job, client));
    }
    for p in &a_links {
        p.set(Mode::Delay {
            c2s: Duration::ZERO,
            s2c: delay,
        });
    }
    let a_opts = common::opts().node_timeout(Duration::from_secs(3));
    let acquiring = {
        let opts = a_opts.clone();
        tokio::spawn(async move { a.acquire_with([common::RESOURCE], &opts).await })
    };
    // The workers start once A's requests are on their way.
    sleep_ms(20).await;
    let tasks: Vec<_> = tasks
        .into_iter()
        .map(|(job, client)| tokio::spawn(workload::run_worker(client, job, Arc::clone(&rec))))
        .collect();
    let outcome = match acquiring.await.unwrap() {
        Ok(lock) => {
            let job = workload::Job {
                name: "A".into(),
                resource: common::RESOURCE.into(),
                opts: a_opts,
                hold: Duration::from_secs(2),
                until,
                pause: Duration::ZERO,
                counter: Some(resource),
                behaviour: workload::Behaviour::Respectful,
            };
            let left = lock.remaining();
            workload::hold(&lock, MonoTime::now(), &job, 0, &rec).await;
            Ok(left)
        }
        Err(e) => {
            println!("{name}: A refused: {e}");
            Err(e.kind())
        }
    };
    for t in tasks {
        t.await.unwrap();
    }
    let lost = rec
        .writes_acked()
        .saturating_sub(blocking(|| bench.counter()));
    println!("{name}: A's outcome {outcome:?}");
    let rec = Arc::into_inner(rec).expect("workers finished");
    (rec, lost, outcome)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn p14_replies_held_past_the_ttl_are_refused() {
    let outcomes = delayed_reply(
        "P14 A's replies held 2.5 s (ttl 2 s): refused",
        Duration::from_millis(2_500),
    )
    .await;
    for outcome in outcomes {
        assert_eq!(outcome, Err(quorumlock::ErrorKind::ValidityTooShort));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn p14_replies_held_for_most_of_the_ttl_leave_a_short_validity() {
    let outcomes = delayed_reply(
        "P14 A's replies held 1.5 s (ttl 2 s): what is left",
        Duration::from_millis(1_500),
    )
    .await;
    for outcome in outcomes {
        let left = outcome.expect("0.5 s minus the drift is above min_validity (ttl / 10)");
        assert!(
            left < Duration::from_millis(500),
            "validity counts from before the requests: {left:?}"
        );
    }
}

/// The leftover check of the common setup can fail: a holder that never releases leaves its
/// key (with a ttl) on every node it won, and a key written without a ttl is named as such.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_leftover_check_sees_unreleased_and_eternal_keys() {
    let c = blocking(|| Cluster::builder().nodes(3).start()).unwrap();
    assert!(blocking(|| common::leftovers_on(&c)).is_empty());
    let client = common::connect(c.urls(), ClientCfg::default()).await;
    let lock = client
        .acquire_with([common::RESOURCE], &common::opts())
        .await
        .unwrap();
    let key = format!("quorumlock:{{{}}}", common::RESOURCE);
    // The broken holder: no release, and its handle's drop (which would release) never runs.
    std::mem::forget(lock);
    let left = blocking(|| common::leftovers_on(&c));
    assert_eq!(left.len(), 3, "{left:?}");
    assert!(left.iter().all(|l| l.key == key && l.pttl > 0), "{left:?}");
    c.command(1, &[b"PERSIST", key.as_bytes()]).unwrap();
    let forever: Vec<usize> = blocking(|| common::leftovers_on(&c))
        .into_iter()
        .filter(|l| l.pttl == -1)
        .map(|l| l.node)
        .collect();
    assert_eq!(forever, vec![1]);
}
