//! Warnings: conditions that fail no operation but that a user should know about, such as a
//! node counted although a restart would lose its locks (REDLOCK.md §8). The protocol says
//! when one is due; the driver delivers it (once per kind and node).

use std::fmt;

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
    #[doc(hidden)]
    pub fn new(kind: WarningKind, node: Option<(usize, &str)>, message: impl Into<String>) -> Self {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_distinct() {
        let mut codes: Vec<&str> = WarningKind::ALL.iter().map(|k| k.as_str()).collect();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), WarningKind::ALL.len());
    }
}
