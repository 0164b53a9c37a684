//! Redis 7 multi-part AOF: finding the current incremental file (`docs/TESTING.md` §3.2).

use std::io;
use std::path::{Path, PathBuf};

/// The incremental AOF file that the manifest in `<node dir>/appendonlydir` names last.
pub(crate) fn current_incr_file(node_dir: &Path) -> io::Result<PathBuf> {
    let dir = node_dir.join("appendonlydir");
    let manifest = std::fs::read_to_string(dir.join("appendonly.aof.manifest"))?;
    incr_name(&manifest)
        .map(|name| dir.join(name))
        .ok_or_else(|| io::Error::other("AOF manifest names no incremental file"))
}

/// From lines `file <name> seq <n> type <b|h|i>`, the last name of type `i`.
fn incr_name(manifest: &str) -> Option<&str> {
    manifest.lines().rev().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.len() >= 6 && f[0] == "file" && f[5] == "i").then(|| f[1])
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_last_incremental_file() {
        let m = "file appendonly.aof.1.base.rdb seq 1 type b\n\
                 file appendonly.aof.1.incr.aof seq 1 type i\n\
                 file appendonly.aof.2.incr.aof seq 2 type i\n";
        assert_eq!(incr_name(m), Some("appendonly.aof.2.incr.aof"));
        assert_eq!(incr_name("file x seq 1 type b\n"), None);
    }
}
