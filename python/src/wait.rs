//! Waiting for engine work without holding the GIL (ARCHITECTURE.md §3 step 3): the work runs
//! as a task on the shared runtime, next to the connections' tasks (as in Rust, the replies
//! are handled on the runtime's workers, and the caller is woken once, with the output), while
//! the caller of a call (not of a pure wait) polls for the output for up to 500 µs, then loops
//! on `py.detach(recv 50 ms)` and `py.check_signals()`, so other threads run and Ctrl-C is seen
//! within 50 ms.

use std::future::Future;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use quorumlock::{CancelToken, MonoTime};
use tokio::runtime::Handle;

use crate::runtime;
use crate::stages::{self, DONE, POLLED, RESUMED};

const SLICE: Duration = Duration::from_millis(50);
/// How long one waiting caller polls for the output, yielding its CPU between polls, before
/// it sleeps on the channel. A sleeping thread is woken through the kernel, which on a
/// virtual machine whose idle CPUs halt costs tens of µs per call (README, "Benchmark: Python
/// and Node").
const SPIN: Duration = Duration::from_micros(500);
/// Calls that sleep at once after a poll that ran out its [`SPIN`] without the output: on a
/// loaded machine, for slow nodes or a wait for a held lock, polling would only take CPU from
/// others.
const SPIN_BACKOFF: u32 = 32;
/// Whether a caller is polling now: one at a time, so that many waiting threads of a process
/// never compete with the engine and the nodes for the CPUs.
static SPINNING: AtomicBool = AtomicBool::new(false);
/// Calls left before the next poll is tried (see [`SPIN_BACKOFF`]).
static SKIP: AtomicU32 = AtomicU32::new(0);
/// Whether the process may use more than one CPU; with one, polling would only delay the
/// engine's own threads.
static MULTI_CPU: OnceLock<bool> = OnceLock::new();

/// Clears the polling slot in a child process after `fork()` (a thread of the parent may have
/// held it) and its backoff.
pub(crate) fn after_fork() {
    SPINNING.store(false, Ordering::Release);
    SKIP.store(0, Ordering::Relaxed);
}

/// Frees the polling slot when the poll ends, however it ends.
struct Slot;

impl Drop for Slot {
    fn drop(&mut self) {
        SPINNING.store(false, Ordering::Release);
    }
}

/// The output if it arrives within [`SPIN`], when this caller may poll: none is polling,
/// no backoff is running, more than [`SPIN`] is left before `deadline`, and the process has
/// more than one CPU.
fn spin<T>(rx: &mpsc::Receiver<T>, deadline: Option<MonoTime>) -> Option<T> {
    let until = MonoTime::now() + SPIN;
    if deadline.is_some_and(|d| d < until)
        || !*MULTI_CPU
            .get_or_init(|| std::thread::available_parallelism().is_ok_and(|n| n.get() > 1))
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
        match rx.try_recv() {
            Ok(v) => return Some(v),
            Err(mpsc::TryRecvError::Empty) if MonoTime::now() < until => std::thread::yield_now(),
            Err(mpsc::TryRecvError::Empty) => {
                SKIP.store(SPIN_BACKOFF, Ordering::Relaxed);
                return None;
            }
            Err(mpsc::TryRecvError::Disconnected) => return None,
        }
    }
}

/// What happens to the engine work when the caller stops waiting (a signal handler raised,
/// or the timeout passed).
pub(crate) enum OnStop {
    /// Cancel the token: the engine abandons the attempt and cleans up by itself.
    Cancel(CancelToken),
    /// Let the work finish in the background (release, extend).
    Finish,
    /// Drop the work (pure waits, which own nothing).
    Abort,
}

/// Runs `fut` and waits for its output with the GIL released. Returns `Ok(None)` when
/// `timeout` passes first. A pure wait (a lock's loss, say) never polls: see [`run`].
///
/// # Errors
/// Whatever a signal handler raised (`KeyboardInterrupt`), after applying `on_stop`.
pub(crate) fn wait<T, F>(
    py: Python<'_>,
    fut: F,
    timeout: Option<Duration>,
    on_stop: OnStop,
) -> PyResult<Option<T>>
where
    T: Send + 'static,
    F: Future<Output = T> + Send + 'static,
{
    start(py, fut, timeout, on_stop, false)
}

/// [`wait`], first polling for the output when `poll` (see [`spin`]).
fn start<T, F>(
    py: Python<'_>,
    fut: F,
    timeout: Option<Duration>,
    on_stop: OnStop,
    poll: bool,
) -> PyResult<Option<T>>
where
    T: Send + 'static,
    F: Future<Output = T> + Send + 'static,
{
    let handle = runtime::handle()?;
    let fut = async move {
        stages::mark(POLLED);
        let out = fut.await;
        stages::mark(DONE);
        out
    };
    wait_on_task(py, &handle, fut, timeout, on_stop, poll)
}

/// [`wait`]'s loop: the work runs as a task and the caller waits on a channel in slices.
fn wait_on_task<T, F>(
    py: Python<'_>,
    handle: &Handle,
    fut: F,
    timeout: Option<Duration>,
    on_stop: OnStop,
    poll: bool,
) -> PyResult<Option<T>>
where
    T: Send + 'static,
    F: Future<Output = T> + Send + 'static,
{
    let (tx, mut rx) = mpsc::sync_channel(1);
    let task = handle.spawn(async move {
        // A receiver that stopped waiting drops the output here (a lock won after a
        // cancellation is then released in the background by its drop).
        let _ = tx.send(fut.await);
    });
    let deadline = timeout.map(|t| MonoTime::now() + t);
    let stop = |on_stop: OnStop| match on_stop {
        OnStop::Cancel(token) => token.cancel(),
        OnStop::Finish => {}
        OnStop::Abort => task.abort(),
    };
    if poll {
        let (early, back) = py.detach(move || (spin(&rx, deadline), rx));
        rx = back;
        if let Some(v) = early {
            stages::mark(RESUMED);
            return Ok(Some(v));
        }
    }
    loop {
        let slice = deadline.map_or(SLICE, |d| d.saturating_since(MonoTime::now()).min(SLICE));
        let (got, back) = py.detach(move || (rx.recv_timeout(slice), rx));
        rx = back;
        match got {
            Ok(v) => {
                stages::mark(RESUMED);
                return Ok(Some(v));
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(PyRuntimeError::new_err(
                    "a quorumlock engine task ended without a result (the runtime is shutting down?)",
                ));
            }
        }
        if let Err(e) = py.check_signals() {
            stop(on_stop);
            return Err(e);
        }
        if deadline.is_some_and(|d| MonoTime::now() >= d) {
            stop(on_stop);
            return Ok(None);
        }
    }
}

/// [`wait`] without a timeout, for a call (connect, acquire, extend, release, admin): the
/// caller first polls for the output for up to [`SPIN`].
///
/// # Errors
/// As [`wait`].
pub(crate) fn run<T, F>(py: Python<'_>, fut: F, on_stop: OnStop) -> PyResult<T>
where
    T: Send + 'static,
    F: Future<Output = T> + Send + 'static,
{
    start(py, fut, None, on_stop, true)?.ok_or_else(|| PyRuntimeError::new_err("no result"))
}
