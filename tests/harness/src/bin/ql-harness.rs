//! `ql-harness`: the quorumlock test harness for Python, Node, C and the CLI tests
//! (`docs/TESTING.md` §2.5). Prints machine-readable JSON lines on stdout; diagnostics go to
//! stderr.

#![forbid(unsafe_code)]

use std::ffi::OsString;
use std::fs::{self, File};
use std::io::{self, BufRead, BufReader, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use nix::sys::signal::{SigSet, Signal};
use quorumlock_harness::{Cluster, Persist, Tls, ctl, now_us, run};
use serde_json::{Value, json};

/// Start, control and stop clusters of real redis-server nodes for quorumlock's tests.
#[derive(Parser)]
#[command(name = "ql-harness", version)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Start a cluster under a supervisor process, print one JSON line, exit 0.
    Start(StartArgs),
    /// Internal: the supervisor started by `start`.
    #[command(hide = true)]
    Supervise {
        #[command(flatten)]
        start: StartArgs,
        /// Run folder chosen by `start`.
        #[arg(long)]
        run_dir: PathBuf,
        /// Start time of the parent (from `/proc/<pid>/stat`), read by `start`.
        #[arg(long, default_value_t = 0)]
        parent_start: u64,
    },
    /// Send one JSON command to a running cluster and print the answer; exit 1 unless ok.
    Ctl {
        /// The run folder printed by `start`.
        run_dir: PathBuf,
        /// One JSON object, e.g. '{"op":"pause","node":1}'.
        json: String,
    },
    /// Stop every process of a run by PID, wait for them, delete the folder.
    Stop {
        /// The run folder printed by `start`.
        run_dir: PathBuf,
    },
    /// Start a cluster, run a command with QL_NODES and QL_RUN_DIR set, stop the cluster, and
    /// exit with the command's exit code.
    Exec {
        #[command(flatten)]
        cluster: ClusterArgs,
        /// The command and its arguments.
        #[arg(last = true, required = true)]
        command: Vec<OsString>,
    },
    /// Check saved histories (JSON lines of windows, as the fault tests save them): print
    /// each overlap and each fencing token that did not increase as a JSON line; exit 1 if
    /// any.
    Check {
        /// History files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Kill orphaned nodes of runs whose owner died and delete their folders.
    Gc {
        /// Also delete folders kept for inspection (failed tests, QL_KEEP_RUNS=1).
        #[arg(long)]
        kept: bool,
    },
}

#[derive(Args, Clone)]
struct ClusterArgs {
    /// Number of nodes.
    #[arg(long, default_value_t = 5)]
    nodes: usize,
    /// Persistence: always, none or everysec.
    #[arg(long, default_value = "always")]
    persist: Persist,
    /// Also start one Redis Cluster with this many masters (0: none, else at least 3); its URL is
    /// `redis_cluster.url` in the JSON line and QL_REDIS_CLUSTER for `exec`.
    #[arg(long, default_value_t = 0)]
    redis_cluster: usize,
    /// Replicas per master of that Redis Cluster.
    #[arg(long, default_value_t = 0)]
    cluster_replicas: usize,
    /// TLS-only nodes (`--port 0 --tls-port P`) with certificates made in the run folder:
    /// the URLs are `rediss://...?tls_ca=...`; `exec` also sets QL_TLS_CA, QL_TLS_CERT,
    /// QL_TLS_KEY and QL_TLS_OTHER_CA.
    #[arg(long)]
    tls: bool,
    /// Like --tls, and the nodes require a client certificate (`--tls-auth-clients yes`);
    /// the URLs also name the client certificate and key.
    #[arg(long, conflicts_with = "tls")]
    mtls: bool,
}

impl ClusterArgs {
    /// The independent nodes these arguments ask for.
    fn builder(&self) -> quorumlock_harness::Builder {
        let b = Cluster::builder().nodes(self.nodes).persist(self.persist);
        if self.mtls {
            b.tls(Tls::Mutual)
        } else if self.tls {
            b.tls(Tls::Server)
        } else {
            b
        }
    }

    /// The Redis Cluster these arguments ask for, in `dir`, if any.
    fn start_redis_cluster(&self, dir: &Path) -> io::Result<Option<Cluster>> {
        if self.redis_cluster == 0 {
            return Ok(None);
        }
        Cluster::builder()
            .nodes(self.redis_cluster * (1 + self.cluster_replicas))
            .persist(self.persist)
            .redis_cluster(self.cluster_replicas)
            .run_dir(dir.join(run::REDIS_CLUSTER_DIR))
            .start()
            .map(Some)
    }
}

#[derive(Args, Clone)]
struct StartArgs {
    #[command(flatten)]
    cluster: ClusterArgs,
    /// Stop the cluster when this process is gone.
    #[arg(long)]
    parent: Option<u32>,
    /// Stop the cluster after this many seconds in any case.
    #[arg(long, default_value_t = 600)]
    max_lifetime: u64,
}

/// `ql-harness check`: the overlap checker and the token oracle over saved histories.
fn check(files: &[PathBuf]) -> io::Result<ExitCode> {
    let mut out = io::stdout().lock();
    let mut found = 0usize;
    for file in files {
        let rec = quorumlock_harness::history::Recorder::read_jsonl(file)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", file.display())))?;
        for v in rec.violations() {
            found += 1;
            let line = json!({"file": file, "overlap": {
                "resource": v.resource, "overlap_us": v.overlap_us,
                "a": {"holder": v.a.holder, "start_us": v.a.start_us, "end_us": v.a.end_us},
                "b": {"holder": v.b.holder, "start_us": v.b.start_us, "end_us": v.b.end_us},
            }});
            writeln!(out, "{line}")?;
        }
        for r in rec.token_regressions() {
            found += 1;
            let line = json!({"file": file, "token_regression": {
                "resource": r.earlier.resource,
                "earlier": {"holder": r.earlier.holder, "start_us": r.earlier.start_us, "token": r.earlier.token},
                "later": {"holder": r.later.holder, "start_us": r.later.start_us, "token": r.later.token},
            }});
            writeln!(out, "{line}")?;
        }
        let windows = rec.windows().len();
        eprintln!("{}: {windows} windows checked", file.display());
    }
    Ok(if found == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn main() -> ExitCode {
    let result = match Cli::parse().cmd {
        Cmd::Start(args) => start(&args),
        Cmd::Supervise {
            start,
            run_dir,
            parent_start,
        } => supervise(&start, &run_dir, parent_start),
        Cmd::Ctl { run_dir, json } => ctl_cmd(&run_dir, &json),
        Cmd::Stop { run_dir } => stop(&run_dir),
        Cmd::Exec { cluster, command } => exec(&cluster, &command),
        Cmd::Check { files } => check(&files),
        Cmd::Gc { kept } => {
            let r = run::sweep(kept);
            let line =
                json!({"event": "gc", "killed": r.killed, "removed": r.removed, "kept": r.kept});
            println!("{line}");
            Ok(ExitCode::SUCCESS)
        }
    };
    result.unwrap_or_else(|e| {
        eprintln!("ql-harness: {e}");
        ExitCode::FAILURE
    })
}

fn start(args: &StartArgs) -> io::Result<ExitCode> {
    let parent_start = match args.parent {
        Some(pid) => run::start_time(pid)
            .filter(|_| run::pid_alive(pid))
            .ok_or_else(|| io::Error::other(format!("--parent {pid}: no such process")))?,
        None => 0,
    };
    let dir = run::new_run_dir()?;
    // Until the supervisor takes over owner.pid, this process owns the folder.
    run::write_owner(&dir)?;
    let mut cmd = Command::new(std::env::current_exe()?);
    cmd.arg("supervise")
        .arg("--run-dir")
        .arg(&dir)
        .args(["--nodes", &args.cluster.nodes.to_string()])
        .args(["--persist", args.cluster.persist.as_str()])
        .args(["--redis-cluster", &args.cluster.redis_cluster.to_string()])
        .args([
            "--cluster-replicas",
            &args.cluster.cluster_replicas.to_string(),
        ])
        .args(["--max-lifetime", &args.max_lifetime.to_string()])
        .args(args.cluster.tls.then_some("--tls"))
        .args(args.cluster.mtls.then_some("--mtls"))
        .args(["--parent-start", &parent_start.to_string()]);
    if let Some(pid) = args.parent {
        cmd.args(["--parent", &pid.to_string()]);
    }
    let mut child = cmd
        .current_dir(&dir)
        .stdin(Stdio::null())
        .stdout(File::create(dir.join("supervisor.out"))?)
        .stderr(File::create(dir.join("supervisor.err"))?)
        .process_group(0)
        .spawn()?;
    let up = dir.join("up.json");
    let deadline = now_us() + 30_000_000;
    loop {
        if let Ok(text) = fs::read_to_string(&up) {
            // Written to a temporary file and renamed, so it is complete.
            println!("{}", text.trim());
            return Ok(ExitCode::SUCCESS);
        }
        if let Some(status) = child.try_wait()? {
            let msg = run::tail(&dir.join("supervisor.err"), 30);
            if !dir.join(run::KEPT_MARKER).exists() && !run::keep_runs_env() {
                let _ = fs::remove_dir_all(&dir);
            }
            return Err(io::Error::other(format!(
                "supervisor exited ({status}):\n{msg}"
            )));
        }
        if now_us() >= deadline {
            run::signal(child.id(), Signal::SIGTERM);
            if !run::wait_gone(child.id(), 5_000) {
                run::signal(child.id(), Signal::SIGKILL);
            }
            let _ = child.wait();
            return Err(io::Error::other(format!(
                "cluster not up after 30 s; see {}",
                dir.display()
            )));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Stop signals, handled by a thread in `sigwait` (no signal handlers, no unsafe). Children
/// must be spawned with [`run::spawn_unmasked`], or they inherit the blocked mask.
fn stop_signals() -> io::Result<SigSet> {
    let mut set = SigSet::empty();
    for sig in [Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP] {
        set.add(sig);
    }
    set.thread_block().map_err(io::Error::from)?;
    Ok(set)
}

enum Event {
    Ctl(String, UnixStream),
    Signal(Signal),
}

fn supervise(args: &StartArgs, dir: &Path, parent_start: u64) -> io::Result<ExitCode> {
    let signals = stop_signals()?;
    let (tx, rx) = mpsc::channel::<Event>();
    let sig_tx = tx.clone();
    std::thread::spawn(move || {
        if let Ok(sig) = signals.wait() {
            let _ = sig_tx.send(Event::Signal(sig));
        }
    });

    let mut cluster = args.cluster.builder().run_dir(dir).start()?;
    let redis_cluster = args.cluster.start_redis_cluster(dir)?;
    // Our cwd is the run folder: a relative path keeps us under the 108-byte socket limit.
    let _ = fs::remove_file("ctl.sock");
    let listener = UnixListener::bind("ctl.sock")?;
    std::thread::spawn(move || accept_loop(&listener, &tx));

    let mut up = ctl::up_json(&cluster, std::process::id());
    if let Some(rc) = &redis_cluster {
        up["redis_cluster"] = ctl::redis_cluster_json(rc);
    }
    fs::write(dir.join("up.json.tmp"), format!("{up}\n"))?;
    fs::rename(dir.join("up.json.tmp"), dir.join("up.json"))?;
    eprintln!("supervisor up: {up}");

    let deadline = now_us().saturating_add(args.max_lifetime.saturating_mul(1_000_000));
    let reason = loop {
        match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(Event::Ctl(line, mut stream)) => {
                let (answer, stop) = ctl::handle(&mut cluster, &line);
                let _ = writeln!(stream, "{answer}");
                if stop {
                    break "stop command".to_string();
                }
            }
            Ok(Event::Signal(sig)) => break format!("signal {sig}"),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break "control socket closed".into(),
        }
        if let Some(pid) = args.parent
            && !run::same_process(pid, parent_start)
        {
            break format!("parent {pid} is gone");
        }
        if now_us() >= deadline {
            break format!("max lifetime of {} s reached", args.max_lifetime);
        }
    };
    eprintln!("supervisor stopping: {reason}");
    let _ = fs::remove_file("ctl.sock");
    drop(redis_cluster);
    drop(cluster);
    Ok(ExitCode::SUCCESS)
}

fn accept_loop(listener: &UnixListener, tx: &mpsc::Sender<Event>) {
    for stream in listener.incoming() {
        let Ok(stream) = stream else {
            // Out of file descriptors or similar: do not spin.
            std::thread::sleep(Duration::from_millis(10));
            continue;
        };
        let tx = tx.clone();
        std::thread::spawn(move || {
            let Ok(reader) = stream.try_clone() else {
                return;
            };
            for line in BufReader::new(reader).lines() {
                let Ok(line) = line else { return };
                if line.trim().is_empty() {
                    continue;
                }
                let Ok(writer) = stream.try_clone() else {
                    return;
                };
                if tx.send(Event::Ctl(line, writer)).is_err() {
                    return;
                }
            }
        });
    }
}

/// Sends one request line to the supervisor of `dir` and reads one answer line.
fn request(dir: &Path, req: &Value, timeout: Duration) -> io::Result<Value> {
    // Connect by a relative path: absolute socket paths may exceed 108 bytes.
    std::env::set_current_dir(dir)?;
    let mut stream = UnixStream::connect("ctl.sock")?;
    stream.set_read_timeout(Some(timeout))?;
    writeln!(stream, "{req}")?;
    let mut line = String::new();
    BufReader::new(stream).read_line(&mut line)?;
    serde_json::from_str(&line).map_err(|e| io::Error::other(format!("bad answer {line:?}: {e}")))
}

fn ctl_cmd(dir: &Path, text: &str) -> io::Result<ExitCode> {
    let answer = match serde_json::from_str::<Value>(text) {
        Ok(req) => request(dir, &req, Duration::from_secs(60))
            .unwrap_or_else(|e| ctl::error(&format!("{}: {e}", dir.display()))),
        Err(e) => ctl::error(&format!("bad JSON: {e}")),
    };
    println!("{answer}");
    let ok = answer.get("ok").and_then(Value::as_bool) == Some(true);
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn stop(dir: &Path) -> io::Result<ExitCode> {
    if !dir.is_dir() {
        eprintln!(
            "ql-harness stop: {} does not exist (already stopped?)",
            dir.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let dir = std::path::absolute(dir)?;
    let owner = fs::read_to_string(dir.join("owner.pid")).unwrap_or_default();
    let mut it = owner
        .split_whitespace()
        .map(|t| t.parse::<u64>().ok().unwrap_or(0));
    let pid = it.next().and_then(|p| u32::try_from(p).ok()).unwrap_or(0);
    let pid_start = it.next().unwrap_or(0);
    let supervisor = pid != 0 && run::same_process(pid, pid_start) && is_supervisor(pid, &dir);

    let asked = request(&dir, &json!({"op": "stop"}), Duration::from_secs(10))
        .is_ok_and(|a| a.get("ok").and_then(Value::as_bool) == Some(true));
    let mut gone = !supervisor || run::wait_gone(pid, 10_000);
    if !asked || !gone {
        eprintln!("ql-harness stop: supervisor did not stop cleanly; killing by PID");
        if supervisor {
            run::signal(pid, Signal::SIGKILL);
            gone = run::wait_gone(pid, 2_000);
        }
    }
    // Nodes of a supervisor that was killed, or never answered (verified by /proc).
    run::kill_recorded_nodes(&dir);
    if !run::keep_runs_env() {
        let _ = fs::remove_dir_all(&dir);
    }
    println!(
        "{}",
        json!({"event": "stopped", "run_dir": dir, "clean": asked && gone})
    );
    Ok(if gone {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// True if `pid` is a `ql-harness supervise` for `dir`.
fn is_supervisor(pid: u32, dir: &Path) -> bool {
    fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| {
        let args: Vec<&[u8]> = c.split(|&b| b == 0).collect();
        args.contains(&&b"supervise"[..]) && args.contains(&dir.as_os_str().as_encoded_bytes())
    })
}

static EXEC_CHILD: AtomicU32 = AtomicU32::new(0);
static EXEC_SIGNAL: AtomicI32 = AtomicI32::new(0);

fn exec(args: &ClusterArgs, command: &[OsString]) -> io::Result<ExitCode> {
    let signals = stop_signals()?;
    // Forward SIGTERM/SIGINT/SIGHUP to the command, so we still stop the cluster afterwards.
    std::thread::spawn(move || {
        while let Ok(sig) = signals.wait() {
            EXEC_SIGNAL.store(sig as i32, Ordering::SeqCst);
            let pid = EXEC_CHILD.load(Ordering::SeqCst);
            if pid != 0 {
                run::signal(pid, sig);
            }
        }
    });
    let cluster = args.builder().start()?;
    let redis_cluster = args.start_redis_cluster(cluster.run_dir())?;
    let (program, rest) = command
        .split_first()
        .ok_or_else(|| io::Error::other("exec: no command given"))?;
    let mut cmd = Command::new(program);
    cmd.args(rest)
        .env("QL_NODES", cluster.urls().join(","))
        .env("QL_RUN_DIR", cluster.run_dir());
    if let Some(url) = redis_cluster.as_ref().and_then(Cluster::cluster_url) {
        cmd.env("QL_REDIS_CLUSTER", url);
    }
    if let Some((_, certs)) = cluster.tls() {
        cmd.envs(ctl::tls_env(certs));
    }
    let mut child = run::spawn_unmasked(&mut cmd)?;
    EXEC_CHILD.store(child.id(), Ordering::SeqCst);
    if let Ok(sig) = Signal::try_from(EXEC_SIGNAL.load(Ordering::SeqCst)) {
        run::signal(child.id(), sig);
    }
    let status = child.wait()?;
    EXEC_CHILD.store(0, Ordering::SeqCst);
    drop(redis_cluster);
    drop(cluster);
    let code = status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(1);
    Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)))
}
