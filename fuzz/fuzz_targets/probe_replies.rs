//! What the engine reads at start-up: `INFO` and `CONFIG GET` replies (decoded by redis-rs's
//! RESP parser, or given as raw text) through the probe's readers and the protocol's decision.
//! Any reply gives a decision or a `Protocol` failure; the quarantine never exceeds its
//! period and is zero when it is off.
#![no_main]

use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use quorumlock::fuzzing;
use quorumlock::{EvictionCheck, NodeKind, Quarantine};
use quorumlock_fuzz::Input;
use redis::Value;

fn value(raw: &[u8], as_text: bool) -> Option<Value> {
    if as_text {
        Some(Value::BulkString(raw.to_vec()))
    } else {
        redis::parse_redis_value(raw).ok()
    }
}

fuzz_target!(|data: &[u8]| {
    let mut input = Input::new(data);
    let flags = input.u8();
    let quarantine = [Quarantine::On, Quarantine::Strict, Quarantine::Off][usize::from(flags % 3)];
    let eviction = [
        EvictionCheck::Refuse,
        EvictionCheck::Warn,
        EvictionCheck::Off,
    ][usize::from((flags / 3) % 3)];
    let cluster = flags & 0x80 != 0;
    let refused = flags & 0x40 != 0;
    let info_raw = input.chunk();
    let configs: Vec<Value> = (0..input.u8() % 3)
        .filter_map(|_| {
            let raw = input.chunk();
            value(raw, false)
        })
        .collect();
    let _ = quorumlock_proto::probe::parse_info(&String::from_utf8_lossy(info_raw));
    let Some(info) = value(info_raw, flags & 0x20 != 0) else {
        return;
    };
    let info = if refused { Err(()) } else { Ok(info) };
    match fuzzing::probe_replies(info, &configs, quarantine, eviction, cluster) {
        Ok(d) => {
            assert!(d.wait <= Duration::from_secs(65), "{d:?}");
            if quarantine == Quarantine::Off {
                assert_eq!(d.wait, Duration::ZERO, "{d:?}");
            }
        }
        Err((kind, text)) => {
            assert_eq!(kind, NodeKind::Protocol, "{text}");
            assert!(text.len() < 400, "{text}");
        }
    }
});
