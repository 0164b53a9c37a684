//! Entry points for the fuzz targets in `fuzz/` (cargo feature `fuzzing`, which no package
//! and no release build enables): the engine's readers of untrusted input that have no public
//! function of their own. Each runs the engine's own code; none does I/O.

use std::collections::HashMap;
use std::time::Duration;

use quorumlock_proto::command::Reply;
use quorumlock_proto::probe::{Decision, Facts, Settings};
use redis::Value;

use crate::config::{EvictionCheck, Quarantine};
use crate::node::{classify, probe, scripts, target};
use crate::{ClientBuilder, Error, NodeKind};

/// What the checks of [`ClientBuilder::connect`] made of a configuration before any
/// connection: each accepted member's display address and servers, and the warnings.
#[derive(Debug)]
pub struct Checked {
    /// `Target::display` per accepted member.
    pub displays: Vec<String>,
    /// `Target::servers` per accepted member.
    pub servers: Vec<Vec<String>>,
    /// The warnings' messages (one server listed twice, ...).
    pub warnings: Vec<String>,
}

/// Runs the checks [`ClientBuilder::connect`] makes before it connects (URLs, settings,
/// default lock options).
///
/// # Errors
/// The `InvalidArgument` that `connect` would return.
pub fn check(builder: &ClientBuilder) -> Result<Checked, Error> {
    let (_, targets, warnings) = builder.check()?;
    Ok(Checked {
        displays: targets.iter().map(target::Target::display).collect(),
        servers: targets.iter().map(target::Target::servers).collect(),
        warnings: warnings.iter().map(|w| w.message().to_owned()).collect(),
    })
}

/// Parses `redis+cluster://` / `rediss+cluster://` URLs: `Ok(None)` for other schemes, the
/// member's display address otherwise. No TLS files are read here (the `tls_*` parameters
/// go through [`check`], which reads them as a client does).
///
/// # Errors
/// The parser's message.
pub fn parse_cluster(url: &str) -> Result<Option<String>, String> {
    Ok(target::parse_cluster(url, None, Duration::from_secs(1))?.map(|t| t.display()))
}

/// What the start-up probe makes of one server's `INFO` and `CONFIG GET` replies (as
/// redis-rs decoded them): the verdict on the node, or the `Protocol` failure of a reply of
/// the wrong type.
pub fn probe_replies(
    info: Result<Value, ()>,
    configs: &[Value],
    quarantine: Quarantine,
    eviction: EvictionCheck,
    cluster: bool,
) -> Result<Decision, (NodeKind, String)> {
    let mut config = HashMap::new();
    for v in configs {
        match v {
            Value::Array(_) | Value::Map(_) => config.extend(probe::parse_config(v)),
            Value::ServerError(_) => {}
            other => return Err(classify(&probe::malformed("CONFIG GET", other))),
        }
    }
    let info = match info {
        Ok(v) => match probe::reply_text(&v) {
            Some(text) => Some(probe::parse_info(&text)),
            None => return Err(classify(&probe::malformed("INFO", &v))),
        },
        Err(()) => None,
    };
    let settings = Settings {
        quarantine,
        quarantine_period: Duration::from_secs(65),
        eviction,
    };
    let mut decision = Decision::default();
    decision.add(
        &Facts {
            server: if cluster { "127.0.0.1:7000" } else { "" },
            info: info.as_ref(),
            config: &config,
            cluster,
        },
        &settings,
    );
    Ok(decision)
}

/// A decoded reply as the engine hands it to the protocol's readers: error replies become
/// the node kind `classify` gives them, anything else the protocol's [`Reply`].
pub fn reply(v: Value) -> Result<Reply, (NodeKind, String)> {
    match target::reply(Ok(v)) {
        Ok(v) => Ok(scripts::reply(v)),
        Err(e) => Err(classify(&e)),
    }
}
