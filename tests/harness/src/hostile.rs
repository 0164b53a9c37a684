//! A hostile node (`docs/TESTING.md` §3.6): a TCP listener that speaks just enough RESP to be
//! taken for a Redis master and then answers lock traffic with malformed RESP, announced
//! sizes it never sends, wrong types, replies that never end, silence, replies to requests
//! nobody sent, or a closed socket. It is not a mock of Redis: it stands for a broken or
//! malicious server (or middlebox) next to real `redis-server` nodes, so tests can check that
//! the engine answers with typed errors within its deadlines, never panics and keeps its
//! memory bounded.
//!
//! Every hostile server runs on the fault proxy's runtime (its own threads), so a busy test
//! runtime cannot slow it down; dropping a [`HostileServer`] closes its listener and every
//! open connection.

use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};

/// Longest request the server buffers before it drops the connection (requests of the
/// engine are far smaller).
const MAX_REQUEST: usize = 1 << 20;

/// What the server does with the requests in its [`Scope`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Hostility {
    /// Answers every request with these bytes: malformed RESP, a header announcing a bulk
    /// string or array that never comes (`$2147483647\r\n`), a wrong type, invalid UTF-8.
    Reply(Vec<u8>),
    /// Answers the first request with `prefix`, then writes `chunk` every `gap`, forever: a
    /// reply that never ends. Later requests get nothing more.
    Trickle {
        /// Sent at once.
        prefix: Vec<u8>,
        /// Sent after each gap.
        chunk: Vec<u8>,
        /// The pause between chunks.
        gap: Duration,
    },
    /// Reads every request and never answers.
    Silent,
    /// Writes these bytes as soon as a connection is accepted, before any request, and then
    /// answers like an honest node: replies to requests never sent.
    Unsolicited(Vec<u8>),
    /// Answers each request like an honest node, then once more with these bytes: two
    /// replies per request.
    Double(Vec<u8>),
    /// Writes these bytes (for example half a reply) and closes the connection.
    Close(Vec<u8>),
}

/// Which requests get the hostile treatment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Scope {
    /// Every request, the connection set-up and the engine's `INFO` / `CONFIG GET` probe
    /// included: the engine never gets a usable connection.
    All,
    /// Lock traffic only (`SET`, `EVAL`, `EVALSHA`, `EXISTS`, `SUBSCRIBE`, ...): `CLIENT`,
    /// `INFO`, `CONFIG`, `PING`, `SELECT`, `AUTH` and `HELLO` get honest answers, so the node
    /// passes the probe and counts as a durable master.
    Lock,
}

/// Counters of one hostile server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HostileStats {
    /// Connections accepted.
    pub accepted: u64,
    /// Requests read.
    pub requests: u64,
    /// Requests that got the hostile treatment.
    pub hostile: u64,
    /// Bytes written.
    pub written: u64,
}

#[derive(Debug, Default)]
struct Counters {
    accepted: AtomicU64,
    requests: AtomicU64,
    hostile: AtomicU64,
    written: AtomicU64,
}

/// A hostile node on 127.0.0.1; see the module documentation.
#[derive(Debug)]
pub struct HostileServer {
    addr: SocketAddr,
    counters: Arc<Counters>,
    task: JoinHandle<()>,
}

impl HostileServer {
    /// Listens on a free loopback port with the given behaviour.
    pub fn start(hostility: Hostility, scope: Scope) -> io::Result<HostileServer> {
        let rt = crate::proxy::runtime()?;
        let std_listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        std_listener.set_nonblocking(true)?;
        let addr = std_listener.local_addr()?;
        let counters = Arc::new(Counters::default());
        // Run ids must differ between servers, or the engine takes them for one server.
        let run_id = format!(
            "{:040x}",
            u128::from(addr.port()) << 64 | u128::from(crate::now_us())
        );
        let task = {
            let _guard = rt.enter();
            let listener = TcpListener::from_std(std_listener)?;
            let shared = Arc::new(Shared {
                hostility,
                scope,
                run_id,
                counters: Arc::clone(&counters),
            });
            rt.spawn(accept_loop(listener, shared))
        };
        Ok(HostileServer {
            addr,
            counters,
            task,
        })
    }

    /// The listening address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `redis://127.0.0.1:<port>`, for a client's node list.
    pub fn url(&self) -> String {
        format!("redis://{}", self.addr)
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> HostileStats {
        let c = &self.counters;
        HostileStats {
            accepted: c.accepted.load(Ordering::Relaxed),
            requests: c.requests.load(Ordering::Relaxed),
            hostile: c.hostile.load(Ordering::Relaxed),
            written: c.written.load(Ordering::Relaxed),
        }
    }
}

impl Drop for HostileServer {
    fn drop(&mut self) {
        // Aborting the accept loop drops its JoinSet, which aborts every connection task.
        self.task.abort();
    }
}

struct Shared {
    hostility: Hostility,
    scope: Scope,
    run_id: String,
    counters: Arc<Counters>,
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                shared.counters.accepted.fetch_add(1, Ordering::Relaxed);
                conns.spawn(serve(stream, Arc::clone(&shared)));
            }
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
}

/// Serves one connection until the client closes it, an I/O error, or the behaviour ends it.
async fn serve(mut stream: TcpStream, shared: Arc<Shared>) {
    let _ = stream.set_nodelay(true);
    let c = &shared.counters;
    if let Hostility::Unsolicited(bytes) = &shared.hostility
        && send(&mut stream, c, bytes.clone()).await.is_err()
    {
        return;
    }
    let mut buf = Vec::new();
    let mut chunk = vec![0u8; 16 * 1024];
    loop {
        // Answer every complete request in the buffer.
        while let Some((args, used)) = parse_request(&buf) {
            buf.drain(..used);
            c.requests.fetch_add(1, Ordering::Relaxed);
            let hostile = match shared.scope {
                Scope::All => true,
                Scope::Lock => !is_setup(&args),
            };
            if !hostile {
                if send(&mut stream, c, honest(&args, &shared.run_id))
                    .await
                    .is_err()
                {
                    return;
                }
                continue;
            }
            c.hostile.fetch_add(1, Ordering::Relaxed);
            let out = match &shared.hostility {
                Hostility::Reply(bytes) => bytes.clone(),
                Hostility::Silent => Vec::new(),
                Hostility::Unsolicited(_) => honest(&args, &shared.run_id),
                Hostility::Double(extra) => {
                    let mut out = honest(&args, &shared.run_id);
                    out.extend_from_slice(extra);
                    out
                }
                Hostility::Close(bytes) => {
                    let _ = send(&mut stream, c, bytes.clone()).await;
                    let _ = stream.shutdown().await;
                    return;
                }
                Hostility::Trickle {
                    prefix,
                    chunk: piece,
                    gap,
                } => {
                    {
                        let (mut rd, mut wr) = stream.into_split();
                        let (piece, gap) = (piece.clone(), *gap);
                        let prefix = prefix.clone();
                        let counters = Arc::clone(&shared.counters);
                        // Keep reading (and ignoring) requests, so the client never blocks on
                        // a full socket; write the endless reply meanwhile.
                        let reader = async move {
                            let mut sink = vec![0u8; 16 * 1024];
                            while matches!(rd.read(&mut sink).await, Ok(n) if n > 0) {}
                        };
                        let writer = async move {
                            let len = |b: &[u8]| u64::try_from(b.len()).unwrap_or(u64::MAX);
                            if wr.write_all(&prefix).await.is_err() {
                                return;
                            }
                            counters.written.fetch_add(len(&prefix), Ordering::Relaxed);
                            loop {
                                tokio::time::sleep(gap).await;
                                if wr.write_all(&piece).await.is_err() {
                                    return;
                                }
                                counters.written.fetch_add(len(&piece), Ordering::Relaxed);
                            }
                        };
                        tokio::select! {
                            () = reader => {}
                            () = writer => {}
                        }
                        return;
                    }
                }
            };
            if !out.is_empty() && send(&mut stream, c, out).await.is_err() {
                return;
            }
        }
        if buf.len() > MAX_REQUEST {
            return;
        }
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

async fn send(stream: &mut TcpStream, c: &Counters, bytes: Vec<u8>) -> io::Result<()> {
    let n = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
    c.written.fetch_add(n, Ordering::Relaxed);
    stream.write_all(&bytes).await
}

/// Connection set-up and the engine's probe: answered honestly under [`Scope::Lock`].
fn is_setup(args: &[Vec<u8>]) -> bool {
    let name = args
        .first()
        .map(|a| a.to_ascii_uppercase())
        .unwrap_or_default();
    matches!(
        name.as_slice(),
        b"CLIENT" | b"INFO" | b"CONFIG" | b"PING" | b"SELECT" | b"AUTH" | b"HELLO"
    )
}

/// What a durable Redis 7 master with no keys would answer.
fn honest(args: &[Vec<u8>], run_id: &str) -> Vec<u8> {
    let name = args
        .first()
        .map(|a| a.to_ascii_uppercase())
        .unwrap_or_default();
    let arg = |i: usize| {
        args.get(i)
            .map(|a| a.to_ascii_lowercase())
            .unwrap_or_default()
    };
    match name.as_slice() {
        b"PING" => match args.get(1) {
            Some(echo) => bulk(echo),
            None => b"+PONG\r\n".to_vec(),
        },
        b"INFO" => bulk(
            format!(
                "# Server\r\nredis_version:7.0.15\r\nrun_id:{run_id}\r\nuptime_in_seconds:3600\r\n\r\n# Replication\r\nrole:master\r\n\r\n# Memory\r\nmaxmemory:0\r\nmaxmemory_policy:noeviction\r\n\r\n# Cluster\r\ncluster_enabled:0\r\n"
            )
            .as_bytes(),
        ),
        b"CONFIG" if arg(1) == b"get" => {
            let pairs: &[&str] = match arg(2).as_slice() {
                b"append*" => &["appendonly", "yes", "appendfsync", "always"],
                b"no-appendfsync-on-rewrite" => &["no-appendfsync-on-rewrite", "no"],
                _ => &[],
            };
            let mut out = format!("*{}\r\n", pairs.len()).into_bytes();
            for p in pairs {
                out.extend_from_slice(&bulk(p.as_bytes()));
            }
            out
        }
        b"CLIENT" | b"SELECT" | b"AUTH" | b"SET" => b"+OK\r\n".to_vec(),
        b"EVALSHA" => b"-NOSCRIPT No matching script. Please use EVAL.\r\n".to_vec(),
        b"EVAL" | b"EXISTS" | b"DEL" | b"PUBLISH" => b":0\r\n".to_vec(),
        b"SUBSCRIBE" => {
            let channel = args.get(1).cloned().unwrap_or_default();
            let mut out = b"*3\r\n$9\r\nsubscribe\r\n".to_vec();
            out.extend_from_slice(&bulk(&channel));
            out.extend_from_slice(b":1\r\n");
            out
        }
        _ => b"-ERR unknown command\r\n".to_vec(),
    }
}

fn bulk(b: &[u8]) -> Vec<u8> {
    let mut out = format!("${}\r\n", b.len()).into_bytes();
    out.extend_from_slice(b);
    out.extend_from_slice(b"\r\n");
    out
}

/// One request (a RESP array of bulk strings, or an inline command line) from the front of
/// `buf`, with the bytes it used; `None` when incomplete. Malformed input counts as one
/// request without arguments (it gets the hostile or the error answer).
fn parse_request(buf: &[u8]) -> Option<(Vec<Vec<u8>>, usize)> {
    let line = |at: usize| -> Option<(&[u8], usize)> {
        let rest = buf.get(at..)?;
        let end = rest.windows(2).position(|w| w == b"\r\n")?;
        Some((&rest[..end], at + end + 2))
    };
    let number = |b: &[u8]| std::str::from_utf8(b).ok()?.parse::<usize>().ok();
    let (first, mut at) = line(0)?;
    if first.first() != Some(&b'*') {
        let args = first
            .split(|b| *b == b' ')
            .filter(|a| !a.is_empty())
            .map(<[u8]>::to_vec)
            .collect();
        return Some((args, at));
    }
    let Some(n) = number(&first[1..]) else {
        return Some((Vec::new(), at));
    };
    let mut args = Vec::with_capacity(n.min(64));
    for _ in 0..n {
        let (head, next) = line(at)?;
        let Some(len) = head.strip_prefix(b"$").and_then(number) else {
            return Some((Vec::new(), next));
        };
        let end = next.checked_add(len)?;
        if buf.len() < end + 2 {
            return None;
        }
        args.push(buf[next..end].to_vec());
        at = end + 2;
    }
    Some((args, at))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_parse_incrementally() {
        let req = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\nv1\r\n";
        for cut in 0..req.len() {
            assert!(parse_request(&req[..cut]).is_none(), "{cut}");
        }
        let (args, used) = parse_request(req).unwrap_or_default();
        assert_eq!(used, req.len());
        assert_eq!(args, vec![b"SET".to_vec(), b"k".to_vec(), b"v1".to_vec()]);
        let (args, used) = parse_request(b"PING x\r\n+").unwrap_or_default();
        assert_eq!((args.len(), used), (2, 8));
    }
}
