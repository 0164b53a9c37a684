//! Waiting for engine work without holding the GIL (ARCHITECTURE.md §3 step 3): the work runs
//! as a task on the shared runtime, next to the connections' tasks (as in Rust, the replies
//! are handled on the runtime's workers, and the caller is woken once, with the output), while
//! the caller of a call (not of a pure wait) polls for the output for up to 500 µs (the
//! engine's [`Pending`], shared with the JVM binding), then loops
//! on `py.detach(recv 50 ms)` and `py.check_signals()`, so other threads run and Ctrl-C is seen
//! within 50 ms.

use std::future::Future;
use std::time::Duration;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use quorumlock::runtime::{Pending, Work};
use quorumlock::{CancelToken, MonoTime};

use crate::error::ResultExt;
use crate::stages::{self, DONE, POLLED, RESUMED};

const SLICE: Duration = Duration::from_millis(50);

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

/// [`wait`], first polling for the output when `poll` ([`Pending::poll_briefly`]), which only
/// a call does: the work runs as a task and the caller waits on it in slices.
fn start<T, F>(
    py: Python<'_>,
    fut: F,
    timeout: Option<Duration>,
    on_stop: OnStop,
    mut poll: bool,
) -> PyResult<Option<T>>
where
    T: Send + 'static,
    F: Future<Output = T> + Send + 'static,
{
    let work = async move {
        stages::mark(POLLED);
        let out = fut.await;
        stages::mark(DONE);
        out
    };
    // A call polls; a pure wait is not a call (see `quorumlock::runtime::spawn_call`).
    let kind = if poll { Work::Call } else { Work::Wait };
    let mut pending = Pending::spawn_as(kind, work).or_raise()?;
    let deadline = timeout.map(|t| MonoTime::now() + t);
    loop {
        // The poll and the first slice share one release of the GIL: a caller that may not
        // poll (another one is polling) goes straight to sleep instead of taking the GIL back
        // first, which under contention is a sleep and a wake-up of its own.
        let poll_now = std::mem::take(&mut poll);
        let (got, back) = py.detach(move || {
            if poll_now && let Some(v) = pending.poll_briefly(deadline) {
                return (Ok(Some(v)), pending);
            }
            let slice = deadline.map_or(SLICE, |d| d.saturating_since(MonoTime::now()).min(SLICE));
            (pending.wait(slice), pending)
        });
        pending = back;
        match got {
            Ok(Some(v)) => {
                stages::mark(RESUMED);
                return Ok(Some(v));
            }
            Ok(None) => {}
            Err(gone) => return Err(PyRuntimeError::new_err(gone.to_string())),
        }
        let stop = || match &on_stop {
            OnStop::Cancel(token) => token.cancel(),
            OnStop::Finish => {}
            OnStop::Abort => pending.abort(),
        };
        if let Err(e) = py.check_signals() {
            stop();
            return Err(e);
        }
        if deadline.is_some_and(|d| MonoTime::now() >= d) {
            stop();
            return Ok(None);
        }
    }
}

/// [`wait`] without a timeout, for a call (connect, acquire, extend, release, admin): the
/// caller first polls for the output for up to [`quorumlock::runtime::SPIN`].
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
