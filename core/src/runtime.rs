//! The shared tokio runtime for blocking callers and bindings: one per process, created on
//! first use and created anew in a child process after `fork()` (the parent's worker
//! threads do not exist there).

use std::sync::{Mutex, PoisonError};

use tokio::runtime::{Builder, Handle, Runtime};

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
        crate::timer::after_fork();
    }
    Ok(handle)
}
