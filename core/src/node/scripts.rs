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
/// `fallback` is set or the script goes out whole ([`Command::goes_whole`]). The second value is true
/// for an `EVALSHA` (which may need the fallback).
///
/// The command's buffers are sized once up front: built argument by argument, a `Cmd` grows
/// its buffer several times, which cost more than the rest of the request's client side.
pub(crate) fn cmd(command: &Command, fallback: bool) -> (Cmd, bool) {
    match command {
        Command::SetNx { key, value, ttl_ms } => {
            let mut c = Cmd::with_capacity(6, 3 + key.len() + value.len() + 4 + 20);
            c.arg("SET")
                .arg(key.as_slice())
                .arg(value.as_slice())
                .arg("NX")
                .arg("PX")
                .arg(*ttl_ms);
            (c, false)
        }
        Command::Exists(keys) => {
            let data = 6 + keys.iter().map(Vec::len).sum::<usize>();
            let mut c = Cmd::with_capacity(1 + keys.len(), data);
            c.arg("EXISTS");
            for k in keys {
                c.arg(k.as_slice());
            }
            (c, false)
        }
        Command::Unmark { line, waiter } => {
            let mut c = Cmd::with_capacity(3, 4 + line.len() + waiter.len());
            c.arg("ZREM").arg(line.as_slice()).arg(waiter.as_slice());
            (c, false)
        }
        Command::Eval { script, keys, args } => {
            // A script that takes keys goes out whole: its `EVAL` after a `NOSCRIPT` would be
            // a second request, which could run after a later release or cleanup of the same
            // value on this connection and so leave a key behind until its ttl (and a MARK
            // after the check it must precede).
            let fallback = fallback || command.goes_whole();
            let body = if fallback {
                script.source()
            } else {
                sha(*script)
            };
            let data = 7
                + body.len()
                + 20
                + keys.iter().map(Vec::len).sum::<usize>()
                + args.iter().map(Vec::len).sum::<usize>();
            let mut c = Cmd::with_capacity(3 + keys.len() + args.len(), data);
            c.arg(if fallback { "EVAL" } else { "EVALSHA" })
                .arg(body)
                .arg(keys.len());
            for k in keys {
                c.arg(k.as_slice());
            }
            for a in args {
                c.arg(a.as_slice());
            }
            (c, !fallback)
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
        Value::SimpleString(s) => Reply::Status(s.into()),
        Value::Okay => Reply::Status("OK".into()),
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

    /// The sized commands are byte for byte the protocol's argv (scripts with `EVAL`).
    #[test]
    fn cmd_matches_argv() {
        let keys = vec![b"k1".to_vec(), b"k{2}".to_vec()];
        let commands = [
            command::acquire(&keys[..1], "v1", 10_000),
            command::acquire(&keys, "v2", 7),
            command::release(&keys[..1], "v3", command::Notify::Always),
            command::release(&keys, "v4", command::Notify::Off),
            command::extend(&keys, "v5", 30_000),
            command::vacant(&keys),
            command::mark(&keys[1..], b"c.1", 2_000, true).remove(0),
            command::unmark(&keys[1..], b"c.1").remove(0),
            command::release(&keys[1..], "v8", command::Notify::Waiters),
            command::fenced_acquire(&keys, "v6", 1, 2),
            command::raise(&keys, "v7", &[3], 4),
        ];
        for c in &commands {
            let argv = c.argv();
            let mut expected = redis::cmd(&String::from_utf8_lossy(&argv[0]));
            for a in &argv[1..] {
                expected.arg(a.as_slice());
            }
            let (got, _) = cmd(c, true);
            assert_eq!(
                got.get_packed_command(),
                expected.get_packed_command(),
                "{c:?}"
            );
        }
    }

    #[test]
    fn cmd_layout() {
        let keys = vec![b"k1".to_vec(), b"k2".to_vec()];
        let release = command::release(&keys, "v", command::Notify::Off);
        let (c, script) = cmd(&release, false);
        let text = String::from_utf8_lossy(&c.get_packed_command()).into_owned();
        assert!(script && text.contains("EVALSHA"));
        assert!(text.contains(sha(Script::Release)));
        assert!(text.contains("\r\n2\r\n"));
        let (c, _) = cmd(&release, true);
        assert!(String::from_utf8_lossy(&c.get_packed_command()).contains("redis.call('DEL'"));
        // Scripts that take keys always go out whole, with no second request on NOSCRIPT.
        for c in [
            command::acquire(&keys, "v", 7),
            command::fenced_acquire(&keys, "v", 1, 2),
            command::raise(&keys, "v", &[3], 4),
        ] {
            let (got, script) = cmd(&c, false);
            let text = String::from_utf8_lossy(&got.get_packed_command()).into_owned();
            assert!(
                !script && text.contains("EVAL\r\n") && !text.contains("EVALSHA"),
                "{c:?}"
            );
        }
        // A LEAVE that gives grants back goes out whole; a winner's LEAVE by SHA-1.
        let giving_back = command::leave(b"q:{k}", b"c.1", Some("v")).unwrap();
        assert!(!cmd(&giving_back, false).1);
        let winner = command::leave(b"q:{k}", b"c.1", None).unwrap();
        assert!(cmd(&winner, false).1);
        let (c, script) = cmd(&command::acquire(&keys[..1], "v", 10), false);
        assert!(!script);
        assert!(String::from_utf8_lossy(&c.get_packed_command()).contains("NX"));
    }
}
