//! Engine work started by a blocking caller outside the runtime (a thread of a binding's host
//! language) and the wait for its output on that thread.
//!
//! The work runs as a task on the shared runtime ([`crate::runtime::handle`]), next to the
//! connections' tasks: as in Rust, the replies are handled on the runtime's workers and the
//! caller is woken once, with the output. The caller waits in slices ([`Pending::wait`]), so
//! that between two slices it can look at its own language's interrupts (Python's signals,
//! Java's `Thread.interrupt`). A call (not a pure wait) may first poll for the output for up
//! to [`SPIN`] ([`Pending::poll_briefly`]): waking a sleeping thread goes through the kernel,
//! which on a virtual machine whose idle CPUs halt costs tens of µs per call.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use tokio::runtime::{Handle, RuntimeFlavor};
use tokio::task::AbortHandle;

use crate::clock::MonoTime;
use crate::error::Result;
use crate::runtime::Work;

/// How long one waiting caller polls for the output, yielding its CPU between polls, before
/// it sleeps on the channel.
pub const SPIN: Duration = Duration::from_micros(500);
/// Calls that sleep at once after a poll that ran out its [`SPIN`] without the output: on a
/// loaded machine, for slow nodes or a wait for a held lock, polling would only take CPU from
/// others.
const SPIN_BACKOFF: u32 = 32;
/// Whether a caller is polling now: one at a time, so that many waiting threads of a process
/// never compete with the engine and the nodes for the CPUs.
static SPINNING: AtomicBool = AtomicBool::new(false);
/// Calls left before the next poll is tried (see [`SPIN_BACKOFF`]).
static SKIP: AtomicU32 = AtomicU32::new(0);
/// Clears the polling slot and its backoff in a child process after `fork()` (a thread of
/// the parent may have held the slot); called when the runtime is created anew there.
pub(crate) fn after_fork() {
    SPINNING.store(false, Ordering::Release);
    SKIP.store(0, Ordering::Relaxed);
}

/// The engine task ended without an output: it panicked, or the runtime is shutting down.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskGone;

impl std::fmt::Display for TaskGone {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(
            "a quorumlock engine task ended without a result (a panic, or the runtime is shutting down)",
        )
    }
}

impl std::error::Error for TaskGone {}

/// Engine work running on the shared runtime, whose output a thread outside the runtime
/// waits for. Dropping it stops nobody: the work finishes in the background and its output
/// is dropped there (a lock won after its caller gave up is then released by its drop).
#[derive(Debug)]
pub struct Pending<T> {
    rx: mpsc::Receiver<T>,
    task: AbortHandle,
}

impl<T: Send + 'static> Pending<T> {
    /// Starts a call (`work`) as a task on the shared runtime, counted as a call from outside
    /// it ([`crate::runtime::spawn_call`]).
    ///
    /// # Errors
    /// `InvalidArgument` when the runtime cannot start.
    pub fn spawn<F>(work: F) -> Result<Pending<T>>
    where
        F: Future<Output = T> + Send + 'static,
    {
        Self::spawn_as(Work::Call, work)
    }

    /// Starts `work` as a task on the shared runtime, as a call or as a pure wait (a lock's
    /// loss, say, which may last as long as the lock and is not counted as a call).
    ///
    /// # Errors
    /// `InvalidArgument` when the runtime cannot start.
    pub fn spawn_as<F>(kind: Work, work: F) -> Result<Pending<T>>
    where
        F: Future<Output = T> + Send + 'static,
    {
        let handle = crate::runtime::handle()?;
        let (tx, rx) = mpsc::sync_channel(1);
        let work = async move {
            // A receiver that stopped waiting drops the output here.
            let _ = tx.send(work.await);
        };
        let task = crate::runtime::spawn_work(&handle, kind, work);
        Ok(Pending {
            rx,
            task: task.abort_handle(),
        })
    }

    /// The output if it arrives within [`SPIN`], polling for it when this caller may: none
    /// is polling, no backoff is running, more than [`SPIN`] is left before `deadline`, and
    /// the process has more than one CPU, and this is not a thread of a tokio runtime. `None` at
    /// once otherwise; then [`wait`](Self::wait).
    pub fn poll_briefly(&self, deadline: Option<MonoTime>) -> Option<T> {
        let until = MonoTime::now() + SPIN;
        if deadline.is_some_and(|d| d < until)
            || Handle::try_current().is_ok()
            || !crate::runtime::multi_cpu()
            || SKIP
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |s| s.checked_sub(1))
                .is_ok()
            || SPINNING
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
        {
            return None;
        }
        let _slot = Slot;
        loop {
            match self.rx.try_recv() {
                Ok(v) => return Some(v),
                Err(mpsc::TryRecvError::Empty) if MonoTime::now() < until => {
                    std::thread::yield_now();
                }
                Err(mpsc::TryRecvError::Empty) => {
                    SKIP.store(SPIN_BACKOFF, Ordering::Relaxed);
                    return None;
                }
                Err(mpsc::TryRecvError::Disconnected) => return None,
            }
        }
    }

    /// Sleeps up to `slice` for the output; `Ok(None)` when the slice passed first.
    ///
    /// # Errors
    /// [`TaskGone`] when the task ended without an output.
    pub fn wait(&self, slice: Duration) -> std::result::Result<Option<T>, TaskGone> {
        match block_here(|| self.rx.recv_timeout(slice)) {
            Ok(v) => Ok(Some(v)),
            Err(mpsc::RecvTimeoutError::Timeout) => Ok(None),
            Err(mpsc::RecvTimeoutError::Disconnected) => Err(TaskGone),
        }
    }

    /// The output, polling first as [`poll_briefly`](Self::poll_briefly) allows, then
    /// sleeping until it comes: for work that is bounded by itself (a release, an extension)
    /// and is never interrupted.
    ///
    /// # Errors
    /// [`TaskGone`] when the task ended without an output.
    pub fn join(self) -> std::result::Result<T, TaskGone> {
        match self.poll_briefly(None) {
            Some(v) => Ok(v),
            None => block_here(|| self.rx.recv()).map_err(|_| TaskGone),
        }
    }

    /// Stops the work at its next await point (for work that owns nothing, such as a wait
    /// for a lock's loss; cancel an acquisition through its [`crate::CancelToken`] instead,
    /// so that it cleans up).
    pub fn abort(&self) {
        self.task.abort();
    }
}

/// Runs `f`, which blocks, on this thread. On a worker of a multi-thread runtime (a host
/// callback that runs there, say) the worker first hands its other tasks to another thread
/// (`block_in_place`): the work waited for may sit in this worker's own queue. Elsewhere
/// (any other thread, a blocking-pool thread, a current-thread runtime, which cannot hand
/// off and whose blocking is its owner's choice) it just runs `f`.
fn block_here<R>(f: impl FnOnce() -> R) -> R {
    match Handle::try_current() {
        Ok(h) if h.runtime_flavor() == RuntimeFlavor::MultiThread => tokio::task::block_in_place(f),
        _ => f(),
    }
}

/// Frees the polling slot when the poll ends, however it ends.
struct Slot;

impl Drop for Slot {
    fn drop(&mut self) {
        SPINNING.store(false, Ordering::Release);
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The polling slot, the backoff and the runtime's count of calls are process-wide: one
    /// test at a time (the runtime's tests take it too).
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

    pub(crate) fn serial() -> std::sync::MutexGuard<'static, ()> {
        SERIAL
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    #[test]
    fn the_output_comes_through_wait_and_join() {
        let _serial = serial();
        let p = Pending::spawn(async {
            tokio::time::sleep(Duration::from_millis(30)).await;
            7
        })
        .expect("runtime");
        assert_eq!(p.wait(Duration::from_millis(1)), Ok(None), "not there yet");
        assert_eq!(p.wait(Duration::from_secs(5)), Ok(Some(7)));
        let q = Pending::spawn(async { 8 }).expect("runtime");
        assert_eq!(q.join(), Ok(8));
    }

    #[test]
    fn a_worker_of_the_shared_runtime_may_wait() {
        let _serial = serial();
        // A host callback running on one of the runtime's own workers waits for work that
        // lands in that worker's queue: the worker hands its queue over instead of starving it.
        let handle = crate::runtime::handle().expect("runtime");
        let (tx, rx) = mpsc::channel();
        handle.spawn(async move {
            let p = Pending::spawn(async { 5 }).expect("runtime");
            let polled = p.poll_briefly(None);
            let _ = tx.send((polled, p.join()));
        });
        let (polled, joined) = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("the worker deadlocked waiting for work in its own queue");
        assert!(polled.is_none(), "no polling on a runtime thread");
        assert_eq!(joined, Ok(5));
    }

    #[test]
    fn a_task_that_ends_without_output_is_gone() {
        let _serial = serial();
        let p = Pending::<u8>::spawn(std::future::pending()).expect("runtime");
        p.abort();
        assert_eq!(p.wait(Duration::from_secs(5)), Err(TaskGone));
        #[allow(clippy::panic)]
        let q = Pending::<u8>::spawn(async { panic!("engine bug") }).expect("runtime");
        assert_eq!(q.join(), Err(TaskGone));
    }

    #[test]
    fn one_caller_polls_at_a_time_and_a_late_poll_backs_off() {
        let _serial = serial();
        let slow = || {
            Pending::spawn(async {
                tokio::time::sleep(Duration::from_secs(1)).await;
            })
            .expect("runtime")
        };
        // The slot is taken: the poll returns at once (one that polled out its SPIN would
        // have set the backoff).
        SKIP.store(0, Ordering::Relaxed);
        SPINNING.store(true, Ordering::Release);
        assert!(slow().poll_briefly(None).is_none());
        assert_eq!(SKIP.load(Ordering::Relaxed), 0, "it polled");
        SPINNING.store(false, Ordering::Release);
        // Less than SPIN before the deadline: no poll either.
        assert!(slow().poll_briefly(Some(MonoTime::now())).is_none());
        if std::thread::available_parallelism().is_ok_and(|n| n.get() > 1) {
            // A poll that runs out its SPIN makes the next calls sleep at once.
            SKIP.store(0, Ordering::Relaxed);
            let p = slow();
            let t0 = MonoTime::now();
            assert!(p.poll_briefly(None).is_none());
            assert!(MonoTime::now() - t0 >= SPIN, "it polled");
            assert_eq!(SKIP.load(Ordering::Relaxed), SPIN_BACKOFF);
            let fast = Pending::spawn(async { 1 }).expect("runtime");
            std::thread::sleep(Duration::from_millis(20));
            assert!(fast.poll_briefly(None).is_none(), "backing off: no poll");
            assert_eq!(fast.wait(Duration::from_secs(1)), Ok(Some(1)));
            // after_fork clears the backoff and the slot.
            SPINNING.store(true, Ordering::Release);
            after_fork();
            assert_eq!(SKIP.load(Ordering::Relaxed), 0);
            assert!(!SPINNING.load(Ordering::Acquire));
            let ready = Pending::spawn(async { 2 }).expect("runtime");
            // Done long before the poll even on a loaded machine: the poll finds it at once.
            std::thread::sleep(Duration::from_millis(200));
            assert_eq!(
                ready.poll_briefly(None),
                Some(2),
                "the slot and backoff were cleared"
            );
        }
    }
}
