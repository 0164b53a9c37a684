//! `quorumlock run`: acquire with auto-extension, run the command in its own process group,
//! forward signals to it, stop it when the lock is lost, release when it exits.

use std::ffi::OsString;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::ExitStatus;
use std::time::Duration;

use clap::Args;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use quorumlock::{CancelToken, DEFAULT_TTL, Error, Lock, LockOptions, MonoTime};
use serde_json::json;
use tokio::process::Child;
use tokio::signal::unix::{SignalKind, signal};

use crate::config::{DEFAULT_WAIT, Settings, connect, lock_duration, parse_duration};
use crate::{CliError, exit, report_json};

/// Arguments of `quorumlock run`.
#[derive(Args, Debug)]
pub(crate) struct RunArgs {
    /// Lock name (the resource).
    name: String,
    /// Lock time to live, renewed every ttl/3 while CMD runs [default: ttl from the config
    /// file, else 10s].
    #[arg(long, value_name = "DURATION")]
    ttl: Option<String>,
    /// How long to wait for a busy lock [default: wait from the config file, else 30s].
    #[arg(long, value_name = "DURATION", conflicts_with = "no_wait")]
    wait: Option<String>,
    /// Try once; exit 110 at once if the lock is busy.
    #[arg(long)]
    no_wait: bool,
    /// Acquire without a fencing token (QUORUMLOCK_TOKEN is then not set).
    #[arg(long)]
    no_fence: bool,
    /// After a lost lock, time between SIGTERM and SIGKILL to the command's process group.
    #[arg(long, value_name = "DURATION", default_value = "5s")]
    grace: String,
    /// The command and its arguments (after `--`).
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    command: Vec<OsString>,
}

/// SIGINT, SIGTERM and SIGHUP, caught from the start so that none of them kills the CLI
/// while it holds the lock.
struct Signals([tokio::signal::unix::Signal; 3]);

const CAUGHT: [Signal; 3] = [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP];

impl Signals {
    fn new() -> Result<Self, CliError> {
        let one = |s: Signal| {
            signal(SignalKind::from_raw(s as i32)).map_err(|e| {
                CliError::new(exit::NODES, "QL_SIGNAL", format!("cannot catch {s}: {e}"))
            })
        };
        Ok(Self([one(CAUGHT[0])?, one(CAUGHT[1])?, one(CAUGHT[2])?]))
    }

    /// The next caught signal.
    async fn recv(&mut self) -> Signal {
        let [int, term, hup] = &mut self.0;
        tokio::select! {
            _ = int.recv() => Signal::SIGINT,
            _ = term.recv() => Signal::SIGTERM,
            _ = hup.recv() => Signal::SIGHUP,
        }
    }
}

fn options(args: &RunArgs, settings: &Settings) -> Result<(LockOptions, Duration), CliError> {
    let ttl = match &args.ttl {
        Some(s) => lock_duration("ttl", "--ttl", s)?,
        None => settings.ttl.unwrap_or(DEFAULT_TTL),
    };
    let grace = parse_duration("--grace", &args.grace)?;
    let opts = LockOptions::default()
        .ttl(ttl)
        .auto_extend(true)
        .fenced(!args.no_fence);
    let opts = if args.no_wait {
        opts.retry_count(0)
    } else {
        let wait = match &args.wait {
            Some(s) => lock_duration("wait", "--wait", s)?,
            None => settings.wait.unwrap_or(DEFAULT_WAIT),
        };
        opts.retry_forever().wait(wait)
    };
    Ok((opts, grace))
}

/// Runs `args.command` while holding `args.name`; returns the exit code.
///
/// # Errors
/// Not acquired (110, 111, 113), interrupted while waiting (128 + signal), the command could
/// not start (126, 127), or the lock was lost (112).
pub(crate) async fn run(args: RunArgs, settings: &Settings, json: bool) -> Result<u8, CliError> {
    let (opts, grace) = options(&args, settings)?;
    let mut signals = Signals::new()?;
    let client = connect(settings, Some(&opts)).await?;
    let cancel = CancelToken::new();
    let acquire = client.acquire_cancellable([&args.name], &opts, &cancel);
    tokio::pin!(acquire);
    let lock = tokio::select! {
        r = &mut acquire => r?,
        sig = signals.recv() => {
            cancel.cancel();
            // A cancelled acquisition returns after its cleanup ran; a success decided
            // before the cancel is given back here.
            if let Ok(lock) = acquire.await {
                drop(lock.release().await);
            }
            return Err(CliError::new(
                128 + sig as u8,
                "QL_CANCELLED",
                format!("interrupted by {sig} while waiting for the lock"),
            ));
        }
    };
    tracing::info!(attempts = lock.attempts(), "acquired {:?}", args.name);
    let mut child = match spawn(&args, &lock) {
        Ok(child) => child,
        Err(e) => {
            drop(lock.release().await);
            return Err(e);
        }
    };
    let pid = child.id().unwrap_or(0);
    let group = Pid::from_raw(i32::try_from(pid).unwrap_or(0));
    let mut lost = lock.lost_signal();
    let mut watching = true;
    let loss = loop {
        tokio::select! {
            status = child.wait() => break Ended::Exited(status),
            e = lost.wait(), if watching => match e {
                Some(e) => break Ended::Lost(e),
                None => watching = false,
            },
            sig = signals.recv() => forward(group, sig),
        }
    };
    let (status, loss) = match loss {
        Ended::Exited(status) => (status, lost.get()),
        Ended::Lost(e) => {
            err!(
                "quorumlock: lock {:?} lost ({}); stopping the command (SIGTERM, SIGKILL after {})",
                args.name,
                e.lost_reason().map_or("?", |r| r.as_str()),
                humantime::format_duration(grace)
            );
            (stop(&mut child, group, grace, &mut signals).await, Some(e))
        }
    };
    let report = lock.release().await?;
    let status = status.map_err(|e| {
        CliError::new(
            exit::NODES,
            "QL_EXEC",
            format!("waiting for the command: {e}"),
        )
    })?;
    let code = exit_code(status);
    let child_json = json!({ "pid": pid, "status": code, "signal": status.signal() });
    if let Some(e) = loss {
        return Err(CliError::from(e).with_extra(json!({ "child": child_json })));
    }
    if !report.was_held_by_quorum() {
        tracing::warn!(%report, "the release found the lock on fewer than a quorum of nodes");
    }
    if json {
        let out = json!({
            "ok": true,
            "exit": code,
            "name": args.name,
            "attempts": lock.attempts(),
            "token": lock.token(),
            "extensions": lock.extensions(),
            "child": child_json,
            "released": report_json(&report),
        });
        err!("{out}");
    }
    Ok(code)
}

enum Ended {
    Exited(std::io::Result<ExitStatus>),
    Lost(Error),
}

/// The hidden first argument that makes the CLI the guard step of [`guard`].
pub(crate) const GUARD: &str = "__guard";

/// `quorumlock __guard PARENT CMD [ARGS...]`: the step between `run` and its command. It asks
/// the kernel to SIGKILL this process when the thread that started it ends
/// (`PR_SET_PDEATHSIG`, which `exec` keeps), checks that its parent is still the CLI `PARENT`,
/// and then becomes the command (`exec`). So a CLI killed with SIGKILL, which can neither
/// release nor stop anything, takes the command with it instead of leaving it running
/// without its lock. Processes the command started are not covered (they do not die with
/// it), and neither is any system without `PR_SET_PDEATHSIG` (Linux only). Exits 126 or 127,
/// as a shell does, when the command cannot run.
pub(crate) fn guard(args: Vec<OsString>) -> std::process::ExitCode {
    use std::process::ExitCode;
    let mut args = args.into_iter();
    let parent = args.next().and_then(|p| p.to_str()?.parse::<i32>().ok());
    let Some(program) = args.next() else {
        eprintln!("quorumlock: {GUARD} PARENT CMD [ARGS...] is started by `quorumlock run`");
        return ExitCode::from(exit::USAGE);
    };
    #[cfg(target_os = "linux")]
    if let Err(e) = nix::sys::prctl::set_pdeathsig(Signal::SIGKILL) {
        eprintln!("quorumlock: cannot tie the command to the CLI's life: {e}");
        return ExitCode::from(exit::CANNOT_EXEC);
    }
    // The CLI may have died before the request took effect: then nobody holds the lock.
    if parent != Some(nix::unistd::getppid().as_raw()) {
        eprintln!("quorumlock: the CLI that holds the lock is gone; not running the command");
        return ExitCode::from(exit::LOST);
    }
    let e = std::process::Command::new(&program).args(args).exec();
    eprintln!(
        "quorumlock: cannot run {:?}: {e}",
        program.to_string_lossy()
    );
    ExitCode::from(if e.kind() == std::io::ErrorKind::NotFound {
        exit::NOT_FOUND
    } else {
        exit::CANNOT_EXEC
    })
}

fn spawn(args: &RunArgs, lock: &Lock) -> Result<Child, CliError> {
    let (program, rest) = args
        .command
        .split_first()
        .ok_or_else(|| CliError::usage("no command given after --"))?;
    // Through the guard step when this binary can be found again; otherwise directly.
    let mut cmd = match std::env::current_exe() {
        Ok(me) => {
            let mut cmd = std::process::Command::new(me);
            cmd.arg(GUARD)
                .arg(std::process::id().to_string())
                .arg(program);
            cmd
        }
        Err(e) => {
            tracing::warn!(
                "cannot find the quorumlock binary again ({e}); the command will not die with the CLI"
            );
            std::process::Command::new(program)
        }
    };
    cmd.args(rest)
        .process_group(0)
        .env("QUORUMLOCK_NAME", &args.name)
        .env("QUORUMLOCK_VALUE", lock.value())
        .env(
            "QUORUMLOCK_VALIDITY_MS",
            lock.remaining().as_millis().to_string(),
        );
    if let Some(token) = lock.token() {
        cmd.env("QUORUMLOCK_TOKEN", token.to_string());
    }
    tokio::process::Command::from(cmd).spawn().map_err(|e| {
        let shown = program.to_string_lossy();
        let exit = if e.kind() == std::io::ErrorKind::NotFound {
            exit::NOT_FOUND
        } else {
            exit::CANNOT_EXEC
        };
        CliError::new(exit, "QL_EXEC", format!("cannot run {shown:?}: {e}"))
    })
}

/// Sends `sig` to the command's process group; a group already gone is not an error.
fn forward(group: Pid, sig: Signal) {
    tracing::debug!("forwarding {sig} to process group {group}");
    if let Err(e) = killpg(group, sig) {
        tracing::debug!("process group {group}: {e}");
    }
}

/// SIGTERM to the group; SIGKILL to it once `grace` has passed, unless the command and
/// everything else in its group ended before. Returns the command's status.
async fn stop(
    child: &mut Child,
    group: Pid,
    grace: Duration,
    signals: &mut Signals,
) -> std::io::Result<ExitStatus> {
    forward(group, Signal::SIGTERM);
    let deadline = MonoTime::now() + grace;
    let mut status = None;
    loop {
        let left = deadline.saturating_since(MonoTime::now());
        if left.is_zero() {
            break;
        }
        tokio::select! {
            s = child.wait(), if status.is_none() => status = Some(s),
            sig = signals.recv() => forward(group, sig),
            () = tokio::time::sleep(left.min(Duration::from_millis(50))) => {
                // The group is empty once the command and its descendants are gone.
                if status.is_some() && killpg(group, None).is_err() {
                    break;
                }
            }
        }
    }
    if status.is_none() || killpg(group, None).is_ok() {
        forward(group, Signal::SIGKILL);
    }
    match status {
        Some(s) => s,
        None => child.wait().await,
    }
}

/// The command's status as an exit code: its own code, or 128 + n when signal n killed it.
fn exit_code(status: ExitStatus) -> u8 {
    match (status.code(), status.signal()) {
        (Some(code), _) => u8::try_from(code & 0xff).unwrap_or(1),
        (None, Some(sig)) => u8::try_from((128 + sig) & 0xff).unwrap_or(1),
        (None, None) => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signal_deaths_become_128_plus_n() {
        assert_eq!(exit_code(ExitStatus::from_raw(3 << 8)), 3);
        assert_eq!(exit_code(ExitStatus::from_raw(0)), 0);
        assert_eq!(exit_code(ExitStatus::from_raw(9)), 137);
        assert_eq!(exit_code(ExitStatus::from_raw(15)), 143);
    }
}
