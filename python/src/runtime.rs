//! pyo3-async-runtimes over core's shared, fork-aware runtime: asyncio awaitables run their
//! Rust futures on `quorumlock::runtime::handle()`, the same threads as every engine task.

use std::cell::OnceCell;
use std::future::Future;
use std::pin::Pin;

use pyo3::PyResult;
use pyo3_async_runtimes::TaskLocals;
use pyo3_async_runtimes::generic::{ContextExt, Runtime};
use tokio::runtime::Handle;
use tokio::task::JoinHandle;

use crate::error::ResultExt;

tokio::task_local! {
    static TASK_LOCALS: OnceCell<TaskLocals>;
}

/// The runtime handle for this process (created again in a child after `fork()`).
pub(crate) fn handle() -> PyResult<Handle> {
    quorumlock::runtime::handle().or_raise()
}

/// Our runtime as seen by `pyo3_async_runtimes::generic`.
pub(crate) struct EngineRuntime;

fn spawn_handle() -> Handle {
    // `handle()` only fails when no thread can be started; every caller has already obtained
    // it once in this process, so the fallback (the runtime we run on) is never reached in
    // practice.
    quorumlock::runtime::handle().unwrap_or_else(|_| Handle::current())
}

impl Runtime for EngineRuntime {
    type JoinError = tokio::task::JoinError;
    type JoinHandle = JoinHandle<()>;

    fn spawn<F>(fut: F) -> Self::JoinHandle
    where
        F: Future<Output = ()> + Send + 'static,
    {
        spawn_handle().spawn(fut)
    }

    fn spawn_blocking<F>(f: F) -> Self::JoinHandle
    where
        F: FnOnce() + Send + 'static,
    {
        spawn_handle().spawn_blocking(f)
    }
}

impl ContextExt for EngineRuntime {
    fn scope<F, R>(locals: TaskLocals, fut: F) -> Pin<Box<dyn Future<Output = R> + Send>>
    where
        F: Future<Output = R> + Send + 'static,
    {
        let cell = OnceCell::new();
        let _ = cell.set(locals);
        Box::pin(TASK_LOCALS.scope(cell, fut))
    }

    fn get_task_locals() -> Option<TaskLocals> {
        TASK_LOCALS
            .try_with(|c| c.get().cloned())
            .unwrap_or_default()
    }
}
