//! Warnings: conditions that fail no operation but that a user should know about, such as a
//! node counted although a restart would lose its locks. Each is logged once per node as a
//! `tracing` warning and passed to the hook set with [`crate::ClientBuilder::on_warning`]
//! (the Python and Node packages forward it to `logging` and `process.emitWarning`).

use std::collections::HashSet;
use std::fmt;
use std::sync::{Arc, Mutex};

/// What a [`Warning`] is about. Names are stable across languages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WarningKind {
    /// A node without durable writes is counted (the restart quarantine is off or did not
    /// apply): if it restarts, the locks it held are gone and another client can take them.
    NotDurable,
    /// One server was configured twice; it counts once.
    DuplicateNode,
    /// `INFO` is refused by the node's ACL: the restart quarantine cannot see restarts.
    InfoRefused,
    /// The node's eviction policy can remove lock keys (with `EvictionCheck::Warn`).
    EvictionPolicy,
    /// Release notification is denied by the node's ACL; waiters poll it.
    NotifyDenied,
}

impl WarningKind {
    /// Every kind.
    pub const ALL: &'static [WarningKind] = &[
        Self::NotDurable,
        Self::DuplicateNode,
        Self::InfoRefused,
        Self::EvictionPolicy,
        Self::NotifyDenied,
    ];

    /// The stable code, e.g. `"QL_W_NOT_DURABLE"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::NotDurable => "QL_W_NOT_DURABLE",
            Self::DuplicateNode => "QL_W_DUPLICATE_NODE",
            Self::InfoRefused => "QL_W_INFO_REFUSED",
            Self::EvictionPolicy => "QL_W_EVICTION_POLICY",
            Self::NotifyDenied => "QL_W_NOTIFY_DENIED",
        }
    }
}

impl fmt::Display for WarningKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One warning: its kind, the node it is about (index and address, never credentials) and a
/// message that says what to do about it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning {
    kind: WarningKind,
    node: Option<(usize, String)>,
    message: String,
}

impl Warning {
    pub(crate) fn new(
        kind: WarningKind,
        node: Option<(usize, &str)>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            kind,
            node: node.map(|(i, a)| (i, a.to_owned())),
            message: message.into(),
        }
    }

    /// What the warning is about.
    pub fn kind(&self) -> WarningKind {
        self.kind
    }
    /// The index of the node in the client's list, if it is about one node.
    pub fn node(&self) -> Option<usize> {
        self.node.as_ref().map(|(i, _)| *i)
    }
    /// The node's address (`host:port/db`), if it is about one node.
    pub fn address(&self) -> Option<&str> {
        self.node.as_ref().map(|(_, a)| a.as_str())
    }
    /// What happened and what to do about it.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.node {
            Some((i, a)) => write!(f, "{}: node #{i} ({a}): {}", self.kind, self.message),
            None => write!(f, "{}: {}", self.kind, self.message),
        }
    }
}

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
            .insert((w.kind, w.node()));
        if !first {
            return;
        }
        tracing::warn!(target: "quorumlock", code = w.kind.as_str(), "{w}");
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

    #[test]
    fn codes_are_distinct() {
        let mut codes: Vec<&str> = WarningKind::ALL.iter().map(|k| k.as_str()).collect();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), WarningKind::ALL.len());
    }
}
