//! A cluster of independent `redis-server` nodes owned by the test (`docs/TESTING.md` §2.2–2.4).

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::node::{Node, Server};
use crate::resp::{self, Reply};
use crate::run;
use crate::tls::{Certs, ServerCert, Tls};

/// How a node persists its keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Persist {
    /// AOF with `appendfsync always`: every acknowledged write survives `kill -9`. The default.
    #[default]
    Always,
    /// No persistence: a restarted node comes back empty.
    None,
    /// AOF with `appendfsync everysec`.
    Everysec,
}

impl Persist {
    /// The name used on the command line and in JSON: `always`, `none` or `everysec`.
    pub fn as_str(self) -> &'static str {
        match self {
            Persist::Always => "always",
            Persist::None => "none",
            Persist::Everysec => "everysec",
        }
    }

    pub(crate) fn server_args(self) -> &'static [&'static str] {
        match self {
            Persist::Always => &[
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
                "--no-appendfsync-on-rewrite",
                "no",
            ],
            Persist::None => &["--appendonly", "no"],
            Persist::Everysec => &["--appendonly", "yes", "--appendfsync", "everysec"],
        }
    }
}

impl FromStr for Persist {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "always" => Ok(Persist::Always),
            "none" => Ok(Persist::None),
            "everysec" => Ok(Persist::Everysec),
            _ => Err(format!(
                "unknown persist mode {s:?}: use always, none or everysec"
            )),
        }
    }
}

impl fmt::Display for Persist {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Options for starting a [`Cluster`]; make one with [`Cluster::builder`], then call [`Builder::start`].
#[derive(Debug, Clone)]
pub struct Builder {
    nodes: usize,
    persist: Persist,
    run_dir: Option<PathBuf>,
    /// `Some(replicas)`: the nodes form one Redis Cluster with that many replicas per master.
    redis_cluster: Option<usize>,
    tls: Option<Tls>,
    /// Nodes that present another certificate than [`ServerCert::Good`].
    node_certs: Vec<(usize, ServerCert)>,
    /// Loopback addresses every node listens on besides 127.0.0.1.
    also_bind: Vec<String>,
}

impl Builder {
    /// Number of nodes (default 5).
    pub fn nodes(mut self, n: usize) -> Self {
        self.nodes = n;
        self
    }

    /// Persistence of every node (default [`Persist::Always`]).
    pub fn persist(mut self, persist: Persist) -> Self {
        self.persist = persist;
        self
    }

    /// Make the nodes one Redis Cluster (`cluster-enabled yes`, created with `redis-cli
    /// --cluster create`) with `replicas` replicas per master: `nodes` must be at least
    /// `3 * (1 + replicas)`. [`Cluster::cluster_url`] names it as one quorum member.
    pub fn redis_cluster(mut self, replicas: usize) -> Self {
        self.redis_cluster = Some(replicas);
        self
    }

    /// TLS nodes (`docs/TESTING.md` §2.7): certificates are made in `<run>/tls/`, each node
    /// listens with TLS only, and [`Cluster::url`] gives `rediss://` URLs that name the test
    /// CA (and for [`Tls::Mutual`] the client certificate). Not with a Redis Cluster.
    pub fn tls(mut self, mode: Tls) -> Self {
        self.tls = Some(mode);
        self
    }

    /// With [`tls`](Self::tls): node `i` presents `cert` instead of the good certificate.
    pub fn tls_node_cert(mut self, i: usize, cert: ServerCert) -> Self {
        self.node_certs.push((i, cert));
        self
    }

    /// Every node also listens on these loopback addresses (`127.0.0.11`, say): inside a
    /// network namespace each client can then reach a node through its own address, which
    /// kernel rules cut one by one (`docs/TESTING.md` §3.7). Connections still come from
    /// 127.0.0.1, so protected mode and `DEBUG` keep working.
    pub fn also_bind<I, S>(mut self, addresses: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.also_bind = addresses.into_iter().map(Into::into).collect();
        self
    }

    /// Use this run folder (created if missing) instead of a fresh one under
    /// [`run::run_root`]. `ql-harness start` uses it to hand its folder to the supervisor.
    pub fn run_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.run_dir = Some(dir.into());
        self
    }

    /// Sweeps stale runs, creates the run folder and starts every node in parallel; returns
    /// once all of them answer `PING`. Fails if `redis-server` is missing, or a node cannot
    /// start (the error holds the last lines of its log; the folder is kept).
    pub fn start(self) -> io::Result<Cluster> {
        let server = Server::find()?;
        run::sweep(false);
        let run_dir = match self.run_dir {
            Some(dir) => {
                std::fs::create_dir_all(&dir)?;
                std::path::absolute(dir)?
            }
            None => run::new_run_dir()?,
        };
        run::write_owner(&run_dir)?;
        let mut extra = match self.redis_cluster {
            Some(_) => crate::redis_cluster::server_args(),
            None => Vec::new(),
        };
        if !self.also_bind.is_empty() {
            // A later `bind` replaces the node's default `--bind 127.0.0.1`.
            extra.extend(["--bind".to_owned(), "127.0.0.1".to_owned()]);
            extra.extend(self.also_bind.iter().cloned());
        }
        if self.tls.is_some() && self.redis_cluster.is_some() {
            return Err(io::Error::other(
                "TLS nodes cannot form a Redis Cluster in the harness",
            ));
        }
        let certs = match self.tls {
            Some(_) => Some(crate::tls::generate(&run_dir.join("tls"))?),
            None => None,
        };
        let tls_args = |i: usize| {
            let (mode, certs) = (self.tls?, certs.as_ref()?);
            let cert = self
                .node_certs
                .iter()
                .rev()
                .find(|(n, _)| *n == i)
                .map_or(ServerCert::Good, |(_, c)| *c);
            Some(certs.server_args(mode, cert))
        };
        let started = crate::node::start_all(
            &server,
            &run_dir,
            self.nodes,
            self.persist,
            &extra,
            &tls_args,
        )
        .and_then(|nodes| {
            if let Some(replicas) = self.redis_cluster {
                let ports: Vec<u16> = nodes.iter().map(|n| n.port).collect();
                crate::redis_cluster::create(&ports, replicas)?;
            }
            Ok(nodes)
        });
        match started {
            Ok(nodes) => Ok(Cluster {
                run_dir,
                server,
                nodes,
                keep: false,
                fsync_marks: Vec::new(),
                redis_cluster: self.redis_cluster.is_some(),
                tls: self.tls.zip(certs),
            }),
            Err(e) => {
                let _ = std::fs::write(run_dir.join(run::KEPT_MARKER), "start failed\n");
                Err(io::Error::new(
                    e.kind(),
                    format!("{e}\n(run folder kept: {})", run_dir.display()),
                ))
            }
        }
    }
}

/// N independent `redis-server` nodes on loopback, owned by this value. Dropping it SIGKILLs
/// and reaps every node and deletes the run folder, unless the thread is panicking,
/// [`Cluster::keep`] was called, or `QL_KEEP_RUNS=1`.
///
/// Methods taking a node index `i` panic if `i >= len()`.
#[derive(Debug)]
pub struct Cluster {
    run_dir: PathBuf,
    server: Server,
    nodes: Vec<Node>,
    keep: bool,
    /// `(node, AOF file, size)` recorded by [`Cluster::mark_fsync`].
    fsync_marks: Vec<(usize, PathBuf, u64)>,
    /// The nodes form one Redis Cluster.
    redis_cluster: bool,
    /// TLS nodes: the mode and the certificates.
    tls: Option<(Tls, Certs)>,
}

impl Cluster {
    /// A builder with 5 nodes and [`Persist::Always`].
    pub fn builder() -> Builder {
        Builder {
            nodes: 5,
            persist: Persist::Always,
            run_dir: None,
            redis_cluster: None,
            tls: None,
            also_bind: Vec::new(),
            node_certs: Vec::new(),
        }
    }

    /// For a Redis Cluster ([`Builder::redis_cluster`]): the one quorum member it is,
    /// `redis+cluster://127.0.0.1:P1,127.0.0.1:P2,...` over every node. `None` otherwise.
    pub fn cluster_url(&self) -> Option<String> {
        self.redis_cluster.then(|| {
            let seeds: Vec<String> = (0..self.len()).map(|i| self.addr(i).to_string()).collect();
            format!("redis+cluster://{}", seeds.join(","))
        })
    }

    /// For a Redis Cluster: the indices of the running nodes that are masters now.
    pub fn masters(&self) -> io::Result<Vec<usize>> {
        let mut out = Vec::new();
        for i in (0..self.len()).filter(|&i| self.is_running(i)) {
            if crate::redis_cluster::is_master(self.addr(i))? {
                out.push(i);
            }
        }
        Ok(out)
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// True if the cluster has no nodes.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Every node's URL, `redis://127.0.0.1:PORT`, in node order.
    pub fn urls(&self) -> Vec<String> {
        (0..self.len()).map(|i| self.url(i)).collect()
    }

    /// Node `i`'s URL, `redis://127.0.0.1:PORT`; for TLS nodes
    /// `rediss://127.0.0.1:PORT/?tls_ca=...` with the test CA (and the client certificate
    /// and key for [`Tls::Mutual`]).
    pub fn url(&self, i: usize) -> String {
        match &self.tls {
            None => format!("redis://{}", self.addr(i)),
            Some((mode, certs)) => format!("{}/{}", self.bare_url(i), certs.query(*mode)),
        }
    }

    /// Node `i`'s URL through another of its addresses ([`Builder::also_bind`]):
    /// `redis://ADDRESS:PORT`.
    pub fn url_via(&self, i: usize, address: &str) -> String {
        format!("redis://{address}:{}", self.addr(i).port())
    }

    /// Node `i`'s URL without TLS parameters: `redis://` or `rediss://127.0.0.1:PORT`.
    pub fn bare_url(&self, i: usize) -> String {
        let scheme = if self.tls.is_some() {
            "rediss"
        } else {
            "redis"
        };
        format!("{scheme}://{}", self.addr(i))
    }

    /// The TLS mode and the certificates of TLS nodes ([`Builder::tls`]).
    pub fn tls(&self) -> Option<(Tls, &Certs)> {
        self.tls.as_ref().map(|(m, c)| (*m, c))
    }

    /// Node `i`'s address. It keeps its port across restarts.
    pub fn addr(&self, i: usize) -> SocketAddr {
        self.nodes[i].addr()
    }

    /// PID of node `i`'s current process (of the last one, if it was killed).
    pub fn pid(&self, i: usize) -> u32 {
        self.nodes[i].pid
    }

    /// True if node `i` has a process (started and not killed; it may be paused).
    pub fn is_running(&self, i: usize) -> bool {
        self.nodes[i].child.is_some()
    }

    /// Node `i`'s current persistence mode.
    pub fn persist(&self, i: usize) -> Persist {
        self.nodes[i].persist
    }

    /// Node `i`'s `redis.log`.
    pub fn log_path(&self, i: usize) -> PathBuf {
        self.nodes[i].log_path()
    }

    /// The run folder (absolute).
    pub fn run_dir(&self) -> &Path {
        &self.run_dir
    }

    /// Keep the run folder when this cluster is dropped.
    pub fn keep(&mut self) {
        self.keep = true;
    }

    fn signal(&self, i: usize, sig: Signal) -> io::Result<()> {
        let node = &self.nodes[i];
        if node.child.is_none() {
            return Err(io::Error::other(format!("node {i} is not running")));
        }
        let pid = i32::try_from(node.pid).map_err(io::Error::other)?;
        kill(Pid::from_raw(pid), sig).map_err(io::Error::from)
    }

    /// SIGSTOP node `i`. The kernel still accepts connections; no reply comes until
    /// [`resume`](Self::resume).
    pub fn pause(&self, i: usize) -> io::Result<()> {
        self.signal(i, Signal::SIGSTOP)
    }

    /// SIGCONT node `i`.
    pub fn resume(&self, i: usize) -> io::Result<()> {
        self.signal(i, Signal::SIGCONT)
    }

    /// SIGKILL node `i` and wait for it (a crash). Does nothing if it is not running.
    pub fn kill(&mut self, i: usize) {
        self.nodes[i].kill();
    }

    /// Start node `i` again on the same port and folder with `persist` (killing it first if it
    /// still runs), and wait until it answers `PING`.
    pub fn restart(&mut self, i: usize, persist: Persist) -> io::Result<()> {
        self.nodes[i].restart(&self.server, persist)
    }

    /// Sends `DEBUG SLEEP secs` to node `i` on its own connection and returns at once; a
    /// background thread reads (and discards) the reply. The command has been written when
    /// this returns.
    pub fn debug_sleep(&self, i: usize, secs: f64) -> io::Result<()> {
        let arg = format!("{secs}");
        let timeout = Duration::from_secs_f64(secs.max(0.0) + 10.0);
        self.nodes[i]
            .admin()
            .send_detached(&[b"DEBUG", b"SLEEP", arg.as_bytes()], timeout)
    }

    /// `CLIENT PAUSE ms mode` on node `i`; `mode` is `WRITE` or `ALL`.
    pub fn client_pause(&self, i: usize, ms: u64, mode: &str) -> io::Result<()> {
        let ms = ms.to_string();
        self.command(i, &[b"CLIENT", b"PAUSE", ms.as_bytes(), mode.as_bytes()])?
            .into_result()
            .map(drop)
    }

    /// Node `i`'s clock-skew control file.
    pub fn skew_file(&self, i: usize) -> PathBuf {
        self.nodes[i].dir.join(crate::skew::FILE_NAME)
    }

    /// Skews node `i`'s wall clock: `offset_ms` jumps it (relative to the last offset), `rate`
    /// bends it from now on. Takes effect within about 20 ms. Fails if the shim is missing.
    pub fn skew(&self, i: usize, offset_ms: i64, rate: f64) -> io::Result<()> {
        self.require_shim()?;
        crate::skew::set(&self.skew_file(i), offset_ms, rate)
    }

    /// Puts node `i`'s wall clock back to real time.
    pub fn skew_reset(&self, i: usize) -> io::Result<()> {
        self.require_shim()?;
        crate::skew::reset(&self.skew_file(i))
    }

    fn require_shim(&self) -> io::Result<()> {
        if crate::skew::shim_path().is_none() {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                "clock-skew shim not built (set QL_SKEWCLOCK_SO to libskewclock.so)",
            ));
        }
        Ok(())
    }

    /// Remembers the size of node `i`'s current incremental AOF file as "safely on disk"
    /// (`docs/TESTING.md` §3.2). Only for [`Persist::Everysec`] nodes.
    pub fn mark_fsync(&mut self, i: usize) -> io::Result<()> {
        if self.persist(i) != Persist::Everysec {
            return Err(io::Error::other(format!(
                "node {i} is not an everysec node"
            )));
        }
        let file = crate::aof::current_incr_file(&self.nodes[i].dir)?;
        let size = std::fs::metadata(&file)?.len();
        self.fsync_marks.retain(|(n, ..)| *n != i);
        self.fsync_marks.push((i, file, size));
        Ok(())
    }

    /// Emulates a power loss on a killed `everysec` node: truncates its AOF back to the size
    /// recorded by [`mark_fsync`](Self::mark_fsync). Returns the bytes cut off.
    pub fn lose_unfsynced(&mut self, i: usize) -> io::Result<u64> {
        if self.is_running(i) {
            return Err(io::Error::other(format!("node {i} runs: kill it first")));
        }
        let Some(pos) = self.fsync_marks.iter().position(|(n, ..)| *n == i) else {
            return Err(io::Error::other(format!("node {i}: no mark_fsync")));
        };
        let (_, file, size) = self.fsync_marks.remove(pos);
        let f = std::fs::OpenOptions::new().write(true).open(&file)?;
        let before = f.metadata()?.len();
        f.set_len(size)?;
        Ok(before.saturating_sub(size))
    }

    /// `SCRIPT FLUSH` on node `i`.
    pub fn script_flush(&self, i: usize) -> io::Result<()> {
        self.command(i, &[b"SCRIPT", b"FLUSH"])?
            .into_result()
            .map(drop)
    }

    /// Sends one raw command to node `i` on a fresh connection (5 s timeout). A Redis error is
    /// returned as `Ok(Reply::Error(..))`.
    pub fn command(&self, i: usize, args: &[&[u8]]) -> io::Result<Reply> {
        self.command_timeout(i, args, resp::DEFAULT_TIMEOUT)
    }

    /// Like [`command`](Self::command) with a custom connect/read/write timeout.
    pub fn command_timeout(
        &self,
        i: usize,
        args: &[&[u8]],
        timeout: Duration,
    ) -> io::Result<Reply> {
        self.nodes[i].admin().command_timeout(args, timeout)
    }

    /// `KEYS pattern` on node `i`.
    pub fn keys(&self, i: usize, pattern: &str) -> io::Result<Vec<Vec<u8>>> {
        match self
            .command(i, &[b"KEYS", pattern.as_bytes()])?
            .into_result()?
        {
            Reply::Array(items) => Ok(items
                .into_iter()
                .filter_map(|r| r.as_bytes().map(<[u8]>::to_vec))
                .collect()),
            other => Err(io::Error::other(format!(
                "KEYS: unexpected reply {other:?}"
            ))),
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // Node's Drop SIGKILLs (which also ends a stopped process) and reaps.
        self.nodes.clear();
        let keep = self.keep || std::thread::panicking() || run::keep_runs_env();
        if keep {
            let _ = std::fs::write(self.run_dir.join(run::KEPT_MARKER), "kept\n");
            eprintln!("ql-harness: kept run folder {}", self.run_dir.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.run_dir);
        }
    }
}
