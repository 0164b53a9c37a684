//! The JSON control protocol of the `ql-harness` supervisor (`docs/TESTING.md` §2.5).
//!
//! One JSON object per line in, one JSON answer line out: `{"ok":true,"op":…,"t_us":…}` or
//! `{"ok":false,"error":"…"}`. `t_us` is [`now_us`](crate::now_us) after the operation took
//! effect.

use serde_json::{Value, json};

use crate::{Cluster, Persist};

/// Runs one control command against `cluster`. Returns the answer and whether the caller
/// should stop (the `stop` op).
///
/// Ops: `pause`, `resume`, `kill`, `script_flush` (`node`); `restart` (`node`, optional
/// `persist`, default the node's current mode; the answer adds `pid`); `debug_sleep` (`node`,
/// `secs`); `client_pause` (`node`, `ms`, optional `mode`, default `ALL`); `now`; `stop`.
pub fn handle(cluster: &mut Cluster, line: &str) -> (Value, bool) {
    let req: Value = match serde_json::from_str(line) {
        Ok(v @ Value::Object(_)) => v,
        Ok(_) => return (error("expected a JSON object"), false),
        Err(e) => return (error(&format!("bad JSON: {e}")), false),
    };
    let Some(op) = req.get("op").and_then(Value::as_str) else {
        return (error("missing \"op\""), false);
    };
    match run(cluster, op, &req) {
        Ok(extra) => {
            let mut answer = json!({"ok": true, "op": op, "t_us": crate::now_us()});
            if let (Value::Object(a), Value::Object(e)) = (&mut answer, extra) {
                a.extend(e);
            }
            (answer, op == "stop")
        }
        Err(e) => (error(&e), false),
    }
}

/// `{"ok":false,"error":msg}`.
pub fn error(msg: &str) -> Value {
    json!({"ok": false, "error": msg})
}

fn run(c: &mut Cluster, op: &str, req: &Value) -> Result<Value, String> {
    let node = || -> Result<usize, String> {
        let i = req
            .get("node")
            .and_then(Value::as_u64)
            .ok_or_else(|| format!("{op}: missing \"node\""))?;
        usize::try_from(i)
            .ok()
            .filter(|&i| i < c.len())
            .ok_or_else(|| format!("{op}: no node {i} (the cluster has {})", c.len()))
    };
    let num = |key: &str| {
        req.get(key)
            .and_then(Value::as_f64)
            .filter(|v| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| format!("{op}: missing or bad \"{key}\""))
    };
    let io = |e: std::io::Error| format!("{op}: {e}");
    let none = Value::Object(serde_json::Map::new());
    match op {
        "pause" => c.pause(node()?).map_err(io)?,
        "resume" => c.resume(node()?).map_err(io)?,
        "kill" => c.kill(node()?),
        "script_flush" => c.script_flush(node()?).map_err(io)?,
        "restart" => {
            let i = node()?;
            let persist = match req.get("persist").and_then(Value::as_str) {
                Some(p) => p.parse::<Persist>()?,
                None => c.persist(i),
            };
            c.restart(i, persist).map_err(io)?;
            return Ok(json!({"node": i, "pid": c.pid(i), "persist": persist.as_str()}));
        }
        "debug_sleep" => {
            let secs = num("secs")?;
            c.debug_sleep(node()?, secs).map_err(io)?;
        }
        "client_pause" => {
            let i = node()?;
            // Whole milliseconds; the float-to-int cast saturates.
            let ms = num("ms")?.round() as u64;
            let mode = req.get("mode").and_then(Value::as_str).unwrap_or("ALL");
            c.client_pause(i, ms, mode).map_err(io)?;
        }
        "skew" => {
            let i = node()?;
            if req.get("reset").and_then(Value::as_bool) == Some(true) {
                c.skew_reset(i).map_err(io)?;
            } else {
                let offset = req.get("offset_ms").and_then(Value::as_i64).unwrap_or(0);
                let rate = req.get("rate").and_then(Value::as_f64).unwrap_or(1.0);
                c.skew(i, offset, rate).map_err(io)?;
            }
        }
        "mark_fsync" => c.mark_fsync(node()?).map_err(io)?,
        "lose_unfsynced" => {
            let bytes = c.lose_unfsynced(node()?).map_err(io)?;
            return Ok(json!({"bytes_lost": bytes}));
        }
        "now" | "stop" => {}
        _ => return Err(format!("unknown op {op:?}")),
    }
    Ok(none)
}

/// The `redis_cluster` part of the `up` line: the member URL and every node with its role.
pub fn redis_cluster_json(rc: &Cluster) -> Value {
    let masters = rc.masters().unwrap_or_default();
    let nodes: Vec<Value> = (0..rc.len())
        .map(|i| {
            json!({
                "addr": rc.addr(i).to_string(),
                "pid": rc.pid(i),
                "role": if masters.contains(&i) { "master" } else { "replica" },
            })
        })
        .collect();
    json!({ "url": rc.cluster_url(), "nodes": nodes })
}

/// The `{"event":"up",…}` line that `ql-harness start` prints: every node's id, address, URL,
/// PID, persistence mode and log, the run folder, the control socket and the clock.
pub fn up_json(cluster: &Cluster, supervisor_pid: u32) -> Value {
    let dir = cluster.run_dir();
    let nodes: Vec<Value> = (0..cluster.len())
        .map(|i| {
            json!({
                "id": i,
                "addr": cluster.addr(i).to_string(),
                "url": cluster.url(i),
                "pid": cluster.pid(i),
                "persist": cluster.persist(i).as_str(),
                "log": cluster.log_path(i),
                "skew_file": cluster.skew_file(i),
            })
        })
        .collect();
    let mut up = json!({
        "event": "up",
        "run_dir": dir,
        "ctl": dir.join("ctl.sock"),
        "supervisor_pid": supervisor_pid,
        "nodes": nodes,
        "shim": crate::skew::shim_path().is_some(),
        "clock": "CLOCK_BOOTTIME",
        "t_us": crate::now_us(),
    });
    if let Some((mode, certs)) = cluster.tls() {
        up["tls"] = tls_json(mode, certs);
    }
    up
}

/// The `tls` object of the `up` line: the mode and the certificate files (`docs/TESTING.md`
/// §2.7).
pub fn tls_json(mode: crate::Tls, certs: &crate::Certs) -> Value {
    json!({
        "mode": mode.as_str(),
        "ca": certs.ca(),
        "cert": certs.client_cert(),
        "key": certs.client_key(),
        "other_ca": certs.other_ca(),
    })
}

/// The environment variables `ql-harness exec` sets for TLS nodes: `QL_TLS_CA`,
/// `QL_TLS_CERT`, `QL_TLS_KEY` (the test CA and a client certificate and key it signed) and
/// `QL_TLS_OTHER_CA` (a CA that signed nothing the nodes present).
pub fn tls_env(certs: &crate::Certs) -> Vec<(&'static str, std::path::PathBuf)> {
    vec![
        ("QL_TLS_CA", certs.ca()),
        ("QL_TLS_CERT", certs.client_cert()),
        ("QL_TLS_KEY", certs.client_key()),
        ("QL_TLS_OTHER_CA", certs.other_ca()),
    ]
}
