//! Engine warnings to Python `logging`: each one becomes a record of the `quorumlock`
//! logger, with `code`, `node` and `address` as record attributes.

use pyo3::prelude::*;
use pyo3::types::PyDict;
use quorumlock::Warning;

/// The `on_warning` hook: the engine calls it on a runtime thread, which must not wait for
/// the GIL, so the record is logged from a blocking-pool thread. Nothing is logged during
/// interpreter shutdown; a failing `logging` call is reported as unraisable.
pub(crate) fn forward(w: &Warning) {
    let w = w.clone();
    if let Ok(handle) = quorumlock::runtime::handle() {
        handle.spawn_blocking(move || {
            Python::try_attach(|py| {
                if let Err(e) = log(py, &w) {
                    e.write_unraisable(py, None);
                }
            })
        });
    }
}

fn log(py: Python<'_>, w: &Warning) -> PyResult<()> {
    let extra = PyDict::new(py);
    extra.set_item("code", w.kind().as_str())?;
    extra.set_item("node", w.node())?;
    extra.set_item("address", w.address())?;
    let kwargs = PyDict::new(py);
    kwargs.set_item("extra", extra)?;
    py.import("logging")?
        .call_method1("getLogger", ("quorumlock",))?
        .call_method("warning", ("%s", w.to_string()), Some(&kwargs))?;
    Ok(())
}
