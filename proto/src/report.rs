//! Per-node reports: one entry per configured node, for results and errors alike.

use std::fmt;
use std::time::Duration;

/// What happened on one node during one operation.
///
/// Kinds have stable names ([`NodeKind::as_str`]) and numbers (`QL_NODE_*` in C), and fall into
/// [`NodeCategory`]s. New kinds may be added, so matches need a fallback arm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[repr(u32)]
pub enum NodeKind {
    /// Vote for: the key was written (acquire) or lengthened (extend).
    Ok = 0,
    /// Another value holds the key.
    HeldByOther = 1,
    /// The key is absent (expired, released, or never written).
    NotHeld = 2,
    /// Release deleted our key(s).
    Released = 3,
    /// Release of a multi-resource lock deleted only some of its keys.
    Partial = 4,
    /// No reply within `node_timeout`.
    Timeout = 5,
    /// The TCP connection was refused.
    ConnectionRefused = 6,
    /// The connection broke during the request.
    ConnectionLost = 7,
    /// No connection yet; a reconnect is pending in the background.
    NotConnected = 8,
    /// TLS handshake or certificate failure.
    Tls = 9,
    /// `NOAUTH` or `WRONGPASS`: the credentials were refused.
    Auth = 10,
    /// `NOPERM`: the ACL lacks a command, key pattern or channel.
    NoPermission = 11,
    /// An error raised inside a script, or a script still missing after the `EVAL` fallback.
    Script = 12,
    /// `OOM`: the node is full under `noeviction`.
    OutOfMemory = 13,
    /// The node's eviction policy can remove lock keys.
    EvictionPolicy = 14,
    /// Another configured entry points at the same server.
    Duplicate = 15,
    /// `READONLY`: the node is a replica.
    ReadOnly = 16,
    /// `LOADING`: the node is still reading its data set.
    Loading = 17,
    /// `BUSY`: another script is running on the node.
    ServerBusy = 18,
    /// `MOVED`, `ASK`, `CROSSSLOT` or `cluster_enabled:1` on a plain member: one node of a
    /// Redis Cluster, which must be given as a whole (`redis+cluster://`); on a cluster member,
    /// a fenced lock whose counter would live in another hash slot.
    ClusterUnsupported = 19,
    /// `WRONGTYPE`: a foreign key uses our name.
    WrongType = 20,
    /// The node restarted recently without durable writes and is not counted yet.
    Quarantined = 21,
    /// A reply of unexpected shape.
    Protocol = 22,
    /// Any other error reply; [`NodeResult::detail`] has the server's text.
    Other = 23,
    /// No reply had arrived when the operation was decided (success decided at quorum); the
    /// request was still in flight and its reply was not awaited.
    Pending = 24,
}

/// Coarse grouping of [`NodeKind`]s.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum NodeCategory {
    /// A vote or an operation result: the node answered as designed.
    Vote,
    /// No reply in time.
    Timeout,
    /// Socket-level failures.
    Connection,
    /// Credentials or ACL refused.
    Auth,
    /// Scripting failures.
    Script,
    /// Node settings that make it unsafe or unusable as a lock node.
    Misconfigured,
    /// The node is in its restart quarantine.
    Quarantined,
    /// Other server-side errors.
    Server,
}

impl NodeKind {
    /// Every kind, in numeric order.
    pub const ALL: &'static [NodeKind] = &[
        Self::Ok,
        Self::HeldByOther,
        Self::NotHeld,
        Self::Released,
        Self::Partial,
        Self::Timeout,
        Self::ConnectionRefused,
        Self::ConnectionLost,
        Self::NotConnected,
        Self::Tls,
        Self::Auth,
        Self::NoPermission,
        Self::Script,
        Self::OutOfMemory,
        Self::EvictionPolicy,
        Self::Duplicate,
        Self::ReadOnly,
        Self::Loading,
        Self::ServerBusy,
        Self::ClusterUnsupported,
        Self::WrongType,
        Self::Quarantined,
        Self::Protocol,
        Self::Other,
        Self::Pending,
    ];

    /// The stable name, e.g. `"HeldByOther"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "Ok",
            Self::HeldByOther => "HeldByOther",
            Self::NotHeld => "NotHeld",
            Self::Released => "Released",
            Self::Partial => "Partial",
            Self::Timeout => "Timeout",
            Self::ConnectionRefused => "ConnectionRefused",
            Self::ConnectionLost => "ConnectionLost",
            Self::NotConnected => "NotConnected",
            Self::Tls => "Tls",
            Self::Auth => "Auth",
            Self::NoPermission => "NoPermission",
            Self::Script => "Script",
            Self::OutOfMemory => "OutOfMemory",
            Self::EvictionPolicy => "EvictionPolicy",
            Self::Duplicate => "Duplicate",
            Self::ReadOnly => "ReadOnly",
            Self::Loading => "Loading",
            Self::ServerBusy => "ServerBusy",
            Self::ClusterUnsupported => "ClusterUnsupported",
            Self::WrongType => "WrongType",
            Self::Quarantined => "Quarantined",
            Self::Protocol => "Protocol",
            Self::Other => "Other",
            Self::Pending => "Pending",
        }
    }

    /// The stable number (`QL_NODE_*` in C).
    pub const fn code(self) -> u32 {
        self as u32
    }

    /// The category this kind belongs to.
    pub const fn category(self) -> NodeCategory {
        match self {
            Self::Ok
            | Self::HeldByOther
            | Self::NotHeld
            | Self::Released
            | Self::Partial
            | Self::Pending => NodeCategory::Vote,
            Self::Timeout => NodeCategory::Timeout,
            Self::ConnectionRefused | Self::ConnectionLost | Self::NotConnected | Self::Tls => {
                NodeCategory::Connection
            }
            Self::Auth | Self::NoPermission => NodeCategory::Auth,
            Self::Script => NodeCategory::Script,
            Self::EvictionPolicy
            | Self::Duplicate
            | Self::ReadOnly
            | Self::ClusterUnsupported
            | Self::WrongType => NodeCategory::Misconfigured,
            Self::Quarantined => NodeCategory::Quarantined,
            Self::OutOfMemory | Self::Loading | Self::ServerBusy | Self::Protocol | Self::Other => {
                NodeCategory::Server
            }
        }
    }

    /// True for kinds that are node errors rather than answers (everything outside
    /// [`NodeCategory::Vote`]).
    pub const fn is_error(self) -> bool {
        !matches!(self.category(), NodeCategory::Vote)
    }
}

impl fmt::Display for NodeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl NodeCategory {
    /// Every category.
    pub const ALL: &'static [NodeCategory] = &[
        Self::Vote,
        Self::Timeout,
        Self::Connection,
        Self::Auth,
        Self::Script,
        Self::Misconfigured,
        Self::Quarantined,
        Self::Server,
    ];

    /// The stable name, e.g. `"Vote"` (Node's `category` of a report entry).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Vote => "Vote",
            Self::Timeout => "Timeout",
            Self::Connection => "Connection",
            Self::Auth => "Auth",
            Self::Script => "Script",
            Self::Misconfigured => "Misconfigured",
            Self::Quarantined => "Quarantined",
            Self::Server => "Server",
        }
    }
}

impl fmt::Display for NodeCategory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The outcome of one operation on one node.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct NodeResult {
    /// 0-based index in configuration order.
    pub index: usize,
    /// `host:port/db` (or `unix:path/db`), never with credentials.
    pub address: String,
    /// Time from sending to the reply, when a reply came.
    pub latency: Option<Duration>,
    /// What happened.
    pub kind: NodeKind,
    /// The server's or the socket's text for error kinds.
    pub detail: Option<String>,
}

impl NodeResult {
    /// The result of node `index` at `address`: `kind`, with the reply's latency and the
    /// error text, if any.
    pub fn new(
        index: usize,
        address: impl Into<String>,
        kind: NodeKind,
        latency: Option<Duration>,
        detail: Option<String>,
    ) -> Self {
        Self {
            index,
            address: address.into(),
            latency,
            kind,
            detail,
        }
    }
}

/// One [`NodeResult`] per configured node, in configuration order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    nodes: Vec<NodeResult>,
}

impl Report {
    /// A report of one entry per node, in node order.
    pub fn new(nodes: Vec<NodeResult>) -> Self {
        Self { nodes }
    }

    /// The entries, in configuration order.
    pub fn nodes(&self) -> &[NodeResult] {
        &self.nodes
    }

    /// How many nodes ended in `kind`.
    pub fn count(&self, kind: NodeKind) -> usize {
        self.nodes.iter().filter(|n| n.kind == kind).count()
    }

    /// How many nodes released our keys (release reports).
    pub fn released_count(&self) -> usize {
        self.count(NodeKind::Released)
    }

    /// True when at least a quorum of nodes released our keys, i.e. the lock was still held
    /// by a quorum when it was released.
    pub fn was_held_by_quorum(&self) -> bool {
        self.released_count() >= crate::quorum::quorum(self.nodes.len())
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, n) in self.nodes.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "#{} {}: {}", n.index, n.address, n.kind)?;
            if let Some(d) = &n.detail {
                write!(f, " ({d})")?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_and_categories_have_distinct_stable_names() {
        let mut names: Vec<&str> = NodeKind::ALL.iter().map(|k| k.as_str()).collect();
        let codes: Vec<u32> = NodeKind::ALL.iter().map(|k| k.code()).collect();
        assert_eq!(codes, (0..=24).collect::<Vec<_>>());
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), NodeKind::ALL.len());
        for &k in NodeKind::ALL {
            assert!(NodeCategory::ALL.contains(&k.category()), "{k}");
        }
        let mut categories: Vec<&str> = NodeCategory::ALL.iter().map(|c| c.as_str()).collect();
        categories.sort_unstable();
        categories.dedup();
        assert_eq!(categories.len(), NodeCategory::ALL.len());
        assert_eq!(NodeCategory::Vote.to_string(), "Vote");
    }
}
