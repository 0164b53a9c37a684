//! The standard lock workload of the fault tests (`docs/TESTING.md` §4.3–4.4): workers, each
//! with its own quorumlock `Client`, contend on one resource and record every window.
//!
//! Not a module of the harness library (that would make the harness depend on the engine it
//! tests): the fault test targets include it with `#[path]`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use quorumlock::{Client, Lock, LockOptions, MonoTime};
use quorumlock_harness::history::Recorder;
use quorumlock_harness::{Reply, command_timeout};

/// How a holder treats its validity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Behaviour {
    /// Works only while the lock is valid; its window ends at min(valid_until, release).
    Respectful,
    /// The "ignores validity" mutant: works `hold` regardless and believes it held the lock
    /// until it released it.
    IgnoresValidity,
    /// Holds a lock acquired with `auto_extend`: works up to `hold` (longer than the ttl) in
    /// steps while the watchdog keeps its validity ahead, and stops once it runs out; its
    /// window ends at min(release, the last validity the extensions gave).
    AutoExtends,
}

/// One worker's job.
#[derive(Debug, Clone)]
pub struct Job {
    /// Worker name, used in window holders.
    pub name: String,
    /// The resource all workers contend on.
    pub resource: String,
    /// Options of every acquisition.
    pub opts: LockOptions,
    /// How long a holder works (a respectful one stops earlier if its validity runs out).
    pub hold: Duration,
    /// Stop starting new acquisitions after this instant.
    pub until: MonoTime,
    /// Pause between a failed attempt or a release and the next attempt.
    pub pause: Duration,
    /// The unfaulted resource node holding the counter, if the run checks lost updates.
    pub counter: Option<SocketAddr>,
    /// Validity treatment.
    pub behaviour: Behaviour,
}

/// Counter key on the resource node.
pub const COUNTER_KEY: &[u8] = b"ql:res:counter";
/// A respectful holder writes only with at least this much validity left.
const WRITE_MARGIN: Duration = Duration::from_millis(50);
/// An auto-extending holder looks at its validity at least this often.
const STEP: Duration = Duration::from_millis(50);

/// Runs `job` until `job.until`, recording every window in `rec`.
pub async fn run_worker(client: Client, job: Job, rec: Arc<Recorder>) {
    let mut seq = 0u64;
    while MonoTime::now() < job.until {
        match client
            .acquire_with([job.resource.as_str()], &job.opts)
            .await
        {
            Ok(lock) => {
                seq += 1;
                if lock.report().nodes().iter().all(|n| n.latency.is_none()) {
                    rec.granted();
                }
                let start = MonoTime::now();
                hold(&lock, start, &job, seq, &rec).await;
            }
            Err(_) => rec.failed(),
        }
        tokio::time::sleep(job.pause).await;
    }
}

/// Holds an acquired `lock` (acquired at or before `start`) as `job` says, releases it and
/// records its window.
pub async fn hold(lock: &Lock, start: MonoTime, job: &Job, seq: u64, rec: &Recorder) {
    match job.counter {
        Some(addr) => {
            let before = read_counter(addr).await;
            work(lock, job).await;
            let may_write = match job.behaviour {
                Behaviour::Respectful | Behaviour::AutoExtends => lock.remaining() > WRITE_MARGIN,
                Behaviour::IgnoresValidity => true,
            };
            if let (Some(n), true) = (before, may_write) {
                match write_counter(addr, n + 1, lock.token()).await {
                    Write::Acked => rec.write_acked(),
                    Write::Fenced => rec.fence_rejected(),
                    Write::Failed => {}
                }
            }
        }
        None => work(lock, job).await,
    }
    let release_start = MonoTime::now();
    let _ = lock.release().await;
    let end = match job.behaviour {
        Behaviour::Respectful | Behaviour::AutoExtends => release_start.min(lock_deadline(lock)),
        Behaviour::IgnoresValidity => release_start,
    };
    let holder = format!("{}#{seq}/{}", job.name, lock.value());
    rec.window(&job.resource, &holder, start.as_micros(), end.as_micros());
    if let Some(token) = lock.token() {
        rec.token(&job.resource, &holder, start.as_micros(), token);
    }
}

/// The holder's work under `lock`, as its behaviour says.
async fn work(lock: &Lock, job: &Job) {
    match job.behaviour {
        Behaviour::Respectful => {
            let left = lock.remaining().saturating_sub(WRITE_MARGIN);
            tokio::time::sleep(job.hold.min(left)).await;
        }
        Behaviour::IgnoresValidity => tokio::time::sleep(job.hold).await,
        Behaviour::AutoExtends => {
            let until = MonoTime::now() + job.hold;
            loop {
                let (now, left) = (
                    MonoTime::now(),
                    lock.remaining().saturating_sub(WRITE_MARGIN),
                );
                if left.is_zero() || now >= until {
                    break;
                }
                tokio::time::sleep(left.min(until - now).min(STEP)).await;
            }
        }
    }
}

/// The deadline the library promised. Read after the release it is still the last one set.
fn lock_deadline(lock: &Lock) -> MonoTime {
    lock.valid_until()
}

async fn resource_command(addr: SocketAddr, args: Vec<Vec<u8>>) -> Option<Reply> {
    tokio::task::spawn_blocking(move || {
        let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
        command_timeout(addr, &refs, Duration::from_secs(2)).ok()
    })
    .await
    .ok()
    .flatten()
}

/// The counter's value (0 if unset), `None` if the resource did not answer.
pub async fn read_counter(addr: SocketAddr) -> Option<u64> {
    match resource_command(addr, vec![b"GET".to_vec(), COUNTER_KEY.to_vec()]).await? {
        Reply::Nil => Some(0),
        Reply::Bulk(b) => std::str::from_utf8(&b).ok()?.parse().ok(),
        _ => None,
    }
}

/// What became of a resource write.
enum Write {
    Acked,
    /// The fencing-token check refused it: the writer's token is older than one seen.
    Fenced,
    Failed,
}

/// Fence key of the protected counter on the resource node.
pub const FENCE_KEY: &[u8] = b"ql:res:fence";

/// Writes the counter; with a fencing token, only if the shipped FENCE-CHECK script accepts
/// the token, in the same script (REDLOCK.md §7.9).
async fn write_counter(addr: SocketAddr, n: u64, token: Option<u64>) -> Write {
    let value = n.to_string().into_bytes();
    let args = match token {
        None => vec![b"SET".to_vec(), COUNTER_KEY.to_vec(), value],
        Some(t) => vec![
            b"EVAL".to_vec(),
            guarded_write().into_bytes(),
            b"2".to_vec(),
            FENCE_KEY.to_vec(),
            COUNTER_KEY.to_vec(),
            t.to_string().into_bytes(),
            value,
        ],
    };
    match resource_command(addr, args).await {
        Some(Reply::Simple(s)) if s == "OK" => Write::Acked,
        Some(Reply::Int(1)) => Write::Acked,
        Some(Reply::Int(0)) => Write::Fenced,
        _ => Write::Failed,
    }
}

/// FENCE-CHECK on KEYS[1] / ARGV[1] (the token), then `SET KEYS[2] ARGV[2]` if it passed.
fn guarded_write() -> String {
    format!(
        "local function fence_check()\n{}\nend\nif fence_check() == 1 then\n  redis.call('SET', KEYS[2], ARGV[2])\n  return 1\nend\nreturn 0\n",
        quorumlock::FENCE_CHECK_SCRIPT
    )
}
