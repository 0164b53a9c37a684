//! `status`, `release`, `break` and `ping`: thin wrappers over core's admin calls, with
//! human-readable and JSON output.

use std::io::{BufRead, IsTerminal, Write};
use std::time::Duration;

use quorumlock::{NodeCategory, NodeInfo, NodeKind, Report};
use serde_json::{Value, json};

use crate::config::{Settings, connect};
use crate::{CliError, exit, report_json};

fn ms(d: Option<Duration>) -> Option<u64> {
    d.and_then(|d| u64::try_from(d.as_millis()).ok())
}

fn short(value: &str) -> String {
    match value.get(..12) {
        Some(head) if value.len() > 12 => format!("{head}..."),
        _ => value.to_owned(),
    }
}

/// Nodes that answered as designed (a vote, a release or an absent key).
fn answered(report: &Report) -> usize {
    report
        .nodes()
        .iter()
        .filter(|n| n.kind.category() == NodeCategory::Vote)
        .count()
}

fn print_report(report: &Report) {
    for n in report.nodes() {
        let detail = n
            .detail
            .as_deref()
            .map(|d| format!(" ({d})"))
            .unwrap_or_default();
        out!("  #{} {:<24} {}{detail}", n.index, n.address, n.kind);
    }
}

/// `quorumlock status NAME`: 0 when a quorum holds one value, 114 when nobody does, 111
/// when fewer than a quorum of nodes answered.
pub(crate) async fn status(name: &str, settings: &Settings, json: bool) -> Result<u8, CliError> {
    let client = connect(settings, None).await?;
    let inspection = client.inspect(name).await?;
    let q = inspection.quorum;
    let n = inspection.nodes.len();
    let ok = inspection
        .nodes
        .iter()
        .filter(|h| h.kind == NodeKind::Ok)
        .count();
    let holder = inspection.holder().map(str::to_owned);
    let stray = inspection
        .nodes
        .iter()
        .filter(|h| h.value.is_some())
        .count();
    let (code, verdict) = match &holder {
        Some(v) => (
            exit::OK,
            format!("held by {} (quorum {q} of {n})", short(v)),
        ),
        None if ok < q => (
            exit::NODES,
            format!("unknown: only {ok} of {n} nodes answered, {q} needed"),
        ),
        None if stray > 0 => (
            exit::NOT_HELD,
            format!("not held (keys left on {stray} of {n} nodes, fewer than the quorum {q})"),
        ),
        None => (exit::NOT_HELD, "not held".to_owned()),
    };
    let key = String::from_utf8_lossy(&client.key(name)).into_owned();
    if json {
        let nodes: Vec<Value> = inspection
            .nodes
            .iter()
            .map(|h| {
                json!({
                    "index": h.index,
                    "address": h.address,
                    "kind": h.kind.as_str(),
                    "detail": h.detail,
                    "value": h.value,
                    "ttl_ms": ms(h.ttl),
                })
            })
            .collect();
        let out = json!({
            "ok": code != exit::NODES,
            "exit": code,
            "name": name,
            "key": key,
            "held": holder.is_some(),
            "holder": holder,
            "quorum": q,
            "answered": ok,
            "nodes": nodes,
        });
        out!("{out}");
        return Ok(code);
    }
    out!("{name} ({key}): {verdict}");
    for h in &inspection.nodes {
        let what = match (&h.kind, &h.value) {
            (NodeKind::Ok, Some(v)) => {
                let ttl = h.ttl.map(|t| format!(", ttl {} ms", t.as_millis()));
                format!("held by {}{}", short(v), ttl.unwrap_or_default())
            }
            (NodeKind::Ok, None) => "free".to_owned(),
            (kind, _) => format!("{kind} ({})", h.detail.as_deref().unwrap_or("")),
        };
        out!("  #{} {:<24} {what}", h.index, h.address);
    }
    Ok(code)
}

/// `quorumlock release NAME --value V`: 0 when a quorum held V and released it, 114 when V
/// did not hold it, 111 when fewer than a quorum of nodes answered.
pub(crate) async fn release(
    name: &str,
    value: &str,
    settings: &Settings,
    json: bool,
) -> Result<u8, CliError> {
    let client = connect(settings, None).await?;
    let report = client.release_value([name], value).await?;
    let released = report.released_count();
    let code = if report.was_held_by_quorum() {
        exit::OK
    } else if answered(&report) < client.quorum() {
        exit::NODES
    } else {
        exit::NOT_HELD
    };
    let n = report.nodes().len();
    if json {
        let out = json!({
            "ok": code == exit::OK,
            "exit": code,
            "name": name,
            "released": released,
            "quorum": client.quorum(),
            "nodes": report_json(&report),
        });
        out!("{out}");
    } else {
        let verdict = match code {
            exit::OK => "released",
            exit::NODES => "unknown: too few nodes answered",
            _ => "not held by that value",
        };
        out!("{name}: {verdict} (deleted on {released} of {n} nodes)");
        print_report(&report);
    }
    Ok(code)
}

/// Asks before `break` unless `yes`; refuses when stdin is not a terminal.
///
/// # Errors
/// Exit 113 without `--yes` when stdin is not a terminal, 115 when the answer is not yes.
pub(crate) fn confirm_break(name: &str, yes: bool) -> Result<(), CliError> {
    if yes {
        return Ok(());
    }
    if !std::io::stdin().is_terminal() {
        return Err(CliError::usage(
            "refusing to break a lock without --yes when stdin is not a terminal",
        ));
    }
    let mut stderr = std::io::stderr();
    let _ = write!(
        stderr,
        "Delete lock {name:?} on every node, whoever holds it? The holder is not told. [y/N] "
    );
    let _ = stderr.flush();
    let mut answer = String::new();
    let _ = std::io::stdin().lock().read_line(&mut answer);
    match answer.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Ok(()),
        _ => Err(CliError::new(exit::ABORTED, "QL_ABORTED", "not broken")),
    }
}

/// `quorumlock break NAME`: deletes the key on every node without an owner check. 0 when a
/// quorum of nodes answered, 111 otherwise.
pub(crate) async fn force_break(
    name: &str,
    settings: &Settings,
    json: bool,
) -> Result<u8, CliError> {
    let client = connect(settings, None).await?;
    let report = client.force_break(name).await?;
    let deleted = report.released_count();
    let code = if answered(&report) >= client.quorum() {
        exit::OK
    } else {
        exit::NODES
    };
    if json {
        let out = json!({
            "ok": code == exit::OK,
            "exit": code,
            "name": name,
            "deleted": deleted,
            "nodes": report_json(&report),
        });
        out!("{out}");
    } else {
        let n = report.nodes().len();
        out!("{name}: broken (key deleted on {deleted} of {n} nodes)");
        print_report(&report);
    }
    Ok(code)
}

fn info_json(i: &NodeInfo) -> Value {
    json!({
        "index": i.index,
        "address": i.address,
        "kind": i.kind.map(|k| k.as_str()),
        "detail": i.detail,
        "latency_us": i.latency.and_then(|d| u64::try_from(d.as_micros()).ok()),
        "version": i.version,
        "run_id": i.run_id,
        "uptime_s": i.uptime.map(|d| d.as_secs()),
        "role": i.role,
        "maxmemory": i.maxmemory,
        "maxmemory_policy": i.maxmemory_policy,
        "persistence": i.persistence.as_ref().map(|(aof, fsync, no_rewrite_fsync)| json!({
            "appendonly": aof,
            "appendfsync": fsync,
            "no_appendfsync_on_rewrite": no_rewrite_fsync,
        })),
        "durable": i.durable(),
        "warnings": i.warnings,
    })
}

fn info_line(i: &NodeInfo) -> String {
    if i.kind != Some(NodeKind::Ok) {
        let kind = i.kind.map_or("?", |k| k.as_str());
        return format!("{kind} ({})", i.detail.as_deref().unwrap_or(""));
    }
    let latency = i.latency.map_or(0.0, |d| d.as_secs_f64() * 1000.0);
    let uptime = i
        .uptime
        .map_or_else(String::new, |u| humantime::format_duration(u).to_string());
    let durable = if i.durable() {
        "durable"
    } else {
        "not durable"
    };
    format!(
        "ok {latency:.2} ms, redis {}, up {uptime}, {}, {durable}, maxmemory {} ({})",
        i.version.as_deref().unwrap_or("?"),
        i.role.as_deref().unwrap_or("?"),
        i.maxmemory.unwrap_or(0),
        i.maxmemory_policy.as_deref().unwrap_or("?"),
    )
}

/// `quorumlock ping`: 0 when a quorum of nodes is usable (warnings do not change it), 111
/// otherwise.
pub(crate) async fn ping(settings: &Settings, json: bool) -> Result<u8, CliError> {
    let client = connect(settings, None).await?;
    let infos = client.ping().await?;
    let usable = infos
        .iter()
        .filter(|i| i.kind == Some(NodeKind::Ok))
        .count();
    if json {
        let nodes: Vec<Value> = infos.iter().map(info_json).collect();
        let out = json!({
            "ok": true,
            "exit": exit::OK,
            "quorum": client.quorum(),
            "usable": usable,
            "nodes": nodes,
        });
        out!("{out}");
        return Ok(exit::OK);
    }
    for i in &infos {
        out!("#{} {:<24} {}", i.index, i.address, info_line(i));
        for w in &i.warnings {
            out!("    warning: {w}");
        }
    }
    out!(
        "{usable} of {} nodes usable, {} needed",
        infos.len(),
        client.quorum()
    );
    Ok(exit::OK)
}
