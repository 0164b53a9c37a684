//! The TCP fault proxy (`docs/TESTING.md` §3.5): sits between a client and one node and delays,
//! drops, holds, trickles or resets the traffic, in a mode that can change at any moment.
//!
//! Every proxy runs on one shared tokio runtime with its own thread, so a busy test runtime
//! cannot slow it down. A client connects to [`FaultProxy::addr`] instead of the node.

use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::Instant;

/// What a proxy does with the traffic. Changes apply to open and new connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Mode {
    /// Forward everything.
    #[default]
    Pass,
    /// Latency per chunk and per direction. Order is preserved; delays do not add up.
    Delay {
        /// Client to server.
        c2s: Duration,
        /// Server to client.
        s2c: Duration,
    },
    /// Requests are forwarded, replies discarded: the server applies the write, the client
    /// times out.
    DropReplies,
    /// Requests discarded: the server never sees the command.
    DropRequests,
    /// Both directions discarded; both connections stay open and silent.
    Blackhole,
    /// The server side is closed, the client side stays open and silent.
    HalfOpen,
    /// Requests are buffered and delivered, in order, when the mode changes.
    Hold,
    /// RST every open connection and every new one at accept.
    Reset,
    /// Close new connections at accept; open ones keep working.
    RefuseNew,
    /// Replies trickle: `chunk` bytes every `gap`.
    SlowReplies {
        /// Bytes per write (at least 1).
        chunk: usize,
        /// Pause between writes.
        gap: Duration,
    },
}

/// Counters of one proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ProxyStats {
    /// Connections accepted (including those reset or refused at accept).
    pub accepted: u64,
    /// Bytes forwarded client → server.
    pub c2s_bytes: u64,
    /// Bytes forwarded server → client.
    pub s2c_bytes: u64,
    /// Bytes discarded client → server.
    pub c2s_dropped: u64,
    /// Bytes discarded server → client.
    pub s2c_dropped: u64,
    /// Connections reset (RST) or refused by the proxy.
    pub resets: u64,
}

#[derive(Debug, Default)]
struct Counters {
    accepted: AtomicU64,
    c2s_bytes: AtomicU64,
    s2c_bytes: AtomicU64,
    c2s_dropped: AtomicU64,
    s2c_dropped: AtomicU64,
    resets: AtomicU64,
}

fn add(c: &AtomicU64, n: usize) {
    c.fetch_add(u64::try_from(n).unwrap_or(u64::MAX), Ordering::Relaxed);
}

/// The shared runtime of every proxy (and hostile server): two worker threads, never shut down.
pub(crate) fn runtime() -> io::Result<&'static tokio::runtime::Runtime> {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    static BUILDING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    if let Some(rt) = RT.get() {
        return Ok(rt);
    }
    // One builder at a time: a second runtime built by a racing caller would be dropped, and
    // dropping a runtime inside an async context (a test's tasks) panics.
    let _building = BUILDING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(rt) = RT.get() {
        return Ok(rt);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("ql-proxy")
        .enable_all()
        .build()?;
    Ok(RT.get_or_init(|| rt))
}

/// One TCP proxy from a loopback port to one upstream address. Dropping it closes the
/// listener and every connection.
#[derive(Debug)]
pub struct FaultProxy {
    addr: SocketAddr,
    upstream: SocketAddr,
    mode: watch::Sender<Mode>,
    counters: Arc<Counters>,
    task: JoinHandle<()>,
}

impl FaultProxy {
    /// Listens on 127.0.0.1 (a free port) and forwards to `upstream`, in [`Mode::Pass`].
    pub fn start(upstream: SocketAddr) -> io::Result<FaultProxy> {
        let rt = runtime()?;
        let std_listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        std_listener.set_nonblocking(true)?;
        let addr = std_listener.local_addr()?;
        let (mode, rx) = watch::channel(Mode::Pass);
        let counters = Arc::new(Counters::default());
        let task = {
            let _guard = rt.enter();
            let listener = TcpListener::from_std(std_listener)?;
            rt.spawn(accept_loop(listener, upstream, rx, Arc::clone(&counters)))
        };
        Ok(FaultProxy {
            addr,
            upstream,
            mode,
            counters,
            task,
        })
    }

    /// The address clients connect to.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `redis://` URL of [`addr`](Self::addr).
    pub fn url(&self) -> String {
        format!("redis://{}", self.addr)
    }

    /// The node this proxy forwards to.
    pub fn upstream(&self) -> SocketAddr {
        self.upstream
    }

    /// Changes the mode; open connections see it at their next chunk (or at once for
    /// `Reset`, `HalfOpen` and the end of `Hold`).
    pub fn set(&self, mode: Mode) {
        self.mode.send_replace(mode);
    }

    /// The current mode.
    pub fn mode(&self) -> Mode {
        *self.mode.borrow()
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> ProxyStats {
        let c = &self.counters;
        let r = |a: &AtomicU64| a.load(Ordering::Relaxed);
        ProxyStats {
            accepted: r(&c.accepted),
            c2s_bytes: r(&c.c2s_bytes),
            s2c_bytes: r(&c.s2c_bytes),
            c2s_dropped: r(&c.c2s_dropped),
            s2c_dropped: r(&c.s2c_dropped),
            resets: r(&c.resets),
        }
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        // Aborting the accept loop drops its JoinSet, which aborts every connection task.
        self.task.abort();
    }
}

async fn accept_loop(
    listener: TcpListener,
    upstream: SocketAddr,
    mode: watch::Receiver<Mode>,
    counters: Arc<Counters>,
) {
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((client, _)) = accepted else { continue };
                counters.accepted.fetch_add(1, Ordering::Relaxed);
                // SO_LINGER 0: dropping the client socket sends an RST, never lingers.
                let _ = client.set_zero_linger();
                if matches!(*mode.borrow(), Mode::Reset | Mode::RefuseNew) {
                    counters.resets.fetch_add(1, Ordering::Relaxed);
                    drop(client);
                    continue;
                }
                conns.spawn(connection(client, upstream, mode.clone(), Arc::clone(&counters)));
            }
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
}

type Chunk = (Instant, Vec<u8>);

/// One proxied connection: four pump tasks, and a supervisor that acts on `Reset` and
/// `HalfOpen`.
async fn connection(
    client: TcpStream,
    upstream: SocketAddr,
    mut mode: watch::Receiver<Mode>,
    counters: Arc<Counters>,
) {
    let Ok(server) = TcpStream::connect(upstream).await else {
        counters.resets.fetch_add(1, Ordering::Relaxed);
        return;
    };
    let _ = server.set_nodelay(true);
    let _ = client.set_nodelay(true);
    let (c_read, c_write) = client.into_split();
    let (s_read, s_write) = server.into_split();
    let (c2s_tx, c2s_rx) = mpsc::unbounded_channel();
    let (s2c_tx, s2c_rx) = mpsc::unbounded_channel();

    let mut client_side = JoinSet::new();
    let mut server_side = JoinSet::new();
    client_side.spawn(read_pump(
        c_read,
        c2s_tx,
        mode.clone(),
        Arc::clone(&counters),
        true,
    ));
    client_side.spawn(write_pump(
        s2c_rx,
        c_write,
        mode.clone(),
        Arc::clone(&counters),
        false,
    ));
    server_side.spawn(read_pump(
        s_read,
        s2c_tx,
        mode.clone(),
        Arc::clone(&counters),
        false,
    ));
    server_side.spawn(write_pump(
        c2s_rx,
        s_write,
        mode.clone(),
        Arc::clone(&counters),
        true,
    ));

    let mut half_open = false;
    loop {
        tokio::select! {
            changed = mode.changed() => {
                if changed.is_err() { return; }
                let m = *mode.borrow_and_update();
                match m {
                    Mode::Reset => {
                        counters.resets.fetch_add(1, Ordering::Relaxed);
                        return; // drops both JoinSets: the client socket sends an RST
                    }
                    Mode::HalfOpen if !half_open => {
                        half_open = true;
                        server_side.abort_all();
                    }
                    _ => {}
                }
            }
            // Any pump ending (EOF or error) ends the whole connection.
            Some(_) = client_side.join_next() => return,
            Some(_) = server_side.join_next(), if !half_open => return,
        }
    }
}

/// Reads chunks and queues them with their delivery time, or discards them.
async fn read_pump(
    mut from: OwnedReadHalf,
    to: mpsc::UnboundedSender<Chunk>,
    mode: watch::Receiver<Mode>,
    counters: Arc<Counters>,
    c2s: bool,
) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let now = Instant::now();
        let m = *mode.borrow();
        let delay = match (m, c2s) {
            (Mode::Blackhole | Mode::HalfOpen, _)
            | (Mode::DropRequests, true)
            | (Mode::DropReplies, false) => None,
            (Mode::Delay { c2s: d, .. }, true) | (Mode::Delay { s2c: d, .. }, false) => Some(d),
            _ => Some(Duration::ZERO),
        };
        match delay {
            Some(d) => {
                if to.send((now + d, buf[..n].to_vec())).is_err() {
                    return;
                }
            }
            None if c2s => add(&counters.c2s_dropped, n),
            None => add(&counters.s2c_dropped, n),
        }
    }
}

/// Writes queued chunks at their delivery time; holds requests in `Hold`, trickles replies in
/// `SlowReplies`.
async fn write_pump(
    mut from: mpsc::UnboundedReceiver<Chunk>,
    mut to: OwnedWriteHalf,
    mut mode: watch::Receiver<Mode>,
    counters: Arc<Counters>,
    c2s: bool,
) {
    while let Some((at, bytes)) = from.recv().await {
        tokio::time::sleep_until(at).await;
        if c2s {
            while matches!(*mode.borrow_and_update(), Mode::Hold) {
                if mode.changed().await.is_err() {
                    return;
                }
            }
        }
        let slow = match *mode.borrow() {
            Mode::SlowReplies { chunk, gap } if !c2s => Some((chunk.max(1), gap)),
            _ => None,
        };
        let ok = match slow {
            Some((chunk, gap)) => trickle(&mut to, &bytes, chunk, gap).await,
            None => to.write_all(&bytes).await.is_ok(),
        };
        if !ok {
            return;
        }
        add(
            if c2s {
                &counters.c2s_bytes
            } else {
                &counters.s2c_bytes
            },
            bytes.len(),
        );
    }
    // The reading side is gone. Keep this half open: in `HalfOpen` the client must see
    // silence, not a close; otherwise the connection task ends soon anyway.
    std::future::pending::<()>().await;
}

async fn trickle(to: &mut OwnedWriteHalf, bytes: &[u8], chunk: usize, gap: Duration) -> bool {
    for (k, part) in bytes.chunks(chunk).enumerate() {
        if k > 0 {
            tokio::time::sleep(gap).await;
        }
        if to.write_all(part).await.is_err() {
            return false;
        }
    }
    true
}

/// A partition of a [`ProxyMesh`], as in Jepsen. Cut links get [`Mode::Blackhole`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Partition {
    /// This node is cut from every view.
    One(usize),
    /// The last (N − 1) / 2 nodes are cut from every view.
    Minority,
    /// The first N / 2 + 1 nodes are cut from every view.
    Majority,
    /// View k sees only the quorum-sized window of nodes k, k+1, … (mod N); every two views
    /// share a node, and no node is reachable by all.
    MajoritiesRing,
    /// These nodes are cut from this view only.
    Isolate {
        /// The view's name.
        view: String,
        /// Node indexes.
        nodes: Vec<usize>,
    },
}

impl Partition {
    /// Whether this partition cuts node `node` of `n` from view `view` (its index and name).
    pub fn cuts(&self, view: (usize, &str), node: usize, n: usize) -> bool {
        let quorum = n / 2 + 1;
        match self {
            Partition::One(k) => node == *k,
            Partition::Minority => node >= quorum,
            Partition::Majority => node < quorum,
            Partition::MajoritiesRing => (node + n - view.0 % n.max(1)) % n.max(1) >= quorum,
            Partition::Isolate { view: name, nodes } => view.1 == name && nodes.contains(&node),
        }
    }
}

/// One proxy per (view, node): each view is one client's own picture of the cluster, so
/// partitions can differ per client (`docs/TESTING.md` §3.5).
#[derive(Debug)]
pub struct ProxyMesh {
    names: Vec<String>,
    /// `proxies[view][node]`.
    proxies: Vec<Vec<FaultProxy>>,
}

impl ProxyMesh {
    /// Starts `views.len() × nodes.len()` proxies, all in [`Mode::Pass`].
    pub fn new(nodes: &[SocketAddr], views: &[&str]) -> io::Result<ProxyMesh> {
        let proxies = views
            .iter()
            .map(|_| nodes.iter().map(|&n| FaultProxy::start(n)).collect())
            .collect::<io::Result<Vec<Vec<FaultProxy>>>>()?;
        Ok(ProxyMesh {
            names: views.iter().map(|v| (*v).to_string()).collect(),
            proxies,
        })
    }

    fn index(&self, view: &str) -> Option<usize> {
        self.names.iter().position(|n| n == view)
    }

    /// The node addresses of `view` (empty for an unknown view).
    pub fn view(&self, view: &str) -> Vec<SocketAddr> {
        self.index(view)
            .map(|v| self.proxies[v].iter().map(FaultProxy::addr).collect())
            .unwrap_or_default()
    }

    /// The node URLs of `view` (empty for an unknown view).
    pub fn urls(&self, view: &str) -> Vec<String> {
        self.view(view)
            .iter()
            .map(|a| format!("redis://{a}"))
            .collect()
    }

    /// Sets one link's mode; unknown views and nodes are ignored.
    pub fn set(&self, view: &str, node: usize, mode: Mode) {
        if let Some(p) = self.index(view).and_then(|v| self.proxies[v].get(node)) {
            p.set(mode);
        }
    }

    /// Heals everything, then cuts the links `spec` names with [`Mode::Blackhole`].
    pub fn partition(&self, spec: &Partition) {
        self.partition_with(spec, Mode::Blackhole);
    }

    /// Heals everything, then puts the links `spec` names in `cut_mode` (for example
    /// [`Mode::Reset`]).
    pub fn partition_with(&self, spec: &Partition, cut_mode: Mode) {
        self.heal();
        let n = self.proxies.first().map_or(0, Vec::len);
        for (v, links) in self.proxies.iter().enumerate() {
            for (i, p) in links.iter().enumerate() {
                if spec.cuts((v, &self.names[v]), i, n) {
                    p.set(cut_mode);
                }
            }
        }
    }

    /// Every link back to [`Mode::Pass`].
    pub fn heal(&self) {
        for p in self.proxies.iter().flatten() {
            p.set(Mode::Pass);
        }
    }

    /// The current mode of every link, `[view][node]`.
    pub fn modes(&self) -> Vec<Vec<Mode>> {
        self.proxies
            .iter()
            .map(|links| links.iter().map(FaultProxy::mode).collect())
            .collect()
    }
}
