//! The protocol's commands (`quorumlock_proto::command`) as redis-rs commands: scripts by
//! SHA-1 (computed once) with the `EVAL` fallback on `NOSCRIPT` (REDLOCK.md §2.6), and
//! replies as the protocol's `Reply`.

use std::sync::LazyLock;

use quorumlock_proto::command::{Command, Reply, Script};
use redis::{Cmd, Value};

/// The SHA-1 of every script, in `Script::ALL` order.
static SHAS: LazyLock<Vec<String>> = LazyLock::new(|| {
    Script::ALL
        .iter()
        .map(|s| redis::Script::new(s.source()).get_hash().to_owned())
        .collect()
});

fn sha(script: Script) -> &'static str {
    let i = Script::ALL.iter().position(|s| *s == script).unwrap_or(0);
    SHAS.get(i).map_or("", String::as_str)
}

/// The redis-rs command for `command`: scripts as `EVALSHA`, or `EVAL` with the source when
/// `fallback` is set. The second value is true for scripts (which may need the fallback).
pub(crate) fn cmd(command: &Command, fallback: bool) -> (Cmd, bool) {
    match command {
        Command::Eval { script, keys, args } => {
            let mut c = if fallback {
                let mut c = redis::cmd("EVAL");
                c.arg(script.source());
                c
            } else {
                let mut c = redis::cmd("EVALSHA");
                c.arg(sha(*script));
                c
            };
            c.arg(keys.len());
            for k in keys {
                c.arg(k.as_slice());
            }
            for a in args {
                c.arg(a.as_slice());
            }
            (c, true)
        }
        other => {
            let argv = other.argv();
            let mut c = redis::cmd(&String::from_utf8_lossy(&argv[0]));
            for a in &argv[1..] {
                c.arg(a.as_slice());
            }
            (c, false)
        }
    }
}

/// A redis-rs reply as the protocol's; shapes the protocol never expects become data that
/// no reader accepts (a `Protocol` failure).
pub(crate) fn reply(value: Value) -> Reply {
    match value {
        Value::Nil => Reply::Nil,
        Value::Int(i) => Reply::Int(i),
        Value::BulkString(b) => Reply::Data(b),
        Value::SimpleString(s) => Reply::Status(s),
        Value::Okay => Reply::Status("OK".to_owned()),
        Value::Array(items) | Value::Set(items) => {
            Reply::Array(items.into_iter().map(reply).collect())
        }
        other => Reply::Data(format!("{other:?}").into_bytes()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quorumlock_proto::command;

    #[test]
    fn shas_are_distinct_hex() {
        let shas: Vec<&str> = Script::ALL.iter().map(|s| sha(*s)).collect();
        for s in &shas {
            assert_eq!(s.len(), 40);
        }
        let mut unique = shas.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), shas.len());
    }

    #[test]
    fn cmd_layout() {
        let keys = vec![b"k1".to_vec(), b"k2".to_vec()];
        let release = command::release(&keys, "v", false);
        let (c, script) = cmd(&release, false);
        let text = String::from_utf8_lossy(&c.get_packed_command()).into_owned();
        assert!(script && text.contains("EVALSHA"));
        assert!(text.contains(sha(Script::Release)));
        assert!(text.contains("\r\n2\r\n"));
        let (c, _) = cmd(&release, true);
        assert!(String::from_utf8_lossy(&c.get_packed_command()).contains("redis.call('DEL'"));
        let (c, script) = cmd(&command::acquire(&keys[..1], "v", 10), false);
        assert!(!script);
        assert!(String::from_utf8_lossy(&c.get_packed_command()).contains("NX"));
    }
}
