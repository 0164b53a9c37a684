//! Run folders, PID files, `/proc` checks and the stale-run sweep (`docs/TESTING.md` §2.4).
//!
//! Layout: `<root>/<yyyymmdd-hhmmss>-<rand>/` holding `owner.pid` (`<pid> <start time>`), and
//! per node `n<i>/pid`, `n<i>/port`, `n<i>/redis.log`, `n<i>/stderr`. The root is
//! `QL_RUN_ROOT`, else `<target dir>/ql-runs`.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use std::process::{Child, Command};

use nix::sys::signal::{SigSet, SigmaskHow, Signal, kill};
use nix::unistd::Pid;

/// A folder kept on purpose (failed test, `QL_KEEP_RUNS=1`) holds this marker file. The sweep
/// still stops its orphans but leaves the folder for inspection; `ql-harness gc --kept`
/// deletes it.
pub const KEPT_MARKER: &str = "kept";

/// True if `QL_KEEP_RUNS=1`: run folders are kept after a clean stop too.
pub fn keep_runs_env() -> bool {
    std::env::var("QL_KEEP_RUNS").is_ok_and(|v| v == "1")
}

/// A folder without `owner.pid` is treated as abandoned once it is this old (seconds).
const NO_OWNER_GRACE_S: u64 = 60;

/// The folder that holds run folders: `QL_RUN_ROOT`, else `$CARGO_TARGET_DIR/ql-runs`, else
/// `<dir>/target/ql-runs` for the first ancestor `<dir>` of `CARGO_MANIFEST_DIR` (or of the
/// current directory) that holds `Cargo.lock` or `target/`, else `<target>/ql-runs` for the
/// cargo target folder that holds the running binary, else `$TMPDIR/ql-runs`.
pub fn run_root() -> PathBuf {
    if let Some(root) = std::env::var_os("QL_RUN_ROOT") {
        return absolute(PathBuf::from(root));
    }
    if let Some(target) = std::env::var_os("CARGO_TARGET_DIR") {
        return absolute(PathBuf::from(target)).join("ql-runs");
    }
    let starts = [
        std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from),
        std::env::current_dir().ok(),
    ];
    for start in starts.into_iter().flatten() {
        let start = absolute(start);
        if let Some(dir) = start
            .ancestors()
            .find(|d| d.join("Cargo.lock").is_file() || d.join("target").is_dir())
        {
            return dir.join("target").join("ql-runs");
        }
    }
    // The binary itself lives in `<target>/<profile>/`; cargo marks `<target>` with CACHEDIR.TAG.
    let exe = std::env::current_exe().ok().map(absolute);
    if let Some(target) = exe
        .as_deref()
        .and_then(|e| e.ancestors().find(|d| d.join("CACHEDIR.TAG").is_file()))
    {
        return target.join("ql-runs");
    }
    std::env::temp_dir().join("ql-runs")
}

fn absolute(p: PathBuf) -> PathBuf {
    std::path::absolute(&p).unwrap_or(p)
}

/// Creates a fresh, empty run folder `<run_root()>/<yyyymmdd-hhmmss>-<rand>` (UTC) and returns
/// its absolute path.
pub fn new_run_dir() -> io::Result<PathBuf> {
    let root = run_root();
    fs::create_dir_all(&root)?;
    let stamp = utc_stamp(crate::wall_us() / 1_000_000);
    for _ in 0..100 {
        let dir = root.join(format!("{stamp}-{:06x}", random_u64() & 0xff_ffff));
        match fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other("could not create a unique run folder"))
}

/// Writes `owner.pid` (this process and its start time) into `dir`.
pub fn write_owner(dir: &Path) -> io::Result<()> {
    let pid = std::process::id();
    let start = start_time(pid).unwrap_or(0);
    fs::write(dir.join("owner.pid"), format!("{pid} {start}\n"))
}

/// `yyyymmdd-hhmmss` in UTC for a Unix time in seconds.
fn utc_stamp(secs: u64) -> String {
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Howard Hinnant's civil_from_days, for days since 1970-01-01 (non-negative here).
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    let (hh, mm, ss) = (rem / 3600, rem / 60 % 60, rem % 60);
    format!("{y:04}{m:02}{d:02}-{hh:02}{mm:02}{ss:02}")
}

/// 64 random bits from `/dev/urandom` (falls back to the clocks).
pub(crate) fn random_u64() -> u64 {
    let mut b = [0u8; 8];
    match fs::File::open("/dev/urandom").and_then(|mut f| io::Read::read_exact(&mut f, &mut b)) {
        Ok(()) => u64::from_le_bytes(b),
        Err(_) => {
            crate::wall_us() ^ crate::now_us().rotate_left(32) ^ u64::from(std::process::id())
        }
    }
}

/// Reads the first whitespace-separated number in a file (a PID or port file).
pub fn read_number<T: std::str::FromStr>(path: &Path) -> Option<T> {
    fs::read_to_string(path)
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// The process's start time (field 22 of `/proc/<pid>/stat`, in clock ticks since boot).
pub fn start_time(pid: u32) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may contain spaces and parentheses: split after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// True if `pid` exists and is not a zombie.
pub fn pid_alive(pid: u32) -> bool {
    let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let state = stat
        .rfind(')')
        .and_then(|i| stat[i + 1..].split_whitespace().next());
    !matches!(state, None | Some("Z") | Some("X"))
}

/// True if `pid` still is the process recorded as (`pid`, `start`): alive with that start time.
/// A `start` of 0 means "unknown" and matches any live process.
pub fn same_process(pid: u32, start: u64) -> bool {
    pid_alive(pid) && (start == 0 || start_time(pid) == Some(start))
}

/// True if `pid` is a `redis-server` (by `/proc/<pid>/exe`: named `redis-server`, or the
/// resolved path of the binary the harness would use) whose command line names `port`.
pub fn is_redis_on_port(pid: u32, port: u16) -> bool {
    // Debian's redis-server is a symlink to redis-check-rdb, so also accept the resolved binary.
    let exe_ok = fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|exe| {
        exe.file_name().is_some_and(|n| n == "redis-server")
            || crate::node::server_path().and_then(|p| fs::canonicalize(p).ok()) == Some(exe)
    });
    if !exe_ok {
        return false;
    }
    let Ok(cmdline) = fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
    let port = port.to_string();
    // Redis rewrites its title to `redis-server 127.0.0.1:<port>`; before that, `--port <port>`.
    cmdline.contains(&format!(":{port}")) || cmdline.split(' ').any(|a| a == port)
}

/// Spawns `cmd` with an empty signal mask. Children inherit the spawning thread's mask (std
/// does not reset it), and `ql-harness` blocks SIGTERM/SIGINT/SIGHUP to `sigwait` for them; a
/// server or command that inherited that mask would ignore SIGTERM. The mask is restored right
/// after the spawn; a stop signal arriving in that short window ends the process at once.
pub fn spawn_unmasked(cmd: &mut Command) -> io::Result<Child> {
    let old = SigSet::empty()
        .thread_swap_mask(SigmaskHow::SIG_SETMASK)
        .map_err(io::Error::from)?;
    let child = cmd.spawn();
    let _ = old.thread_set_mask();
    child
}

/// Sends `sig` to `pid`; errors (no such process) are ignored.
pub fn signal(pid: u32, sig: Signal) {
    if let Ok(p) = i32::try_from(pid) {
        let _ = kill(Pid::from_raw(p), sig);
    }
}

/// Waits until `pid` is gone (or a zombie), polling every 10 ms, for at most `timeout_ms`.
/// Returns true if it is gone.
pub fn wait_gone(pid: u32, timeout_ms: u64) -> bool {
    let deadline = crate::now_us() + timeout_ms * 1000;
    while pid_alive(pid) {
        if crate::now_us() >= deadline {
            return false;
        }
        crate::sleep_ms(10);
    }
    true
}

/// The sub-folder of a run that holds the nodes of its Redis Cluster, if it has one.
pub const REDIS_CLUSTER_DIR: &str = "redis-cluster";

/// SIGKILLs every node recorded in `dir` (`n<i>/pid` + `n<i>/port`, and the same under
/// [`REDIS_CLUSTER_DIR`]) that still is a `redis-server` on its recorded port, and waits for
/// it. Returns how many were killed.
pub fn kill_recorded_nodes(dir: &Path) -> usize {
    let sub = dir.join(REDIS_CLUSTER_DIR);
    let mut killed = if sub.is_dir() {
        kill_recorded_nodes(&sub)
    } else {
        0
    };
    for entry in fs::read_dir(dir).into_iter().flatten().flatten() {
        let n = entry.path();
        let is_node = n.file_name().and_then(|s| s.to_str()).is_some_and(|s| {
            s.strip_prefix('n')
                .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
        });
        if !is_node {
            continue;
        }
        let (Some(pid), Some(port)) = (
            read_number::<u32>(&n.join("pid")),
            read_number::<u16>(&n.join("port")),
        ) else {
            continue;
        };
        if is_redis_on_port(pid, port) {
            signal(pid, Signal::SIGKILL);
            wait_gone(pid, 2000);
            killed += 1;
        }
    }
    killed
}

/// What [`sweep`] did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SweepReport {
    /// Orphaned `redis-server` processes killed.
    pub killed: usize,
    /// Run folders deleted.
    pub removed: usize,
    /// Folders of dead owners left in place because they are marked as kept.
    pub kept: usize,
}

/// The stale-run sweep: for every run folder under [`run_root`] whose owner is dead, kill its
/// recorded nodes (only verified `redis-server`s on their recorded ports) and delete the folder,
/// unless it holds [`KEPT_MARKER`] and `remove_kept` is false.
pub fn sweep(remove_kept: bool) -> SweepReport {
    let mut report = SweepReport::default();
    let Ok(entries) = fs::read_dir(run_root()) else {
        return report;
    };
    for entry in entries.flatten() {
        let dir = entry.path();
        if !is_run_folder_name(&entry.file_name().to_string_lossy()) || !dir.is_dir() {
            continue;
        }
        if owner_alive(&dir) {
            continue;
        }
        report.killed += kill_recorded_nodes(&dir);
        if dir.join(KEPT_MARKER).exists() && !remove_kept {
            report.kept += 1;
        } else if fs::remove_dir_all(&dir).is_ok() {
            report.removed += 1;
        }
    }
    report
}

fn owner_alive(dir: &Path) -> bool {
    match fs::read_to_string(dir.join("owner.pid")) {
        Ok(s) => {
            let mut it = s.split_whitespace().map(|t| t.parse::<u64>().ok());
            let pid = it.next().flatten().and_then(|p| u32::try_from(p).ok());
            let start = it.next().flatten().unwrap_or(0);
            pid.is_some_and(|pid| same_process(pid, start))
        }
        // Being created right now, or abandoned long ago.
        Err(_) => fs::metadata(dir)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .is_none_or(|t| crate::wall_us() / 1_000_000 < t.as_secs() + NO_OWNER_GRACE_S),
    }
}

/// `yyyymmdd-hhmmss-<hex>`: only such folders are ever swept.
fn is_run_folder_name(name: &str) -> bool {
    let b = name.as_bytes();
    b.len() > 16
        && b[..8].iter().all(u8::is_ascii_digit)
        && b[8] == b'-'
        && b[9..15].iter().all(u8::is_ascii_digit)
        && b[15] == b'-'
        && b[16..].iter().all(u8::is_ascii_hexdigit)
}

/// The last `n` lines of a file, for error messages.
pub fn tail(path: &Path, n: usize) -> String {
    let text = fs::read(path).unwrap_or_default();
    let text = String::from_utf8_lossy(&text);
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_stamps() {
        assert_eq!(utc_stamp(0), "19700101-000000");
        assert_eq!(utc_stamp(951_782_400), "20000229-000000");
        assert_eq!(utc_stamp(1_796_214_307), "20261202-122507");
    }

    #[test]
    fn run_folder_names() {
        assert!(is_run_folder_name("20261202-132501-4f2a"));
        assert!(!is_run_folder_name("20261202-132501-"));
        assert!(!is_run_folder_name("debug"));
        assert!(!is_run_folder_name("20261202x132501-4f2a"));
    }

    #[test]
    fn own_process_is_alive() {
        let me = std::process::id();
        assert!(pid_alive(me));
        assert!(same_process(me, start_time(me).unwrap()));
        assert!(!same_process(me, start_time(me).unwrap() + 1));
        assert!(!is_redis_on_port(me, 1));
    }
}
