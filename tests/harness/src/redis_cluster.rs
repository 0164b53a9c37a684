//! A Redis Cluster made of harness nodes: the server arguments of cluster mode, creation with
//! `redis-cli --cluster create`, and waiting until every node agrees the cluster is up.

use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::process::{Command, Stdio};

use crate::resp::{Reply, command};

/// How long a new cluster gets to reach `cluster_state:ok` on every node.
const CLUSTER_UP_MS: u64 = 30_000;

/// The arguments that put a `redis-server` into cluster mode; its `nodes.conf` lives in the
/// node's own folder (the server's working directory).
pub(crate) fn server_args() -> Vec<String> {
    [
        "--cluster-enabled",
        "yes",
        "--cluster-config-file",
        "nodes.conf",
        "--cluster-node-timeout",
        "2000",
    ]
    .map(String::from)
    .to_vec()
}

/// Creates one cluster over the nodes on `ports` (the first `ports.len() / (1 + replicas)`
/// become masters) and waits until every node reports `cluster_state:ok` and knows every
/// other node, and every replica's link to its master is up.
pub(crate) fn create(ports: &[u16], replicas: usize) -> io::Result<()> {
    if ports.len() < 3 * (1 + replicas) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "a Redis Cluster with {replicas} replica(s) per master needs at least {} nodes, got {}",
                3 * (1 + replicas),
                ports.len()
            ),
        ));
    }
    let out = Command::new("redis-cli")
        .arg("--cluster")
        .arg("create")
        .args(ports.iter().map(|p| format!("127.0.0.1:{p}")))
        .args(["--cluster-replicas", &replicas.to_string(), "--cluster-yes"])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| io::Error::new(e.kind(), format!("redis-cli --cluster create: {e}")))?;
    if !out.status.success() {
        return Err(io::Error::other(format!(
            "redis-cli --cluster create failed ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    let addrs: Vec<SocketAddr> = ports
        .iter()
        .map(|&p| SocketAddr::from((Ipv4Addr::LOCALHOST, p)))
        .collect();
    wait_up(&addrs)
}

/// Waits until every node of `addrs` is part of a healthy cluster of all of them.
pub fn wait_up(addrs: &[SocketAddr]) -> io::Result<()> {
    let deadline = crate::now_us() + CLUSTER_UP_MS * 1000;
    loop {
        let last = match healthy(addrs) {
            Ok(()) => return Ok(()),
            Err(why) => why,
        };
        if crate::now_us() >= deadline {
            return Err(io::Error::other(format!(
                "the Redis Cluster was not up within {} s: {last}",
                CLUSTER_UP_MS / 1000
            )));
        }
        crate::sleep_ms(50);
    }
}

fn healthy(addrs: &[SocketAddr]) -> Result<(), String> {
    for addr in addrs {
        let info = text(*addr, &[b"CLUSTER", b"INFO"])?;
        if !info.contains("cluster_state:ok") {
            return Err(format!("{addr}: cluster_state not ok"));
        }
        let known = format!("cluster_known_nodes:{}", addrs.len());
        if !info.contains(&known) {
            return Err(format!("{addr}: not every node is known yet"));
        }
        let repl = text(*addr, &[b"INFO", b"replication"])?;
        if repl.contains("role:slave") && !repl.contains("master_link_status:up") {
            return Err(format!("{addr}: replica not in sync yet"));
        }
    }
    Ok(())
}

/// True when the node at `addr` answers `ROLE` as a master.
pub(crate) fn is_master(addr: SocketAddr) -> io::Result<bool> {
    match command(addr, &[b"ROLE"])? {
        Reply::Array(items) => Ok(matches!(items.first(), Some(Reply::Bulk(r)) if r == b"master")),
        other => Err(io::Error::other(format!(
            "ROLE: unexpected reply {other:?}"
        ))),
    }
}

fn text(addr: SocketAddr, args: &[&[u8]]) -> Result<String, String> {
    match command(addr, args) {
        Ok(Reply::Bulk(b)) => Ok(String::from_utf8_lossy(&b).into_owned()),
        Ok(other) => Err(format!("{addr}: unexpected reply {other:?}")),
        Err(e) => Err(format!("{addr}: {e}")),
    }
}
