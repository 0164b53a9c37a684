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

/// The OS CSPRNG read ahead in one call per attempt: an attempt takes a value (20 bytes), a
/// jitter and a spread (8 bytes each), which are three `getrandom` calls with [`OsRandom`]
/// and one here. The bytes are the OS's, each used once; the buffer lives only as long as
/// the acquire call that owns it (nothing a `fork()` could duplicate into a later call).
pub(crate) struct OsRandomAhead {
    buf: [u8; 64],
    used: usize,
}

impl OsRandomAhead {
    pub(crate) fn new() -> Self {
        Self {
            buf: [0; 64],
            used: 64,
        }
    }
}

impl Random for OsRandomAhead {
    fn fill(&mut self, out: &mut [u8]) -> std::result::Result<(), String> {
        if out.len() > self.buf.len() {
            return OsRandom.fill(out);
        }
        if self.buf.len() - self.used < out.len() {
            OsRandom.fill(&mut self.buf)?;
            self.used = 0;
        }
        let end = self.used + out.len();
        out.copy_from_slice(&self.buf[self.used..end]);
        // Never hand out the same bytes twice.
        self.buf[self.used..end].fill(0);
        self.used = end;
        Ok(())
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
    fn read_ahead_values_are_distinct() {
        let mut r = OsRandomAhead::new();
        let mut seen = HashSet::new();
        for _ in 0..10_000 {
            let mut bytes = [0u8; VALUE_BYTES];
            r.fill(&mut bytes).unwrap();
            let mut jitter = [0u8; 8];
            r.fill(&mut jitter).unwrap();
            assert!(seen.insert(from_random(&bytes)));
        }
        let mut big = [0u8; 100];
        r.fill(&mut big).unwrap();
        assert!(big.iter().any(|&b| b != 0));
    }

    #[test]
    fn jitter_stays_in_bounds() {
        assert_eq!(below(0, random8()), 0);
        for _ in 0..1000 {
            assert!(below(7, random8()) < 7);
        }
    }
}
