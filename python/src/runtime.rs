//! The shared, fork-aware runtime of core: blocking calls drive their futures on it from
//! the caller's thread, asyncio awaitables run theirs as its tasks.

use pyo3::PyResult;
use tokio::runtime::Handle;

use crate::error::ResultExt;

/// The runtime handle for this process (created again in a child after `fork()`).
pub(crate) fn handle() -> PyResult<Handle> {
    quorumlock::runtime::handle().or_raise()
}
