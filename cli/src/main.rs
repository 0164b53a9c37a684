//! `quorumlock`: run a command while holding a distributed lock over N independent Redis
//! masters, and inspect, release, break and ping from the shell. Every subcommand, option,
//! environment variable and exit code is listed in `docs/cli.md`.
#![forbid(unsafe_code)]

/// `println!` that ignores a closed stdout (`quorumlock status x | head -n 1`).
macro_rules! out {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($t)*);
    }};
}

/// `eprintln!` that ignores a closed stderr.
macro_rules! err {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($t)*);
    }};
}

mod admin;
mod config;
mod run;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{ArgAction, Args, Parser, Subcommand};
use quorumlock::{Error, ErrorKind, Report};
use serde_json::{Value, json};

/// The CLI's own exit codes (docs/cli.md). `run` otherwise passes on the command's status.
pub(crate) mod exit {
    /// Success.
    pub const OK: u8 = 0;
    /// Not acquired: other owners hold the lock (`--no-wait`, or the wait budget ran out).
    pub const BUSY: u8 = 110;
    /// Not enough nodes answered (unreachable, refused, timed out, misconfigured).
    pub const NODES: u8 = 111;
    /// The lock was lost while the command ran; the command was stopped.
    pub const LOST: u8 = 112;
    /// Bad usage: arguments, durations, node URLs, config file.
    pub const USAGE: u8 = 113;
    /// `status`: nobody holds the lock; `release`: the value does not hold it.
    pub const NOT_HELD: u8 = 114;
    /// `break`: the confirmation was declined.
    pub const ABORTED: u8 = 115;
    /// `run`: the command exists but could not be started.
    pub const CANNOT_EXEC: u8 = 126;
    /// `run`: the command was not found.
    pub const NOT_FOUND: u8 = 127;
    /// Interrupted by SIGINT (128 + 2) while waiting; other signals give 128 + n.
    pub const INTERRUPTED: u8 = 130;
}

/// Run a command under a distributed lock (Redlock over N Redis masters), inspect, release
/// and break locks, and check the nodes.
#[derive(Parser, Debug)]
#[command(name = "quorumlock", version, about)]
struct Cli {
    #[command(flatten)]
    global: Global,
    #[command(subcommand)]
    command: Command,
}

/// Options shared by every subcommand.
#[derive(Args, Debug)]
pub(crate) struct Global {
    /// Node URLs, comma-separated: redis://host:port, redis://user:password@host:port/db, rediss://...
    #[arg(
        long,
        global = true,
        env = "QUORUMLOCK_NODES",
        value_delimiter = ',',
        value_name = "URL,..."
    )]
    pub(crate) nodes: Vec<String>,
    /// Config file [default: ./quorumlock.toml when it exists].
    #[arg(long, global = true, env = "QUORUMLOCK_CONFIG", value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) client: config::ClientFlags,
    /// Print results as JSON (stdout; for `run`, one line on stderr).
    #[arg(long, global = true)]
    pub(crate) json: bool,
    /// Log more on stderr (-v info, -vv debug, -vvv trace); QUORUMLOCK_LOG sets a filter.
    #[arg(short, long, global = true, action = ArgAction::Count)]
    verbose: u8,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Acquire NAME, run CMD while keeping the lock alive, release it when CMD exits.
    Run(run::RunArgs),
    /// Show who holds NAME on every node, with the time to live left, and the verdict.
    Status {
        /// Lock name.
        name: String,
    },
    /// Release NAME on every node where it holds VALUE (owner-checked).
    Release {
        /// Lock name.
        name: String,
        /// The holder's value (40 hex characters; `status --json` shows it).
        #[arg(long, value_name = "HEX")]
        value: String,
    },
    /// Delete NAME on every node, whoever holds it (asks first unless --yes).
    Break {
        /// Lock name.
        name: String,
        /// Do not ask for confirmation (required when stdin is not a terminal).
        #[arg(long, short)]
        yes: bool,
    },
    /// Check every node: latency, version, uptime, persistence, eviction policy, warnings.
    Ping,
}

/// A failure of the CLI itself: its exit code, a stable string code and the message.
#[derive(Debug)]
pub(crate) struct CliError {
    /// Process exit code.
    pub(crate) exit: u8,
    /// `QL_*` code (`QL_INVALID` for usage errors, `QL_EXEC` when a command cannot start).
    pub(crate) code: &'static str,
    /// What failed and what to do.
    pub(crate) message: String,
    /// The engine error, for the node report, attempts and the lost reason.
    pub(crate) error: Option<Box<Error>>,
    /// More JSON fields (for example the stopped command's status).
    pub(crate) extra: Value,
    /// What to do about the failure, in the CLI's terms; already part of `message`.
    pub(crate) hint: Option<String>,
}

impl CliError {
    /// A failure with no engine error behind it.
    pub(crate) fn new(exit: u8, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            exit,
            code,
            message: message.into(),
            error: None,
            extra: Value::Null,
            hint: None,
        }
    }

    /// Bad arguments, durations, URLs or config (exit 113).
    pub(crate) fn usage(message: impl Into<String>) -> Self {
        Self::new(exit::USAGE, ErrorKind::InvalidArgument.as_str(), message)
    }

    /// Adds fields to the JSON output.
    pub(crate) fn with_extra(mut self, extra: Value) -> Self {
        self.extra = extra;
        self
    }

    /// Adds `hint` (what to do, in the CLI's terms) to the message, also in the JSON output.
    pub(crate) fn with_hint(mut self, hint: &str) -> Self {
        self.message = format!("{}; {hint}", self.message);
        self.hint = Some(hint.to_owned());
        self
    }

    fn to_json(&self) -> Value {
        let message = match (self.error.as_deref(), &self.hint) {
            (Some(e), Some(hint)) => format!("{}; {hint}", e.message()),
            (Some(e), None) => e.message().to_owned(),
            (None, _) => self.message.clone(),
        };
        let mut v = json!({
            "ok": false,
            "exit": self.exit,
            "code": self.code,
            "message": message,
        });
        if let Some(e) = &self.error {
            v["attempts"] = json!(e.attempts());
            v["lost_reason"] = json!(e.lost_reason().map(|r| r.as_str()));
            v["nodes"] = report_json(e.report());
        }
        if let (Value::Object(map), Value::Object(extra)) = (&mut v, &self.extra) {
            map.extend(extra.clone());
        }
        v
    }
}

/// The exit code of an engine error kind (docs/cli.md).
fn exit_for(kind: ErrorKind) -> u8 {
    match kind {
        ErrorKind::Busy => exit::BUSY,
        ErrorKind::Lost | ErrorKind::ExtensionLimit => exit::LOST,
        ErrorKind::InvalidArgument => exit::USAGE,
        ErrorKind::Cancelled => exit::INTERRUPTED,
        // QuorumNotReached, ValidityTooShort, and the node-stage kinds 8-12.
        _ => exit::NODES,
    }
}

impl From<Error> for CliError {
    fn from(e: Error) -> Self {
        Self {
            exit: exit_for(e.kind()),
            code: e.kind().as_str(),
            message: e.to_string(),
            extra: Value::Null,
            hint: None,
            error: Some(Box::new(e)),
        }
    }
}

/// One JSON object per node of a report.
pub(crate) fn report_json(report: &Report) -> Value {
    report
        .nodes()
        .iter()
        .map(|n| {
            json!({
                "index": n.index,
                "address": n.address,
                "kind": n.kind.as_str(),
                "latency_us": n.latency.and_then(|d| u64::try_from(d.as_micros()).ok()),
                "detail": n.detail,
            })
        })
        .collect()
}

fn init_logging(verbose: u8) {
    use tracing_subscriber::EnvFilter;
    let filter = match verbose {
        0 => EnvFilter::try_from_env("QUORUMLOCK_LOG").unwrap_or_else(|_| EnvFilter::new("warn")),
        1 => EnvFilter::new("info"),
        2 => EnvFilter::new("debug"),
        _ => EnvFilter::new("trace"),
    };
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .try_init();
}

fn dispatch(cli: Cli) -> Result<u8, CliError> {
    let settings = config::load(
        &cli.global.nodes,
        cli.global.config.as_deref(),
        &cli.global.client,
    )?;
    let json = cli.global.json;
    if let Command::Break { name, yes } = &cli.command {
        admin::confirm_break(name, *yes)?;
    }
    quorumlock::runtime::handle()?.block_on(async move {
        match cli.command {
            Command::Run(args) => run::run(args, &settings, json).await,
            Command::Status { name } => admin::status(&name, &settings, json).await,
            Command::Release { name, value } => {
                admin::release(&name, &value, &settings, json).await
            }
            Command::Break { name, .. } => admin::force_break(&name, &settings, json).await,
            Command::Ping => admin::ping(&settings, json).await,
        }
    })
}

fn main() -> ExitCode {
    // `run` starts its command through this hidden step (run::guard), before any option
    // parsing or configuration.
    let mut raw = std::env::args_os().skip(1);
    if raw.next().is_some_and(|a| a == run::GUARD) {
        return run::guard(raw.collect());
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() {
                exit::USAGE
            } else {
                exit::OK
            });
        }
    };
    init_logging(cli.global.verbose);
    let json = cli.global.json;
    let run = matches!(cli.command, Command::Run(_));
    match dispatch(cli) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            if json && !run {
                out!("{}", e.to_json());
            } else if json {
                err!("{}", e.to_json());
            } else {
                err!("quorumlock: {}", e.message);
            }
            ExitCode::from(e.exit)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The exit code and message of a command line clap refuses.
    fn refused(args: &[&str]) -> (u8, String) {
        match Cli::try_parse_from(args) {
            Ok(cli) => panic!("{args:?} parsed: {cli:?}"),
            Err(e) => (
                if e.use_stderr() {
                    exit::USAGE
                } else {
                    exit::OK
                },
                e.to_string(),
            ),
        }
    }

    #[test]
    fn client_flags_are_global_and_checked() {
        let cli = Cli::try_parse_from([
            "quorumlock",
            "ping",
            "--max-ttl",
            "2m",
            "--quarantine",
            "off",
            "--eviction-check",
            "warn",
        ]);
        let flags = cli.map(|c| c.global.client).ok();
        assert_eq!(
            flags.map(|f| (f.max_ttl, f.quarantine, f.eviction_check)),
            Some((Some("2m".into()), Some("off".into()), Some("warn".into())))
        );
        let (code, msg) = refused(&["quorumlock", "--quarantine", "maybe", "ping"]);
        assert_eq!(code, exit::USAGE);
        assert!(
            msg.contains("--quarantine") && msg.contains("strict"),
            "{msg}"
        );
        let (code, msg) = refused(&["quorumlock", "--eviction-check", "ignore", "ping"]);
        assert_eq!(code, exit::USAGE);
        assert!(
            msg.contains("--eviction-check") && msg.contains("refuse"),
            "{msg}"
        );
    }

    #[test]
    fn every_exit_code_and_kind_is_documented() {
        let doc = include_str!("../../docs/cli.md");
        let codes = [
            exit::OK,
            exit::BUSY,
            exit::NODES,
            exit::LOST,
            exit::USAGE,
            exit::NOT_HELD,
            exit::ABORTED,
            exit::CANNOT_EXEC,
            exit::NOT_FOUND,
            exit::INTERRUPTED,
        ];
        for code in codes {
            assert!(
                doc.contains(&format!("\n| {code} |")),
                "exit {code} missing"
            );
        }
        for &kind in ErrorKind::ALL {
            let row = doc
                .lines()
                .find(|l| l.contains(&format!("`{}`", kind.as_str())))
                .unwrap_or_else(|| panic!("{kind} missing"));
            let exit = exit_for(kind);
            assert!(row.starts_with(&format!("| {exit} |")), "{kind}: {row}");
        }
    }
}
