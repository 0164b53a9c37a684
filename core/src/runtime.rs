//! The shared tokio runtime for blocking callers and bindings: one per process, created on
//! first use and created anew in a child process after `fork()` (the parent's worker
//! threads do not exist there).

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::Duration;

use tokio::runtime::{Builder, Handle, Runtime};
use tokio::task::JoinHandle;

use crate::clock::MonoTime;
use crate::error::{Error, Result};

pub use crate::pending::{Pending, SPIN, TaskGone};

static RUNTIME: Mutex<Option<(u32, Runtime)>> = Mutex::new(None);

/// A handle to the process-wide runtime, creating it (again, after `fork()`) when needed.
///
/// # Errors
/// `InvalidArgument` when the runtime's threads cannot be started.
pub fn handle() -> Result<Handle> {
    let pid = std::process::id();
    let mut slot = RUNTIME.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((owner, rt)) = slot.as_ref()
        && *owner == pid
    {
        return Ok(rt.handle().clone());
    }
    let rt = Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("quorumlock")
        .enable_all()
        .build()
        .map_err(|e| Error::invalid(format!("cannot start the quorumlock runtime: {e}")))?;
    let handle = rt.handle().clone();
    if let Some((_, inherited)) = slot.replace((pid, rt)) {
        // Inherited from the parent across fork(): its threads are gone in this process, so
        // dropping it would wait for them forever. Leak it instead.
        std::mem::forget(inherited);
        crate::pending::after_fork();
        CALLS.store(0, Ordering::Relaxed);
        LINGERING.store(false, Ordering::Relaxed);
        LINGER_SKIP.store(0, Ordering::Relaxed);
        crate::timer::after_fork();
    }
    Ok(handle)
}

/// How long a runtime worker stays awake for the next call from outside the runtime after the
/// last one in flight ended (see [`spawn_call`]).
pub const LINGER: Duration = Duration::from_micros(200);

/// Calls from outside the runtime in flight (see [`spawn_call`]).
static CALLS: AtomicUsize = AtomicUsize::new(0);
/// Whether a task keeps a worker awake now: one at a time.
static LINGERING: AtomicBool = AtomicBool::new(false);
/// Times the count of calls falls to zero without a linger, after a linger that no call
/// ended: a caller whose calls come further apart than [`LINGER`] would only pay the CPU.
const LINGER_BACKOFF: u32 = 32;
/// Falls to zero left before the next linger (see [`LINGER_BACKOFF`]).
static LINGER_SKIP: AtomicU32 = AtomicU32::new(0);

/// Runs a call of a thread outside the runtime (a binding's caller, an event loop) as a task
/// on `handle`, the shared runtime's ([`handle`]): the calls are counted process-wide.
///
/// When the last call in flight has ended (for the bindings' calls, after their output was
/// handed over inside `work`), a worker stays awake for up to [`LINGER`], yielding, so that the
/// caller's next call finds it running: waking a sleeping worker costs tens of µs on a
/// virtual machine whose idle CPUs halt, and a caller making one call after another pays it on
/// every call. The lingering worker goes through its scheduler on every yield, so it runs any
/// other task, and polls I/O when the other worker is not parked on it; it stops at once when
/// a call arrives. Its cost is CPU: the yields, and the other worker, which tokio wakes at
/// times to look for work. A linger that no call ended makes the next 32 times the count falls
/// to zero start none. Not on a single CPU, where it would only delay the caller. A pure wait
/// (for a lock's loss) is not a call ([`Work::Wait`], [`spawn_work`]).
pub fn spawn_call<F>(handle: &Handle, work: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    CALLS.fetch_add(1, Ordering::AcqRel);
    let end = CallEnd(handle.clone());
    handle.spawn(async move {
        let end = end;
        let out = work.await;
        drop(end);
        out
    })
}

/// What a task started from outside the runtime is: a call, counted by [`spawn_call`], or a
/// pure wait (for a lock's loss, say, which may last as long as the lock), which is not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Work {
    /// A call: connect, acquire, extend, release, an administrative call.
    Call,
    /// A pure wait, which owns nothing and may last indefinitely.
    Wait,
}

/// Runs `work` on `handle` as [`spawn_call`] does for a [`Work::Call`], and as a plain task
/// for a [`Work::Wait`].
pub fn spawn_work<F>(handle: &Handle, kind: Work, work: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    match kind {
        Work::Call => spawn_call(handle, work),
        Work::Wait => handle.spawn(work),
    }
}

/// Counts a call out when dropped (its task ended, or was dropped unfinished), and starts a
/// linger on its runtime when it was the last one in flight.
struct CallEnd(Handle);

impl Drop for CallEnd {
    fn drop(&mut self) {
        if CALLS.fetch_sub(1, Ordering::AcqRel) == 1
            && multi_cpu()
            && !LINGERING.load(Ordering::Acquire)
            && LINGER_SKIP
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |s| s.checked_sub(1))
                .is_err()
            && !LINGERING.swap(true, Ordering::AcqRel)
        {
            self.0.spawn(linger(Lingering));
        }
    }
}

/// The linger slot, freed when the linger ends or its task is dropped unpolled (a runtime
/// shutting down).
struct Lingering;

impl Drop for Lingering {
    fn drop(&mut self) {
        LINGERING.store(false, Ordering::Release);
    }
}

/// Yields until a call arrives or [`LINGER`] has passed.
async fn linger(_slot: Lingering) {
    let until = MonoTime::now() + LINGER;
    while CALLS.load(Ordering::Acquire) == 0 {
        if MonoTime::now() >= until {
            LINGER_SKIP.store(LINGER_BACKOFF, Ordering::Relaxed);
            break;
        }
        tokio::task::yield_now().await;
    }
}

/// Whether the process may use more than one CPU: with one, polling for an output or keeping
/// a worker awake would only delay the others.
pub(crate) fn multi_cpu() -> bool {
    static MULTI: OnceLock<bool> = OnceLock::new();
    *MULTI.get_or_init(|| std::thread::available_parallelism().is_ok_and(|n| n.get() > 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pending::tests::serial;

    /// Waits until no call is in flight and no linger runs (tasks of other tests may still
    /// be finishing), then clears the backoff.
    fn reset() {
        let until = MonoTime::now() + Duration::from_secs(10);
        while CALLS.load(Ordering::Acquire) != 0 || LINGERING.load(Ordering::Acquire) {
            assert!(
                MonoTime::now() < until,
                "calls of other tests still in flight"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        LINGER_SKIP.store(0, Ordering::Relaxed);
    }

    #[test]
    fn a_call_is_counted_while_it_runs() {
        let _serial = serial();
        reset();
        let handle = handle().expect("runtime");
        let during = handle
            .block_on(spawn_call(&handle, async { CALLS.load(Ordering::Acquire) }))
            .expect("the call ran");
        assert_eq!(during, 1);
        assert_eq!(CALLS.load(Ordering::Acquire), 0, "counted out at its end");
    }

    #[test]
    fn a_linger_stops_when_a_call_arrives_and_backs_off_when_none_did() {
        let _serial = serial();
        reset();
        let handle = handle().expect("runtime");
        // A call in flight: the linger ends at once, and no backoff follows.
        CALLS.store(1, Ordering::Release);
        LINGERING.store(true, Ordering::Release);
        handle.block_on(linger(Lingering));
        assert!(!LINGERING.load(Ordering::Acquire), "the slot is freed");
        assert_eq!(LINGER_SKIP.load(Ordering::Relaxed), 0);
        // No call: it stays awake for LINGER, then the next calls end without a linger.
        CALLS.store(0, Ordering::Release);
        let t0 = MonoTime::now();
        handle.block_on(linger(Lingering));
        assert!(MonoTime::now() - t0 >= LINGER);
        assert_eq!(LINGER_SKIP.load(Ordering::Relaxed), LINGER_BACKOFF);
        CALLS.store(1, Ordering::Release);
        drop(CallEnd(handle));
        let skip = if multi_cpu() {
            LINGER_BACKOFF - 1
        } else {
            LINGER_BACKOFF
        };
        assert_eq!(LINGER_SKIP.load(Ordering::Relaxed), skip);
        assert!(!LINGERING.load(Ordering::Acquire), "backing off: no linger");
        // A linger dropped before it ran frees its slot.
        LINGERING.store(true, Ordering::Release);
        drop(linger(Lingering));
        assert!(!LINGERING.load(Ordering::Acquire));
        reset();
    }
}
