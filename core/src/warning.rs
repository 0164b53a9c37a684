//! Warnings: conditions that fail no operation but that a user should know about, such as a
//! node counted although a restart would lose its locks. Each is logged once per node as a
//! `tracing` warning and passed to the hook set with [`crate::ClientBuilder::on_warning`]
//! (the Python and Node packages forward it to `logging` and `process.emitWarning`).

use std::collections::HashSet;
use std::fmt;
use std::sync::{Arc, Mutex};

pub use quorumlock_proto::warning::{Warning, WarningKind};

/// The function a client calls with each warning.
pub type WarningHook = Arc<dyn Fn(&Warning) + Send + Sync>;

/// Emits each kind of warning once per node (once per client for warnings about no node).
#[derive(Default)]
pub(crate) struct Warner {
    hook: Option<WarningHook>,
    seen: Mutex<HashSet<(WarningKind, Option<usize>)>>,
}

impl Warner {
    pub(crate) fn new(hook: Option<WarningHook>) -> Self {
        Self {
            hook,
            seen: Mutex::default(),
        }
    }

    /// Logs `w` and calls the hook, unless this kind was already reported for this node.
    pub(crate) fn warn(&self, w: Warning) {
        let first = self
            .seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert((w.kind(), w.node()));
        if !first {
            return;
        }
        tracing::warn!(target: "quorumlock", code = w.kind().as_str(), "{w}");
        if let Some(hook) = &self.hook {
            // A panicking hook must not take a connection task down with it.
            let call = std::panic::AssertUnwindSafe(|| hook(&w));
            if std::panic::catch_unwind(call).is_err() {
                tracing::error!(target: "quorumlock", "the warning hook panicked");
            }
        }
    }
}

impl fmt::Debug for Warner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Warner")
            .field("hook", &self.hook.is_some())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn once_per_kind_and_node() {
        let calls = Arc::new(AtomicUsize::new(0));
        let c = calls.clone();
        let w = Warner::new(Some(Arc::new(move |_: &Warning| {
            c.fetch_add(1, Ordering::Relaxed);
        })));
        let not_durable = |i| Warning::new(WarningKind::NotDurable, Some((i, "h:1/0")), "x");
        w.warn(not_durable(0));
        w.warn(not_durable(0));
        w.warn(not_durable(1));
        w.warn(Warning::new(
            WarningKind::InfoRefused,
            Some((0, "h:1/0")),
            "y",
        ));
        assert_eq!(calls.load(Ordering::Relaxed), 3);
    }

    #[test]
    fn a_panicking_hook_is_contained() {
        let w = Warner::new(Some(Arc::new(|_: &Warning| panic!("hook"))));
        w.warn(Warning::new(WarningKind::DuplicateNode, None, "z"));
    }
}
