//! Reading a node's own description on every new connection: `INFO` fields and the
//! persistence settings from `CONFIG GET`, and what they mean for lock traffic: the restart
//! quarantine, the eviction check, replicas and cluster nodes (REDLOCK.md §8).

use std::collections::HashMap;
use std::time::Duration;

use redis::{RedisResult, Value};

use crate::clock::MonoTime;
use crate::config::{EvictionCheck, Quarantine};
use crate::report::NodeKind;
use crate::warning::{Warner, Warning, WarningKind};

use super::NodeFailure;
use super::target::Conn;

/// The client-wide settings the probe applies.
#[derive(Debug)]
pub(crate) struct Checks {
    pub(crate) connect_timeout: Duration,
    pub(crate) quarantine: Quarantine,
    /// `Qp = max_ttl + quarantine_margin`.
    pub(crate) quarantine_period: Duration,
    pub(crate) eviction: EvictionCheck,
    /// How old a connection's probe may get before it is re-run.
    pub(crate) reprobe_every: Duration,
    /// Where warnings about nodes go.
    pub(crate) warner: Warner,
}

/// What the probe found on one connection.
#[derive(Debug)]
pub(crate) struct Probe {
    /// The run ids of the member's servers (one, or one per primary of a cluster).
    pub(crate) run_ids: Vec<String>,
    pub(crate) uptime: Duration,
    /// Lock traffic waits until then (restart quarantine).
    pub(crate) ready_at: MonoTime,
    /// Why the node must never carry lock traffic on this connection, if so.
    pub(crate) unusable: Option<NodeFailure>,
    /// `INFO` was refused while the quarantine is on: fenced locks skip the node.
    pub(crate) uptime_unknown: bool,
}

/// Reads `INFO` and the persistence settings of the member's servers (the master, or every
/// primary of a cluster) and decides how the member may be used: a cluster member counts
/// only when each of its primaries would. Connection errors fail the probe (and so the
/// connect); refusals by ACL do not. `node` is the member's index and address, for
/// warnings. The settings are read even with every check off: they name the servers
/// (duplicates) and tell whether they write durably.
pub(crate) async fn probe(
    conn: &mut Conn,
    checks: &Checks,
    node: (usize, &str),
) -> RedisResult<Probe> {
    let now = MonoTime::now();
    let cluster = matches!(conn, Conn::Cluster(_));
    let infos = conn.send_to_primaries(&redis::cmd("INFO")).await?;
    let mut configs: HashMap<String, HashMap<String, String>> = HashMap::new();
    for pattern in ["append*", "no-appendfsync-on-rewrite"] {
        let mut c = redis::cmd("CONFIG");
        c.arg("GET").arg(pattern);
        for (server, r) in conn.send_to_primaries(&c).await? {
            match r {
                Ok(v) => configs.entry(server).or_default().extend(parse_config(&v)),
                Err(e) if e.is_io_error() || e.is_unrecoverable_error() => return Err(e),
                Err(_) => tracing::debug!("CONFIG GET is refused; the node counts as not durable"),
            }
        }
    }
    let mut probe = Probe {
        run_ids: Vec::new(),
        uptime: Duration::MAX,
        ready_at: now,
        unusable: None,
        uptime_unknown: false,
    };
    for (server, info) in infos {
        let info = match info {
            Ok(v) => Some(parse_info(&reply_text(&v).unwrap_or_default())),
            Err(e) if e.is_io_error() || e.is_unrecoverable_error() => return Err(e),
            Err(e) => {
                checks.warner.warn(Warning::new(
                    WarningKind::InfoRefused,
                    Some(node),
                    format!("INFO is refused{} ({e}); the restart quarantine cannot see restarts of this node, and one server listed twice cannot be told apart; allow INFO (+info) for the lock user", on(&server)),
                ));
                None
            }
        };
        let config = configs.remove(&server).unwrap_or_default();
        let one = Facts {
            info: info.as_ref(),
            config: &config,
            server: &server,
            cluster,
        };
        one.apply(&mut probe, checks, node, now);
    }
    if probe.uptime == Duration::MAX {
        probe.uptime = Duration::ZERO;
    }
    Ok(probe)
}

/// " on <server>" for a cluster's primary; nothing for a single master.
fn on(server: &str) -> String {
    if server.is_empty() {
        String::new()
    } else {
        format!(" on primary {server}")
    }
}

/// What one server (a master, or a cluster's primary) said about itself.
struct Facts<'a> {
    info: Option<&'a HashMap<String, String>>,
    config: &'a HashMap<String, String>,
    server: &'a str,
    cluster: bool,
}

impl Facts<'_> {
    /// Folds this server into the member's probe: the member waits for its slowest server's
    /// quarantine and is unusable when any server is.
    fn apply(&self, probe: &mut Probe, checks: &Checks, node: (usize, &str), now: MonoTime) {
        let Some(info) = self.info else {
            probe.uptime_unknown |= checks.quarantine != Quarantine::Off;
            if checks.quarantine == Quarantine::Strict && probe.unusable.is_none() {
                probe.unusable = Some((
                    NodeKind::NoPermission,
                    format!(
                        "INFO is refused{} and quarantine is strict; the node is never counted",
                        on(self.server)
                    ),
                ));
            }
            return;
        };
        probe.run_ids.extend(info.get("run_id").cloned());
        let uptime = info
            .get("uptime_in_seconds")
            .and_then(|s| s.parse().ok())
            .map_or(Duration::ZERO, Duration::from_secs);
        probe.uptime = probe.uptime.min(uptime);
        if probe.unusable.is_none() {
            probe.unusable = misconfiguration(info, checks, node, self.cluster)
                .map(|(kind, text)| (kind, format!("{text}{}", on(self.server))));
        }
        let durable = self.config.get("appendonly").is_some_and(|v| v == "yes")
            && self
                .config
                .get("appendfsync")
                .is_some_and(|v| v == "always")
            && self
                .config
                .get("no-appendfsync-on-rewrite")
                .is_some_and(|v| v == "no");
        if checks.quarantine != Quarantine::Off && !durable {
            // uptime is rounded down, so the wait is conservative.
            let ready_at = now + checks.quarantine_period.saturating_sub(uptime);
            probe.ready_at = probe.ready_at.max(ready_at);
        }
        if checks.quarantine == Quarantine::Off && !durable && probe.unusable.is_none() {
            checks.warner.warn(Warning::new(
                WarningKind::NotDurable,
                Some(node),
                format!(
                    "counted without durable writes{} (up {} s) because the restart quarantine is off: if it restarts, the locks it held are gone and another client can take them while their holders still act; set `appendonly yes` and `appendfsync always`, or turn the quarantine on (quarantine=on)",
                    on(self.server),
                    uptime.as_secs()
                ),
            ));
        }
    }
}

fn misconfiguration(
    info: &HashMap<String, String>,
    checks: &Checks,
    node: (usize, &str),
    cluster: bool,
) -> Option<NodeFailure> {
    let eviction = checks.eviction;
    if info.get("role").is_some_and(|r| r == "slave") {
        return Some((
            NodeKind::ReadOnly,
            "the node is a replica (role:slave); lock nodes must be masters".to_owned(),
        ));
    }
    if !cluster && info.get("cluster_enabled").is_some_and(|c| c == "1") {
        return Some((
            NodeKind::ClusterUnsupported,
            "cluster mode is enabled: list the whole cluster as one member, redis+cluster://host:port,host:port,... (one node of a cluster cannot route keys by slot)"
                .to_owned(),
        ));
    }
    let limited = info.get("maxmemory").is_some_and(|m| m != "0");
    let policy = info.get("maxmemory_policy").map_or("", String::as_str);
    if limited && policy != "noeviction" && eviction != EvictionCheck::Off {
        let text = format!("maxmemory-policy {policy} can evict lock keys; set noeviction");
        if eviction == EvictionCheck::Refuse {
            return Some((NodeKind::EvictionPolicy, text));
        }
        checks
            .warner
            .warn(Warning::new(WarningKind::EvictionPolicy, Some(node), text));
    }
    None
}

/// Parses `INFO` text (`key:value` lines, `#` section headers) into a map.
pub(crate) fn parse_info(text: &str) -> HashMap<String, String> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect()
}

/// Parses a `CONFIG GET` reply (a flat array of name, value pairs under RESP2, a map under
/// RESP3) into a map.
pub(crate) fn parse_config(v: &Value) -> HashMap<String, String> {
    let text = |v: &Value| match v {
        Value::BulkString(b) => Some(String::from_utf8_lossy(b).into_owned()),
        Value::SimpleString(s) => Some(s.clone()),
        _ => None,
    };
    match v {
        Value::Array(items) => items
            .chunks(2)
            .filter_map(|pair| Some((text(pair.first()?)?, text(pair.get(1)?)?)))
            .collect(),
        Value::Map(pairs) => pairs
            .iter()
            .filter_map(|(k, v)| Some((text(k)?, text(v)?)))
            .collect(),
        _ => HashMap::new(),
    }
}

/// The text of a bulk or verbatim string reply; for the per-primary map a cluster member
/// answers a broadcast command with, the first primary's text.
pub(crate) fn reply_text(v: &Value) -> Option<String> {
    match v {
        Value::Map(pairs) => pairs.first().and_then(|(_, v)| reply_text(v)),
        Value::BulkString(b) => Some(String::from_utf8_lossy(b).into_owned()),
        Value::VerbatimString { text, .. } => Some(text.clone()),
        Value::SimpleString(s) => Some(s.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_and_config_parse() {
        let info = parse_info(
            "# Server\r\nredis_version:7.0.15\r\nuptime_in_seconds:42\r\n\r\n# Memory\r\nmaxmemory_policy:noeviction\r\n",
        );
        assert_eq!(info["redis_version"], "7.0.15");
        assert_eq!(info["uptime_in_seconds"], "42");
        assert_eq!(info["maxmemory_policy"], "noeviction");
        let cfg = parse_config(&Value::Array(vec![
            Value::BulkString(b"appendonly".to_vec()),
            Value::BulkString(b"yes".to_vec()),
            Value::BulkString(b"appendfsync".to_vec()),
            Value::BulkString(b"always".to_vec()),
        ]));
        assert_eq!(cfg["appendonly"], "yes");
        assert_eq!(cfg["appendfsync"], "always");
    }
}
