//! Randomness for the protocol: lock values and retry jitter from the operating system's
//! CSPRNG (REDLOCK.md §2.2). There is no user-space generator whose state `fork()` could
//! duplicate. What a value looks like is the protocol's (`quorumlock_proto::value`).

use quorumlock_proto::value::Random;

/// The OS CSPRNG as the protocol's random source.
pub(crate) struct OsRandom;

impl Random for OsRandom {
    fn fill(&mut self, out: &mut [u8]) -> std::result::Result<(), String> {
        getrandom::fill(out).map_err(|e| format!("the OS random source failed: {e}"))
    }
}

/// Eight bytes from the OS CSPRNG for the watchdog's jitter; zeros when the source fails
/// (jitter is not a safety property).
pub(crate) fn random8() -> [u8; 8] {
    let mut buf = [0u8; 8];
    let _ = getrandom::fill(&mut buf);
    buf
}

#[cfg(test)]
mod tests {
    use super::*;
    use quorumlock_proto::value::{VALUE_BYTES, below, from_random};
    use std::collections::HashSet;

    #[test]
    fn rule9_values_are_40_hex_and_distinct() {
        let mut seen = HashSet::new();
        for _ in 0..10_000 {
            let mut bytes = [0u8; VALUE_BYTES];
            OsRandom.fill(&mut bytes).unwrap();
            let v = from_random(&bytes);
            assert_eq!(v.len(), 40);
            assert!(v.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')));
            assert!(seen.insert(v));
        }
    }

    #[test]
    fn jitter_stays_in_bounds() {
        assert_eq!(below(0, random8()), 0);
        for _ in 0..1000 {
            assert!(below(7, random8()) < 7);
        }
    }
}
