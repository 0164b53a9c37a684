//! Replies to lock traffic: raw bytes through redis-rs's RESP parser, the engine's conversion
//! (`fuzzing::reply`: error replies classified, `node/scripts.rs` `reply`) and every reader of
//! `proto/src/command.rs` (`read_*`, `error_kind`, `release_kind`, `join_slots`). A reader
//! gives a vote, a count or a typed failure, never a panic, and its answers stay in range.
#![no_main]

use libfuzzer_sys::fuzz_target;
use quorumlock::NodeKind;
use quorumlock_fuzz::Input;
use quorumlock_proto::command;

const KINDS: [NodeKind; 6] = [
    NodeKind::Ok,
    NodeKind::HeldByOther,
    NodeKind::NotHeld,
    NodeKind::Timeout,
    NodeKind::Protocol,
    NodeKind::Released,
];

fuzz_target!(|data: &[u8]| {
    let mut input = Input::new(data);
    let keys = usize::from(input.u8() % 9);
    let kinds: Vec<NodeKind> = input
        .chunk()
        .iter()
        .take(8)
        .map(|b| KINDS[usize::from(*b) % KINDS.len()])
        .collect();
    let _ = command::join_slots(&kinds);
    let (d, o) = (usize::from(input.u8()), usize::from(input.u8()));
    let _ = command::release_kind(d, o, keys.max(1));
    let text = String::from_utf8_lossy(input.chunk()).into_owned();
    let (code, rest) = text.split_once(' ').unwrap_or((&text, ""));
    let _ = command::error_kind(code, rest);
    let Ok(value) = redis::parse_redis_value(input.rest()) else {
        return;
    };
    let reply = match quorumlock::fuzzing::reply(value) {
        Ok(r) => r,
        Err((kind, text)) => {
            assert_ne!(kind, NodeKind::Ok, "{text}");
            return;
        }
    };
    if let Ok(k) = command::read_acquire(&reply) {
        assert!(matches!(k, NodeKind::Ok | NodeKind::HeldByOther));
    }
    if let Ok(Some(tokens)) = command::read_fenced_acquire(&reply, keys) {
        assert_eq!(tokens.len() * 2, keys);
        assert!(tokens.iter().all(|t| *t > 0 && *t <= i64::MAX as u64));
    }
    if let Ok(k) = command::read_raise(&reply) {
        assert!(matches!(k, NodeKind::Ok | NodeKind::NotHeld));
    }
    if let Ok(k) = command::read_extend(&reply) {
        assert!(matches!(
            k,
            NodeKind::Ok | NodeKind::NotHeld | NodeKind::HeldByOther
        ));
    }
    if let Ok((deleted, other)) = command::read_release(&reply, keys.max(1)) {
        let _ = command::release_kind(deleted, other, keys.max(1));
    }
    if let Ok(k) = command::read_vacant(&reply) {
        assert!(matches!(k, NodeKind::NotHeld | NodeKind::HeldByOther));
    }
    for r in [
        command::read_acquire(&reply).err(),
        command::read_raise(&reply).err(),
        command::read_extend(&reply).err(),
        command::read_vacant(&reply).err(),
    ]
    .into_iter()
    .flatten()
    {
        assert_ne!(r.0, NodeKind::Ok);
    }
});
