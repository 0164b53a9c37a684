//! Control files of the clock-skew shim (`docs/TESTING.md` §3.4).
//!
//! Every node runs with `LD_PRELOAD=<libskewclock.so>` and `SKEWCLOCK_FILE=<run>/n<i>/skew`.
//! Writing `"<offset_ms> <rate>"` to that file skews the node's wall clock (and so its key
//! expiry) within about 20 ms, without a restart; `"reset"` restores real time.

use std::io;
use std::path::{Path, PathBuf};

/// The control file's name inside a node folder.
pub const FILE_NAME: &str = "skew";

/// Path of the shim: `QL_SKEWCLOCK_SO` at run time, else the one `build.rs` built. `None` if
/// neither names an existing file.
pub fn shim_path() -> Option<PathBuf> {
    let runtime = std::env::var_os("QL_SKEWCLOCK_SO").filter(|p| !p.is_empty());
    let built = option_env!("QL_SKEWCLOCK_SO")
        .filter(|p| !p.is_empty())
        .map(Into::into);
    runtime.or(built).map(PathBuf::from).filter(|p| p.is_file())
}

/// Writes `line` to `file` atomically (temporary file, then rename).
fn write_control(file: &Path, line: &str) -> io::Result<()> {
    let tmp = file.with_extension("tmp");
    std::fs::write(&tmp, format!("{line}\n"))?;
    std::fs::rename(&tmp, file)
}

/// Sets `offset_ms` and `rate` (see the shim's semantics: a new rate bends the clock from now,
/// a new offset jumps it by the difference). `rate` must be finite and > 0.
pub fn set(file: &Path, offset_ms: i64, rate: f64) -> io::Result<()> {
    if !rate.is_finite() || rate <= 0.0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("skew rate must be finite and > 0, got {rate}"),
        ));
    }
    write_control(file, &format!("{offset_ms} {rate}"))
}

/// Back to real time.
pub fn reset(file: &Path) -> io::Result<()> {
    write_control(file, "reset")
}

/// Creates the control file with `0 1` unless it exists.
pub(crate) fn init(file: &Path) -> io::Result<()> {
    if file.exists() {
        return Ok(());
    }
    write_control(file, "0 1")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_control_lines_and_rejects_bad_rates() {
        let dir = std::env::temp_dir().join(format!("ql-skew-{}", std::process::id()));
        std::fs::create_dir_all(&dir).ok();
        let f = dir.join(FILE_NAME);
        init(&f).ok();
        assert_eq!(std::fs::read_to_string(&f).ok().as_deref(), Some("0 1\n"));
        set(&f, 10_000, 1.5).ok();
        assert_eq!(
            std::fs::read_to_string(&f).ok().as_deref(),
            Some("10000 1.5\n")
        );
        reset(&f).ok();
        assert_eq!(std::fs::read_to_string(&f).ok().as_deref(), Some("reset\n"));
        assert!(set(&f, 0, 0.0).is_err());
        assert!(set(&f, 0, f64::NAN).is_err());
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn the_shim_was_built() {
        let p = shim_path();
        assert!(
            p.is_some(),
            "libskewclock.so missing; QL_SKEWCLOCK_SO={:?}",
            option_env!("QL_SKEWCLOCK_SO")
        );
    }
}
