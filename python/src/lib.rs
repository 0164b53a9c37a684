//! Python bindings for quorumlock: the native module `quorumlock._quorumlock`. It converts
//! arguments, results and errors; every lock decision is made by the engine in `core/`.
#![forbid(unsafe_code)]

mod admin;
mod aio;
mod client;
mod error;
mod lock;
mod metrics;
mod options;
mod runtime;
mod stages;
mod wait;
mod warning;

use pyo3::prelude::*;

/// Rebuilds the shared runtime in a child process right after `fork()` (registered with
/// `os.register_at_fork`; that also clears the engine's polling slot); every call also
/// checks the process id.
#[pyfunction]
fn after_fork_in_child() -> PyResult<()> {
    runtime::handle().map(|_| ())
}

/// The native module.
#[pymodule(gil_used = false)]
mod _quorumlock {
    #[pymodule_export]
    use super::admin::{Holding, Inspection, NodeInfo};
    #[pymodule_export]
    use super::after_fork_in_child;
    #[pymodule_export]
    use super::aio::{Canceller, Completions};
    #[pymodule_export]
    use super::client::Client;
    #[pymodule_export]
    use super::error::{NodeResult, error_for_kind, error_kinds};
    #[pymodule_export]
    use super::lock::Lock;
    #[pymodule_export]
    use super::metrics::{Histogram, Metrics, NodeMetrics, OpMetrics};

    use pyo3::prelude::*;

    #[pymodule_init]
    fn init(m: &Bound<'_, PyModule>) -> PyResult<()> {
        #[cfg(feature = "stages")]
        m.add_function(pyo3::wrap_pyfunction!(super::stages::stage_marks, m)?)?;
        m.add("__version__", env!("CARGO_PKG_VERSION"))?;
        m.add("FENCE_CHECK_SCRIPT", quorumlock::FENCE_CHECK_SCRIPT)?;
        // Seconds; the float is a hair below the limit, so it converts back within it.
        m.add("MAX_TTL_LIMIT", quorumlock::MAX_TTL_LIMIT.as_secs_f64())
    }
}
