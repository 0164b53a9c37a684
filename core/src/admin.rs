//! Administration: ping every node (latency, uptime, persistence and eviction settings),
//! inspect who holds a resource, and break a lock by force. Used by the CLI and by
//! operators; lock operations never go through here.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::join_all;

use crate::client::{Client, connect_error};
use crate::clock::MonoTime;
use crate::error::{Error, Result};
use crate::node::probe::{parse_config, parse_info, reply_text};
use crate::node::{Node, NodeFailure, Traffic};
use crate::report::{NodeKind, NodeResult, Report};

/// What one node says about itself; see [`Client::ping`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct NodeInfo {
    /// 0-based index in configuration order.
    pub index: usize,
    /// `host:port/db`, never with credentials.
    pub address: String,
    /// `Ok`, or the error kind that made the node unusable.
    pub kind: Option<NodeKind>,
    /// Error text, when `kind` is an error.
    pub detail: Option<String>,
    /// Round trip of a `PING`.
    pub latency: Option<Duration>,
    /// `redis_version` (Valkey reports a compatible one).
    pub version: Option<String>,
    /// `run_id`: changes on every restart.
    pub run_id: Option<String>,
    /// Time since the server started.
    pub uptime: Option<Duration>,
    /// `master` or `slave`.
    pub role: Option<String>,
    /// `maxmemory` in bytes (0 = unlimited).
    pub maxmemory: Option<u64>,
    /// `maxmemory-policy`.
    pub maxmemory_policy: Option<String>,
    /// `appendonly`, `appendfsync`, `no-appendfsync-on-rewrite` from `CONFIG GET`; `None`
    /// when `CONFIG` is refused (the node then counts as not durable).
    pub persistence: Option<(bool, String, bool)>,
    /// Problems an operator should fix, in plain words.
    pub warnings: Vec<String>,
}

impl NodeInfo {
    /// `appendonly yes`, `appendfsync always`, `no-appendfsync-on-rewrite no`: every
    /// acknowledged write is on disk, so the node may serve again at once after a restart.
    pub fn durable(&self) -> bool {
        matches!(&self.persistence, Some((true, fsync, false)) if fsync == "always")
    }
}

/// One node's view of a resource; see [`Client::inspect`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Holding {
    /// 0-based index in configuration order.
    pub index: usize,
    /// `host:port/db`.
    pub address: String,
    /// `Ok` when the node answered, else the error kind.
    pub kind: NodeKind,
    /// Error text for error kinds.
    pub detail: Option<String>,
    /// The lock value stored there, if any.
    pub value: Option<String>,
    /// Time to live left there, if the key exists.
    pub ttl: Option<Duration>,
}

/// Every node's view of a resource.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Inspection {
    /// One entry per node, in configuration order.
    pub nodes: Vec<Holding>,
    /// The quorum of the client.
    pub quorum: usize,
}

impl Inspection {
    /// The value held on at least a quorum of nodes, if any: that owner holds the lock.
    pub fn holder(&self) -> Option<&str> {
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for v in self.nodes.iter().filter_map(|n| n.value.as_deref()) {
            *counts.entry(v).or_default() += 1;
        }
        counts
            .into_iter()
            .find(|(_, c)| *c >= self.quorum)
            .map(|(v, _)| v)
    }
}

async fn per_node<T, F, Fut>(
    nodes: &[Arc<Node>],
    timeout: Duration,
    f: F,
) -> Vec<(Option<Duration>, Result<T, NodeFailure>)>
where
    F: Fn(Arc<Node>) -> Fut,
    Fut: Future<Output = Result<T, NodeFailure>>,
{
    join_all(nodes.iter().map(|n| {
        let fut = f(n.clone());
        async move {
            let t0 = MonoTime::now();
            match tokio::time::timeout(timeout, fut).await {
                Ok(r) => (Some(MonoTime::now() - t0), r),
                Err(_) => (
                    None,
                    Err((NodeKind::Timeout, format!("no reply within {timeout:?}"))),
                ),
            }
        }
    }))
    .await
}

async fn describe(node: Arc<Node>) -> Result<NodeInfo, NodeFailure> {
    let t0 = MonoTime::now();
    node.send(&redis::cmd("PING"), Traffic::Any).await?;
    let latency = MonoTime::now() - t0;
    let info_reply = node.send(&redis::cmd("INFO"), Traffic::Any).await?;
    let info = parse_info(&reply_text(&info_reply).unwrap_or_default());
    let config = async |pattern: &str| {
        let mut c = redis::cmd("CONFIG");
        c.arg("GET").arg(pattern);
        node.send(&c, Traffic::Any)
            .await
            .ok()
            .map(|v| parse_config(&v))
    };
    let append = config("append*").await;
    let rewrite = config("no-appendfsync-on-rewrite").await;
    let yes = |m: &HashMap<String, String>, k: &str| m.get(k).is_some_and(|v| v == "yes");
    let persistence = append.zip(rewrite).map(|(a, r)| {
        (
            yes(&a, "appendonly"),
            a.get("appendfsync").cloned().unwrap_or_default(),
            yes(&r, "no-appendfsync-on-rewrite"),
        )
    });
    let mut n = NodeInfo {
        index: node.index,
        address: node.address.clone(),
        kind: Some(NodeKind::Ok),
        latency: Some(latency),
        version: info.get("redis_version").cloned(),
        run_id: info.get("run_id").cloned(),
        uptime: info
            .get("uptime_in_seconds")
            .and_then(|s| s.parse().ok())
            .map(Duration::from_secs),
        role: info.get("role").cloned(),
        maxmemory: info.get("maxmemory").and_then(|s| s.parse().ok()),
        maxmemory_policy: info.get("maxmemory_policy").cloned(),
        persistence,
        ..NodeInfo::default()
    };
    // A cluster member's INFO is its first primary's; one node of a cluster alone is wrong.
    let lone_cluster_node =
        !node.is_cluster() && info.get("cluster_enabled").is_some_and(|v| v == "1");
    n.warnings = warnings(&n, lone_cluster_node);
    Ok(n)
}

fn warnings(n: &NodeInfo, cluster: bool) -> Vec<String> {
    let mut w = Vec::new();
    if n.role.as_deref() == Some("slave") {
        w.push("the node is a replica; lock nodes must be independent masters".to_owned());
    }
    if cluster {
        w.push(
            "cluster mode is enabled: list the whole cluster as one member, redis+cluster://host:port,host:port,..."
                .to_owned(),
        );
    }
    if n.maxmemory.unwrap_or(0) > 0 && n.maxmemory_policy.as_deref() != Some("noeviction") {
        w.push(format!(
            "maxmemory-policy {} can evict lock keys; set noeviction",
            n.maxmemory_policy.as_deref().unwrap_or("?")
        ));
    }
    match &n.persistence {
        None => w.push("CONFIG GET is refused; the node counts as not durable".to_owned()),
        Some(_) if !n.durable() => w.push(
            "writes are not durable (appendonly yes + appendfsync always needed); after a crash, keep the node out for max_ttl + 5 s".to_owned(),
        ),
        Some(_) => {}
    }
    w
}

impl Client {
    /// Pings every node and reads its settings (latency, version, uptime, role, eviction
    /// policy, persistence), with plain-words warnings. Bounded by the connect timeout.
    ///
    /// # Errors
    /// When fewer than a quorum of nodes answer: `Connection`, `Auth`, `Timeout`, ... (the
    /// stage that failed on most nodes), with the per-node report.
    pub async fn ping(&self) -> Result<Vec<NodeInfo>> {
        self.inner.check_process()?;
        let results = per_node(&self.inner.nodes, Duration::from_secs(2), describe).await;
        let mut infos = Vec::with_capacity(results.len());
        for ((_, r), node) in results.into_iter().zip(&self.inner.nodes) {
            infos.push(r.unwrap_or_else(|(kind, text)| NodeInfo {
                index: node.index,
                address: node.address.clone(),
                kind: Some(kind),
                detail: Some(text),
                ..NodeInfo::default()
            }));
        }
        let usable = infos
            .iter()
            .filter(|i| i.kind == Some(NodeKind::Ok))
            .count();
        if usable < self.quorum() {
            let report = Report::new(
                infos
                    .iter()
                    .map(|i| NodeResult {
                        index: i.index,
                        address: i.address.clone(),
                        latency: i.latency,
                        kind: i.kind.unwrap_or(NodeKind::Other),
                        detail: i.detail.clone(),
                    })
                    .collect(),
            );
            return Err(connect_error(&report, self.quorum()));
        }
        Ok(infos)
    }

    /// Reads a resource's key on every node: the value held there and its TTL.
    /// Bounded by the default node timeout (at least 1 s).
    ///
    /// # Errors
    /// `InvalidArgument` for an empty or too long resource name.
    pub async fn inspect(&self, resource: impl AsRef<[u8]>) -> Result<Inspection> {
        self.inner.check_process()?;
        let [resource] = <[Vec<u8>; 1]>::try_from(crate::config::normalize_resources([resource])?)
            .map_err(|_| Error::invalid("exactly one resource"))?;
        let key = self.inner.key(&resource);
        let results = per_node(&self.inner.nodes, self.admin_timeout(), |node| {
            let key = key.clone();
            async move {
                let mut get = redis::cmd("GET");
                get.arg(&key);
                let mut pttl = redis::cmd("PTTL");
                pttl.arg(&key);
                let value = reply_text(&node.send(&get, Traffic::Any).await?);
                let ttl = match node.send(&pttl, Traffic::Any).await? {
                    redis::Value::Int(ms) if ms >= 0 => {
                        u64::try_from(ms).ok().map(Duration::from_millis)
                    }
                    _ => None,
                };
                Ok((value, ttl))
            }
        })
        .await;
        let nodes = results
            .into_iter()
            .zip(&self.inner.nodes)
            .map(|((_, r), node)| {
                let (kind, detail, value, ttl) = match r {
                    Ok((value, ttl)) => (NodeKind::Ok, None, value, ttl),
                    Err((kind, text)) => (kind, Some(text), None, None),
                };
                Holding {
                    index: node.index,
                    address: node.address.clone(),
                    kind,
                    detail,
                    value,
                    ttl,
                }
            })
            .collect();
        Ok(Inspection {
            nodes,
            quorum: self.quorum(),
        })
    }

    /// Deletes a resource's key on every node **without an owner check**, whoever holds
    /// it. For operators only: the holder is not told and may still act until its
    /// validity ends. The report says `Released` where a key was deleted, `NotHeld`
    /// elsewhere.
    ///
    /// # Errors
    /// `InvalidArgument` for an empty or too long resource name.
    pub async fn force_break(&self, resource: impl AsRef<[u8]>) -> Result<Report> {
        self.inner.check_process()?;
        let resources = crate::config::normalize_resources([resource])?;
        let keys: Vec<Vec<u8>> = resources.iter().map(|r| self.inner.key(r)).collect();
        let results = per_node(&self.inner.nodes, self.admin_timeout(), |node| {
            let keys = keys.clone();
            async move {
                let mut del = redis::cmd("DEL");
                del.arg(keys);
                match node.send(&del, Traffic::Any).await? {
                    redis::Value::Int(n) if n > 0 => Ok(NodeKind::Released),
                    _ => Ok(NodeKind::NotHeld),
                }
            }
        })
        .await;
        Ok(Report::new(
            results
                .into_iter()
                .zip(&self.inner.nodes)
                .map(|((latency, r), node)| {
                    let (kind, detail) = match r {
                        Ok(k) => (k, None),
                        Err((k, t)) => (k, Some(t)),
                    };
                    NodeResult {
                        index: node.index,
                        address: node.address.clone(),
                        latency,
                        kind,
                        detail,
                    }
                })
                .collect(),
        ))
    }

    fn admin_timeout(&self) -> Duration {
        let d = &self.inner.defaults;
        d.effective_node_timeout(d.ttl).max(Duration::from_secs(1))
    }
}
