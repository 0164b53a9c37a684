//! Waiting for engine work without holding the GIL (ARCHITECTURE.md §3 step 3): the work runs
//! as a task on the shared runtime, next to the connections' tasks (as in Rust, the replies
//! are handled on the runtime's workers, and the caller is woken once, with the output), while
//! the caller polls for the output for up to 500 µs, then loops on `py.detach(recv 50 ms)` and
//! `py.check_signals()`, so other threads run and Ctrl-C is seen within 50 ms.

use std::future::Future;
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
/// Calls that sleep at once after a poll that did not see the output in time: on a loaded
/// machine, or for slow nodes, polling would only take CPU from others.
const SPIN_BACKOFF: u32 = 32;
/// Whether a caller is polling now: one at a time, so that many waiting threads never
/// compete with the engine and the nodes for the CPUs.
static SPINNING: AtomicBool = AtomicBool::new(false);
/// Calls left before the next poll is tried (see [`SPIN_BACKOFF`]).
static SKIP: AtomicU32 = AtomicU32::new(0);

/// The output if it arrives within [`SPIN`] (and before `deadline`), when this caller may
/// poll.
fn spin<T>(rx: &mpsc::Receiver<T>, deadline: Option<MonoTime>) -> Option<T> {
    let skip = SKIP.load(Ordering::Relaxed);
    if skip > 0 {
        SKIP.store(skip - 1, Ordering::Relaxed);
        return None;
    }
    if SPINNING.swap(true, Ordering::Acquire) {
        return None;
    }
    let until = deadline.map_or(MonoTime::now() + SPIN, |d| d.min(MonoTime::now() + SPIN));
    let out = loop {
        match rx.try_recv() {
            Ok(v) => break Some(v),
            Err(mpsc::TryRecvError::Empty) if MonoTime::now() < until => std::thread::yield_now(),
            Err(_) => break None,
        }
    };
    if out.is_none() {
        SKIP.store(SPIN_BACKOFF, Ordering::Relaxed);
    }
    SPINNING.store(false, Ordering::Release);
    out
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
/// `timeout` passes first.
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
    let handle = runtime::handle()?;
    let fut = async move {
        stages::mark(POLLED);
        let out = fut.await;
        stages::mark(DONE);
        out
    };
    wait_on_task(py, &handle, fut, timeout, on_stop)
}

/// [`wait`]'s loop: the work runs as a task and the caller waits on a channel in slices.
fn wait_on_task<T, F>(
    py: Python<'_>,
    handle: &Handle,
    fut: F,
    timeout: Option<Duration>,
    on_stop: OnStop,
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
    let (early, back) = py.detach(move || (spin(&rx, deadline), rx));
    rx = back;
    if let Some(v) = early {
        stages::mark(RESUMED);
        return Ok(Some(v));
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

/// [`wait`] without a timeout.
///
/// # Errors
/// As [`wait`].
pub(crate) fn run<T, F>(py: Python<'_>, fut: F, on_stop: OnStop) -> PyResult<T>
where
    T: Send + 'static,
    F: Future<Output = T> + Send + 'static,
{
    wait(py, fut, None, on_stop)?.ok_or_else(|| PyRuntimeError::new_err("no result"))
}
