//! One `redis-server` child process: finding the binary, free ports, spawning, readiness.

use std::collections::HashSet;
use std::fs::{self, File};
use std::io;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use nix::sys::signal::Signal;

use crate::cluster::Persist;
use crate::run;

/// How long a node gets to answer `PING` after it was spawned.
const READY_TIMEOUT_MS: u64 = 5_000;
/// Attempts at finding a free port for one node.
const PORT_TRIES: usize = 20;
/// A TLS node's Unix socket for the harness's own commands, in its folder.
const ADMIN_SOCKET: &str = "redis.sock";

/// The `redis-server` binary and what its version supports.
#[derive(Debug, Clone)]
pub(crate) struct Server {
    path: PathBuf,
    /// Redis >= 7 knows `--enable-debug-command`.
    debug_flag: bool,
}

impl Server {
    /// Finds the binary (`QL_REDIS_SERVER`, else `PATH`) and reads its version.
    pub(crate) fn find() -> io::Result<Server> {
        let path = server_path().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                "redis-server not found: install it with apt-get install -y redis-server",
            )
        })?;
        let out = Command::new(&path)
            .arg("--version")
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()?;
        let text = String::from_utf8_lossy(&out.stdout);
        let major = text
            .split_whitespace()
            .find_map(|w| w.strip_prefix("v="))
            .and_then(|v| v.split('.').next()?.parse::<u32>().ok())
            .ok_or_else(|| {
                io::Error::other(format!(
                    "{}: cannot read version from {text:?}",
                    path.display()
                ))
            })?;
        Ok(Server {
            path,
            debug_flag: major >= 7,
        })
    }
}

/// `QL_REDIS_SERVER` if set, else the first executable `redis-server` on `PATH`.
pub(crate) fn server_path() -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &Path| {
        fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if let Some(p) = std::env::var_os("QL_REDIS_SERVER").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p)).filter(|p| executable(p));
    }
    let dirs = std::env::var_os("PATH")?;
    std::env::split_paths(&dirs)
        .map(|d| d.join("redis-server"))
        .find(|p| executable(p))
}

/// Picks a port in 20000–32000 (or `QL_BASE_PORT`..+1000) that binds on 127.0.0.1 and is not
/// in `used`.
fn pick_port(used: &mut HashSet<u16>) -> io::Result<u16> {
    let base: u16 = std::env::var("QL_BASE_PORT")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_000);
    let span = if base == 20_000 { 12_000 } else { 1_000 };
    for _ in 0..PORT_TRIES {
        let offset = u16::try_from(run::random_u64() % span).unwrap_or(0);
        let port = base.saturating_add(offset);
        if used.contains(&port) {
            continue;
        }
        if TcpListener::bind((Ipv4Addr::LOCALHOST, port)).is_ok() {
            used.insert(port);
            return Ok(port);
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AddrInUse,
        format!("no free port after {PORT_TRIES} tries"),
    ))
}

/// One node: its fixed port and folder, and its current process if it runs.
#[derive(Debug)]
pub(crate) struct Node {
    pub(crate) port: u16,
    pub(crate) dir: PathBuf,
    pub(crate) persist: Persist,
    /// Further `redis-server` arguments (cluster mode), kept across restarts.
    pub(crate) extra: Vec<String>,
    /// For a TLS node, its TLS arguments (kept across restarts): it then listens with TLS
    /// only on `port`, and the harness talks to it on its Unix socket ([`Node::admin`]).
    pub(crate) tls: Option<Vec<String>>,
    /// PID of the current process, or of the last one if it was killed.
    pub(crate) pid: u32,
    pub(crate) child: Option<Child>,
}

#[derive(Debug, PartialEq, Eq)]
enum Status {
    Ready,
    Starting,
    Exited { addr_in_use: bool },
}

impl Node {
    pub(crate) fn addr(&self) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::LOCALHOST, self.port))
    }

    pub(crate) fn log_path(&self) -> PathBuf {
        self.dir.join("redis.log")
    }

    /// Where the harness sends its own commands: the TCP port, or a TLS node's Unix socket.
    pub(crate) fn admin(&self) -> crate::resp::Endpoint {
        if self.tls.is_some() {
            crate::resp::Endpoint::Unix(self.dir.join(ADMIN_SOCKET))
        } else {
            crate::resp::Endpoint::Tcp(self.addr())
        }
    }

    /// Spawns the server (not waiting for it) and records its PID and port.
    fn spawn(
        server: &Server,
        dir: PathBuf,
        port: u16,
        persist: Persist,
        extra: &[String],
        tls: Option<&[String]>,
    ) -> io::Result<Node> {
        fs::create_dir_all(&dir)?;
        let stderr = File::create(dir.join("stderr"))?;
        let mut cmd = Command::new(&server.path);
        match tls {
            None => cmd.arg("--port").arg(port.to_string()),
            Some(args) => cmd
                .args(["--port", "0", "--tls-port"])
                .arg(port.to_string())
                .args(args)
                .arg("--unixsocket")
                .arg(dir.join(ADMIN_SOCKET))
                .args(["--unixsocketperm", "700"]),
        };
        cmd.args(["--bind", "127.0.0.1", "--dir"])
            .arg(&dir)
            .arg("--logfile")
            .arg(dir.join("redis.log"))
            .args(["--save", "", "--maxmemory-policy", "noeviction"]);
        if server.debug_flag {
            cmd.args(["--enable-debug-command", "local"]);
        }
        if let Some(shim) = crate::skew::shim_path() {
            let control = dir.join(crate::skew::FILE_NAME);
            crate::skew::init(&control)?;
            cmd.env("LD_PRELOAD", shim).env("SKEWCLOCK_FILE", control);
        }
        cmd.args(persist.server_args())
            .args(extra)
            .current_dir(&dir)
            .stdin(Stdio::null())
            .stdout(stderr.try_clone()?)
            .stderr(stderr);
        let child = run::spawn_unmasked(&mut cmd).map_err(|e| {
            io::Error::new(e.kind(), format!("spawn {}: {e}", server.path.display()))
        })?;
        let pid = child.id();
        fs::write(dir.join("pid"), format!("{pid}\n"))?;
        fs::write(dir.join("port"), format!("{port}\n"))?;
        Ok(Node {
            port,
            dir,
            persist,
            extra: extra.to_vec(),
            tls: tls.map(<[String]>::to_vec),
            pid,
            child: Some(child),
        })
    }

    fn status(&mut self) -> Status {
        let Some(child) = self.child.as_mut() else {
            return Status::Exited { addr_in_use: false };
        };
        if !matches!(child.try_wait(), Ok(None)) {
            self.child = None;
            let in_use = |f: &str| {
                fs::read_to_string(self.dir.join(f))
                    .is_ok_and(|s| s.contains("Address already in use"))
            };
            return Status::Exited {
                addr_in_use: in_use("redis.log") || in_use("stderr"),
            };
        }
        // Ready only when the server on the port is our child: another test's server may
        // hold the port while ours is still starting (and about to fail with "Address
        // already in use"), and must never be taken for ours. And only once it has loaded
        // its data: `INFO` is answered while loading, when other commands get `LOADING`.
        let info = self
            .admin()
            .command_timeout(&[b"INFO"], Duration::from_millis(200));
        let ours = format!("process_id:{}\r\n", self.pid);
        match info {
            Ok(crate::Reply::Bulk(text)) => {
                let text = String::from_utf8_lossy(&text);
                if text.contains(&ours) && text.contains("\r\nloading:0\r\n") {
                    Status::Ready
                } else {
                    Status::Starting
                }
            }
            _ => Status::Starting,
        }
    }

    fn exit_error(&self, what: &str) -> io::Error {
        io::Error::other(format!(
            "redis-server on port {} {what}; last lines of {}:\n{}",
            self.port,
            self.log_path().display(),
            run::tail(&self.log_path(), 20)
        ))
    }

    /// SIGKILLs the current process, if any, and waits for it.
    pub(crate) fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            run::signal(self.pid, Signal::SIGKILL);
            let _ = child.wait();
        }
    }

    /// Kills the node if it runs, then starts it again on the same port and folder and waits
    /// until it answers `PING`.
    pub(crate) fn restart(&mut self, server: &Server, persist: Persist) -> io::Result<()> {
        self.kill();
        let fresh = Node::spawn(
            server,
            self.dir.clone(),
            self.port,
            persist,
            &self.extra,
            self.tls.as_deref(),
        )?;
        // Take over the new process: from here on our Drop kills it.
        let _ = std::mem::replace(self, fresh);
        let deadline = crate::now_us() + READY_TIMEOUT_MS * 1000;
        loop {
            match self.status() {
                Status::Ready => return Ok(()),
                Status::Exited { .. } => return Err(self.exit_error("exited while restarting")),
                Status::Starting if crate::now_us() >= deadline => {
                    self.kill();
                    return Err(self.exit_error("did not answer PING within 5 s"));
                }
                Status::Starting => crate::sleep_ms(10),
            }
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Starts `n` nodes in `run_dir/n<i>` in parallel and waits until each answers `PING`. A node
/// whose port was taken meanwhile is moved to another port (up to 20 times). On error every
/// node started so far is killed. `tls(i)` gives node `i`'s TLS arguments, if it is a TLS node.
pub(crate) fn start_all(
    server: &Server,
    run_dir: &Path,
    n: usize,
    persist: Persist,
    extra: &[String],
    tls: &dyn Fn(usize) -> Option<Vec<String>>,
) -> io::Result<Vec<Node>> {
    let mut used = HashSet::new();
    let mut nodes = Vec::with_capacity(n);
    for i in 0..n {
        let port = pick_port(&mut used)?;
        nodes.push(Node::spawn(
            server,
            run_dir.join(format!("n{i}")),
            port,
            persist,
            extra,
            tls(i).as_deref(),
        )?);
    }
    let mut tries = vec![1usize; n];
    let mut deadlines = vec![crate::now_us() + READY_TIMEOUT_MS * 1000; n];
    let mut pending: Vec<usize> = (0..n).collect();
    while !pending.is_empty() {
        let mut still = Vec::with_capacity(pending.len());
        for i in pending {
            match nodes[i].status() {
                Status::Ready => {}
                Status::Starting if crate::now_us() >= deadlines[i] => {
                    return Err(nodes[i].exit_error("did not answer PING within 5 s"));
                }
                Status::Starting => still.push(i),
                Status::Exited { addr_in_use: true } if tries[i] < PORT_TRIES => {
                    tries[i] += 1;
                    let port = pick_port(&mut used)?;
                    let dir = nodes[i].dir.clone();
                    // A fresh log, so an old "Address already in use" is not read again.
                    let _ = fs::remove_file(dir.join("redis.log"));
                    let args = nodes[i].tls.clone();
                    nodes[i] = Node::spawn(server, dir, port, persist, extra, args.as_deref())?;
                    deadlines[i] = crate::now_us() + READY_TIMEOUT_MS * 1000;
                    still.push(i);
                }
                Status::Exited { .. } => return Err(nodes[i].exit_error("exited at start")),
            }
        }
        pending = still;
        if !pending.is_empty() {
            crate::sleep_ms(10);
        }
    }
    Ok(nodes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_servers_port_is_never_taken_for_ours() {
        let server = Server::find().expect("redis-server");
        let run = std::env::temp_dir().join(format!("ql-node-test-{}", std::process::id()));
        let mut theirs = start_all(&server, &run.join("theirs"), 1, Persist::None, &[], &|_| {
            None
        })
        .expect("start");
        // Ours is spawned on the port their server holds: it answers PING at once, but it is
        // not our child, so ours is not ready; ours then fails to bind.
        let mut ours = Node::spawn(
            &server,
            run.join("ours"),
            theirs[0].port,
            Persist::None,
            &[],
            None,
        )
        .expect("spawn");
        let mut seen = Vec::new();
        for _ in 0..300 {
            let st = ours.status();
            let done = matches!(st, Status::Exited { .. });
            seen.push(st);
            if done {
                break;
            }
            crate::sleep_ms(10);
        }
        assert!(!seen.contains(&Status::Ready), "{seen:?}");
        assert_eq!(seen.last(), Some(&Status::Exited { addr_in_use: true }));
        theirs[0].kill();
        let _ = fs::remove_dir_all(&run);
    }
}
