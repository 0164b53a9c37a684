//! The protocol's Lua scripts (`quorumlock_proto::scripts`), their SHA-1s computed once, and the `EVALSHA` call with
//! the `EVAL` fallback on `NOSCRIPT` (REDLOCK.md §2.6).

use std::sync::LazyLock;

use redis::Cmd;

/// A script source and its SHA-1.
pub(crate) struct Script {
    source: &'static str,
    sha: String,
}

impl Script {
    fn new(source: &'static str) -> Self {
        Self {
            source,
            sha: redis::Script::new(source).get_hash().to_owned(),
        }
    }

    /// `EVALSHA sha numkeys keys... args...`, or `EVAL source ...` when `fallback` is set.
    pub(crate) fn cmd(&self, fallback: bool, keys: &[Vec<u8>], args: &[&[u8]]) -> Cmd {
        let mut cmd = if fallback {
            let mut c = redis::cmd("EVAL");
            c.arg(self.source);
            c
        } else {
            let mut c = redis::cmd("EVALSHA");
            c.arg(&self.sha);
            c
        };
        cmd.arg(keys.len());
        for k in keys {
            cmd.arg(k.as_slice());
        }
        for a in args {
            cmd.arg(*a);
        }
        cmd
    }
}

/// ACQUIRE-MULTI: all keys of a set or none.
pub(crate) static ACQUIRE_MULTI: LazyLock<Script> =
    LazyLock::new(|| Script::new(quorumlock_proto::scripts::ACQUIRE_MULTI));
/// FENCED-ACQUIRE: take the set and advance its fencing counters.
pub(crate) static FENCED_ACQUIRE: LazyLock<Script> =
    LazyLock::new(|| Script::new(quorumlock_proto::scripts::FENCED_ACQUIRE));
/// RAISE: owner-checked lift of lagging counters (fencing phase 2).
pub(crate) static RAISE: LazyLock<Script> =
    LazyLock::new(|| Script::new(quorumlock_proto::scripts::RAISE));
/// The source of FENCE-CHECK, for protected resources kept in Redis.
pub(crate) const FENCE_CHECK: &str = quorumlock_proto::scripts::FENCE_CHECK;
/// RELEASE of a single key: compare-and-delete returning 1 / 0 / -1.
pub(crate) static RELEASE_ONE: LazyLock<Script> =
    LazyLock::new(|| Script::new(quorumlock_proto::scripts::RELEASE_ONE));
/// RELEASE of a set: compare-and-delete every key, returning `{deleted, held_by_other}`.
pub(crate) static RELEASE: LazyLock<Script> =
    LazyLock::new(|| Script::new(quorumlock_proto::scripts::RELEASE));
/// EXTEND: compare-and-lengthen.
pub(crate) static EXTEND: LazyLock<Script> =
    LazyLock::new(|| Script::new(quorumlock_proto::scripts::EXTEND));

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shas_are_distinct_hex() {
        let shas = [
            &ACQUIRE_MULTI.sha,
            &RELEASE.sha,
            &EXTEND.sha,
            &RELEASE_ONE.sha,
        ];
        for s in shas {
            assert_eq!(s.len(), 40);
        }
        assert_ne!(shas[0], shas[1]);
        assert_ne!(shas[1], shas[2]);
    }

    #[test]
    fn cmd_layout() {
        let keys = vec![b"k1".to_vec(), b"k2".to_vec()];
        let packed = RELEASE.cmd(false, &keys, &[b"v"]).get_packed_command();
        let text = String::from_utf8_lossy(&packed);
        assert!(text.contains("EVALSHA"));
        assert!(text.contains(&RELEASE.sha));
        assert!(text.contains("\r\n2\r\n"));
        let packed = RELEASE.cmd(true, &keys, &[b"v"]).get_packed_command();
        assert!(String::from_utf8_lossy(&packed).contains("redis.call('DEL'"));
    }
}
