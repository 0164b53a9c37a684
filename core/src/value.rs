//! Randomness for the protocol: lock values and retry jitter from the operating system's
//! CSPRNG (REDLOCK.md §2.2). There is no user-space generator whose state `fork()` could
//! duplicate. What a value looks like is the protocol's (`quorumlock_proto::value`).

use quorumlock_proto::value::{VALUE_BYTES, below, from_random};

use crate::error::{Error, Result};

/// Draws a fresh value from the OS CSPRNG.
pub(crate) fn fresh() -> Result<String> {
    let mut buf = [0u8; VALUE_BYTES];
    getrandom::fill(&mut buf)
        .map_err(|e| Error::invalid(format!("the OS random source failed: {e}")))?;
    Ok(from_random(&buf))
}

/// 8 bytes from the OS CSPRNG for the retry jitter; zeros when the random source fails
/// (jitter is not a safety property).
pub(crate) fn random8() -> [u8; 8] {
    let mut buf = [0u8; 8];
    match getrandom::fill(&mut buf) {
        Ok(()) => buf,
        Err(_) => [0; 8],
    }
}

/// A random number in `0..bound` (for retry jitter), from the OS CSPRNG. Returns 0 when
/// `bound` is 0 or the random source fails (jitter is not a safety property).
pub(crate) fn jitter(bound: u64) -> u64 {
    below(bound, random8())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn rule9_values_are_40_hex_and_distinct() {
        let mut seen = HashSet::new();
        for _ in 0..10_000 {
            let v = fresh().unwrap();
            assert_eq!(v.len(), 40);
            assert!(v.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')));
            assert!(seen.insert(v));
        }
    }

    #[test]
    fn jitter_stays_in_bounds() {
        assert_eq!(jitter(0), 0);
        for _ in 0..1000 {
            assert!(jitter(7) < 7);
        }
    }
}
