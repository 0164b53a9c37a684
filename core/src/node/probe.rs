//! Reading a node's own description on every new connection: `INFO` fields and the
//! persistence settings from `CONFIG GET`. What they mean for lock traffic (the restart
//! quarantine, the eviction check, replicas and cluster nodes, REDLOCK.md §8) is the
//! protocol's decision (`quorumlock_proto::probe`).

use std::collections::HashMap;
use std::time::Duration;

use redis::{RedisResult, Value};

use quorumlock_proto::probe;
pub(crate) use quorumlock_proto::probe::parse_info;

use crate::clock::MonoTime;
use crate::config::{EvictionCheck, Quarantine};
use crate::warning::{Warner, Warning};

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
/// primary of a cluster); the protocol decides how the member may be used
/// (`quorumlock_proto::probe`). Connection errors fail the probe (and so the connect);
/// refusals by ACL do not. `node` is the member's index and address, for warnings. The
/// settings are read even with every check off: they name the servers (duplicates) and
/// tell whether they write durably.
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
                Ok(v @ (Value::Array(_) | Value::Map(_))) => {
                    configs.entry(server).or_default().extend(parse_config(&v));
                }
                Ok(other) => return Err(malformed("CONFIG GET", &other)),
                Err(e) if e.is_io_error() || e.is_unrecoverable_error() => return Err(e),
                Err(_) => tracing::debug!("CONFIG GET is refused; the node counts as not durable"),
            }
        }
    }
    let settings = probe::Settings {
        quarantine: checks.quarantine,
        quarantine_period: checks.quarantine_period,
        eviction: checks.eviction,
    };
    let mut decision = probe::Decision::default();
    let none = HashMap::new();
    for (server, info) in infos {
        let info = match info {
            Ok(v) => match reply_text(&v) {
                Some(text) => Some(parse_info(&text)),
                None => return Err(malformed("INFO", &v)),
            },
            Err(e) if e.is_io_error() || e.is_unrecoverable_error() => return Err(e),
            Err(e) => {
                tracing::debug!(error = %e, "INFO is refused");
                None
            }
        };
        let facts = probe::Facts {
            server: &server,
            info: info.as_ref(),
            config: configs.get(&server).unwrap_or(&none),
            cluster,
        };
        decision.add(&facts, &settings);
    }
    for (kind, text) in std::mem::take(&mut decision.warnings) {
        checks.warner.warn(Warning::new(kind, Some(node), text));
    }
    Ok(Probe {
        run_ids: decision.run_ids,
        uptime: decision.uptime.unwrap_or_default(),
        ready_at: now + decision.wait,
        unusable: decision.unusable,
        uptime_unknown: decision.uptime_unknown,
    })
}

/// A probe reply of the wrong type: the node is not a Redis server speaking RESP as it
/// should (or something in between rewrote the reply). The connect fails with `Protocol`, so
/// such a node never counts with settings the engine could not read.
pub(crate) fn malformed(command: &str, v: &Value) -> redis::RedisError {
    let mut shown = format!("{v:?}");
    if shown.len() > 80 {
        let cut = (0..=80)
            .rev()
            .find(|&i| shown.is_char_boundary(i))
            .unwrap_or(0);
        shown.truncate(cut);
        shown.push_str("...");
    }
    redis::RedisError::from((
        redis::ErrorKind::UnexpectedReturnType,
        "malformed reply",
        format!("{command} answered {shown}"),
    ))
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

    #[test]
    fn malformed_probe_replies_are_protocol_errors() {
        let e = malformed("INFO", &Value::Int(1));
        assert_eq!(
            super::super::classify(&e).0,
            crate::report::NodeKind::Protocol
        );
        assert!(e.to_string().contains("INFO answered int(1)"), "{e}");
        let long = malformed("INFO", &Value::BulkString(vec![b'x'; 500]));
        assert!(long.to_string().len() < 200, "{long}");
    }
}
