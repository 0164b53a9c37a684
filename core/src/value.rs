//! Lock values: 20 bytes (160 bits) from the operating system's CSPRNG, as 40 lowercase hex
//! characters, fresh for every attempt (REDLOCK.md §2.2). There is no user-space generator
//! whose state `fork()` could duplicate.

use crate::error::{Error, Result};

/// Bytes of entropy in a generated lock value.
pub const VALUE_BYTES: usize = 20;

/// Minimum length of a value given by the caller: 16 printable ASCII characters. The peer
/// libraries' values pass (22 alphanumerics in redlock-py, a UUID in aioredlock, 32 hex
/// characters in node-redlock), so their locks can be released or extended by value during a
/// migration.
pub const MIN_GIVEN_LEN: usize = 16;

/// Draws a fresh value from the OS CSPRNG.
pub(crate) fn fresh() -> Result<String> {
    let mut buf = [0u8; VALUE_BYTES];
    getrandom::fill(&mut buf)
        .map_err(|e| Error::invalid(format!("the OS random source failed: {e}")))?;
    Ok(hex(&buf))
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(char::from(DIGITS[usize::from(b >> 4)]));
        s.push(char::from(DIGITS[usize::from(b & 0x0f)]));
    }
    s
}

/// Checks a value given by the caller (acquire, release or extend by value): at least
/// [`MIN_GIVEN_LEN`] printable ASCII characters, no spaces.
pub(crate) fn check_given(value: &str) -> Result<()> {
    if value.len() < MIN_GIVEN_LEN || !value.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(Error::invalid(format!(
            "a lock value must be at least {MIN_GIVEN_LEN} printable ASCII characters without spaces (got {} bytes)",
            value.len()
        )));
    }
    Ok(())
}

/// A random number in `0..bound` (for retry jitter), from the OS CSPRNG. Returns 0 when
/// `bound` is 0 or the random source fails (jitter is not a safety property).
pub(crate) fn jitter(bound: u64) -> u64 {
    if bound == 0 {
        return 0;
    }
    let mut buf = [0u8; 8];
    match getrandom::fill(&mut buf) {
        Ok(()) => u64::from_le_bytes(buf) % bound,
        Err(_) => 0,
    }
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
    fn given_values_need_entropy() {
        assert!(check_given("abc").is_err());
        assert!(check_given(&"g ".repeat(20)).is_err());
        assert!(check_given("\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}").is_err());
        assert!(check_given(&"g".repeat(16)).is_ok());
        assert!(check_given(&"a".repeat(32)).is_ok());
    }

    #[test]
    fn jitter_stays_in_bounds() {
        assert_eq!(jitter(0), 0);
        for _ in 0..1000 {
            assert!(jitter(7) < 7);
        }
    }
}
