//! asyncio awaitables without a thread hop or the GIL on engine threads.
//!
//! Each event loop has one [`Completions`] queue (made and registered by `quorumlock._aio`): a
//! pipe whose read end the loop watches with `add_reader`. An engine task that finishes pushes
//! its output, still a Rust value, onto the queue and writes one byte to the pipe when the
//! queue was empty, so a burst of completions costs one wake-up. The loop then calls
//! [`Completions::drain`], which converts every output into Python objects and sets the
//! futures' results, on the loop's own thread. Engine threads never take the GIL, so
//! interpreter shutdown cannot meet them inside Python.

use std::future::Future;
use std::io::{PipeReader, PipeWriter, Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use pyo3::exceptions::PyRuntimeError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use quorumlock::CancelToken;
use quorumlock::runtime::Work;
use tokio::task::AbortHandle;

use crate::runtime;
use crate::stages::{self, DONE, POLLED, RESUMED, RETURNED};

/// Turns an engine output into the future's result (or exception), on the loop's thread.
type Convert = Box<dyn FnOnce(Python<'_>) -> PyResult<Py<PyAny>> + Send>;

/// One finished operation waiting for its loop.
struct Done {
    future: Py<PyAny>,
    result: Convert,
}

/// Finished operations, and whether the loop's queue is gone.
#[derive(Default)]
struct Queue {
    done: Vec<Done>,
    /// Set when the [`Completions`] is dropped: nobody reads the pipe any more.
    closed: bool,
}

/// What engine tasks and the loop share.
struct Shared {
    queue: Mutex<Queue>,
    writer: PipeWriter,
}

impl Shared {
    fn queue(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn push(&self, done: Done) {
        let mut queue = self.queue();
        if queue.closed {
            // The loop is gone, and a write to a pipe without a reader raises SIGPIPE, which
            // kills a process that restored its default handler. The output is dropped here
            // (a lock won meanwhile is released in the background).
            drop(queue);
            drop(done);
            return;
        }
        queue.done.push(done);
        if queue.done.len() == 1 {
            // At most one byte per non-empty stretch of the queue (plus one stray byte when a
            // drain raced with this push), so the pipe never fills and this never blocks.
            // Written under the queue's lock: the read end closes only after `closed` is set.
            let _ = (&self.writer).write_all(&[1]);
        }
    }
}

/// The completion queue of one asyncio event loop.
#[pyclass(frozen, module = "quorumlock._quorumlock")]
pub(crate) struct Completions {
    shared: Arc<Shared>,
    reader: PipeReader,
}

#[pymethods]
impl Completions {
    /// A queue with a new pipe; `quorumlock._aio` registers `drain` for `fileno()`.
    #[new]
    fn new() -> PyResult<Self> {
        let (reader, writer) = std::io::pipe()
            .map_err(|e| PyRuntimeError::new_err(format!("cannot create a pipe: {e}")))?;
        Ok(Completions {
            shared: Arc::new(Shared {
                queue: Mutex::new(Queue::default()),
                writer,
            }),
            reader,
        })
    }

    /// The pipe's read end, for `loop.add_reader`.
    fn fileno(&self) -> PyResult<i64> {
        #[cfg(unix)]
        {
            use std::os::fd::AsRawFd;
            Ok(i64::from(self.reader.as_raw_fd()))
        }
        #[cfg(not(unix))]
        {
            Err(pyo3::exceptions::PyNotImplementedError::new_err(
                "the asyncio API needs a Unix event loop",
            ))
        }
    }

    /// Settles every finished operation's future (the loop's reader callback). A future that
    /// is already done (its task was cancelled) drops the output: a lock won meanwhile is
    /// released in the background.
    fn drain(&self, py: Python<'_>) {
        // The read end is non-blocking (set by `quorumlock._aio`); a byte or none.
        let _ = (&self.reader).read(&mut [0u8; 64]);
        let done = std::mem::take(&mut self.shared.queue().done);
        for Done { future, result } in done {
            stages::mark(RESUMED);
            let future = future.bind(py);
            let settled = future
                .call_method0(intern!(py, "done"))
                .and_then(|d| d.is_truthy());
            if !matches!(settled, Ok(false)) {
                continue;
            }
            let (method, value) = match result(py) {
                Ok(v) => (intern!(py, "set_result"), v),
                Err(e) => (intern!(py, "set_exception"), e.into_value(py).into_any()),
            };
            if let Err(e) = future.call_method1(method, (value,)) {
                e.write_unraisable(py, Some(future));
            }
            stages::mark(RETURNED);
        }
    }
}

impl Drop for Completions {
    fn drop(&mut self) {
        // Before the read end closes (it is dropped after this): no engine task writes to it.
        let done = {
            let mut queue = self.shared.queue();
            queue.closed = true;
            std::mem::take(&mut queue.done)
        };
        drop(done);
    }
}

/// Settles its future exactly once: with the engine's output, or with a `RuntimeError` when
/// dropped unsent (the task panicked, was aborted, or the runtime shut down).
struct Deliver {
    shared: Arc<Shared>,
    future: Option<Py<PyAny>>,
    /// Set by the [`Canceller`] when the future was cancelled: nobody awaits the output.
    cancelled: Arc<AtomicBool>,
}

impl Deliver {
    fn send(mut self, result: Convert) {
        if self.cancelled.load(Ordering::Acquire) {
            // Dropped here, on the engine thread: a lock won as its task was cancelled is
            // released at once, even if the loop never drains again (closed by asyncio.run).
            self.future = None;
            drop(result);
            return;
        }
        if let Some(future) = self.future.take() {
            self.shared.push(Done { future, result });
        }
    }
}

impl Drop for Deliver {
    fn drop(&mut self) {
        if let Some(future) = self.future.take() {
            self.shared.push(Done {
                future,
                result: Box::new(|_: Python<'_>| {
                    Err(PyRuntimeError::new_err(
                        "a quorumlock engine task ended without a result (the runtime is shutting down?)",
                    ))
                }),
            });
        }
    }
}

/// What happens to the engine task when the awaiting asyncio task is cancelled.
pub(crate) enum OnCancel {
    /// Cancel the token: the engine abandons the attempt and cleans up by itself.
    Cancel(CancelToken),
    /// Let the task finish in the background (release, extend).
    Finish,
    /// Drop the task (pure reads and waits, which own nothing).
    Abort,
}

/// The done-callback of a cancellable future: stops the engine task if the future was
/// cancelled.
#[pyclass(frozen, module = "quorumlock._quorumlock")]
pub(crate) struct Canceller {
    token: Option<CancelToken>,
    abort: Option<AbortHandle>,
    cancelled: Arc<AtomicBool>,
}

#[pymethods]
impl Canceller {
    fn __call__(&self, future: &Bound<'_, PyAny>) -> PyResult<()> {
        if future
            .call_method0(intern!(future.py(), "cancelled"))?
            .is_truthy()?
        {
            self.cancelled.store(true, Ordering::Release);
            if let Some(token) = &self.token {
                token.cancel();
            }
            if let Some(abort) = &self.abort {
                abort.abort();
            }
        }
        Ok(())
    }
}

/// `quorumlock._aio.future`: a new future of the running loop and that loop's queue.
fn loop_future(py: Python<'_>) -> PyResult<(Bound<'_, PyAny>, Py<Completions>)> {
    static FUTURE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    let make = FUTURE.get_or_try_init(py, || {
        py.import("quorumlock._aio")?
            .getattr("future")
            .map(Bound::unbind)
    })?;
    make.bind(py).call0()?.extract()
}

/// Runs `fut` on the shared runtime and returns an asyncio future of the running loop that
/// `convert(output)` settles, on the loop's thread.
pub(crate) fn spawn<'py, T, F, C>(
    py: Python<'py>,
    kind: Work,
    fut: F,
    on_cancel: OnCancel,
    convert: C,
) -> PyResult<Bound<'py, PyAny>>
where
    T: Send + 'static,
    F: Future<Output = T> + Send + 'static,
    C: FnOnce(Python<'_>, T) -> PyResult<Py<PyAny>> + Send + 'static,
{
    let handle = runtime::handle()?;
    let (future, queue) = loop_future(py)?;
    let cancelled = Arc::new(AtomicBool::new(false));
    let deliver = Deliver {
        shared: queue.get().shared.clone(),
        future: Some(future.clone().unbind()),
        cancelled: cancelled.clone(),
    };
    let work = async move {
        stages::mark(POLLED);
        let out = fut.await;
        stages::mark(DONE);
        deliver.send(Box::new(move |py: Python<'_>| convert(py, out)));
    };
    let task = quorumlock::runtime::spawn_work(&handle, kind, work);
    let canceller = match on_cancel {
        OnCancel::Finish => None,
        OnCancel::Cancel(token) => Some(Canceller {
            token: Some(token),
            abort: None,
            cancelled,
        }),
        OnCancel::Abort => Some(Canceller {
            token: None,
            abort: Some(task.abort_handle()),
            cancelled,
        }),
    };
    if let Some(c) = canceller {
        future.call_method1(intern!(py, "add_done_callback"), (c,))?;
    }
    Ok(future)
}
