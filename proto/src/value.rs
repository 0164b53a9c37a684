//! Lock values: 20 bytes (160 bits) of randomness the driver draws from its CSPRNG, written as
//! 40 lowercase hex characters, fresh for every attempt (REDLOCK.md §2.2), and the check of
//! values a caller gives.

use crate::error::{Error, Result};

/// The driver's source of randomness: lock values need a CSPRNG (the OS's, or
/// `crypto.getRandomValues` in WebAssembly); a simulator passes a seeded generator.
pub trait Random {
    /// Fills `out` with random bytes.
    ///
    /// # Errors
    /// A description of the failure when the source cannot give bytes.
    fn fill(&mut self, out: &mut [u8]) -> std::result::Result<(), String>;
}

/// Bytes of entropy in a generated lock value.
pub const VALUE_BYTES: usize = 20;

/// Minimum length of a value given by the caller: 16 printable ASCII characters. The peer
/// libraries' values pass (22 alphanumerics in redlock-py, a UUID in aioredlock, 32 hex
/// characters in node-redlock), so their locks can be released or extended by value during a
/// migration.
pub const MIN_GIVEN_LEN: usize = 16;

/// The lock value made of `random` bytes (from the driver's CSPRNG): lowercase hex.
pub fn from_random(random: &[u8; VALUE_BYTES]) -> String {
    hex(random)
}

/// `bytes` as lowercase hex, two digits per byte.
pub fn hex(bytes: &[u8]) -> String {
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
///
/// # Errors
/// `InvalidArgument` otherwise.
pub fn check_given(value: &str) -> Result<()> {
    if value.len() < MIN_GIVEN_LEN || !value.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(Error::invalid(format!(
            "a lock value must be at least {MIN_GIVEN_LEN} printable ASCII characters without spaces (got {} bytes)",
            value.len()
        )));
    }
    Ok(())
}

/// A number in `0..bound` made of 8 random bytes (retry jitter; not a safety property).
pub fn below(bound: u64, random: [u8; 8]) -> u64 {
    if bound == 0 {
        0
    } else {
        u64::from_le_bytes(random) % bound
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_40_lowercase_hex() {
        let v = from_random(&[0xab; VALUE_BYTES]);
        assert_eq!(v.len(), 40);
        assert_eq!(&v[..4], "abab");
        assert_eq!(from_random(&[0; VALUE_BYTES]), "0".repeat(40));
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
    fn below_stays_in_bounds() {
        assert_eq!(below(0, [9; 8]), 0);
        for i in 0..=255u8 {
            assert!(below(7, [i; 8]) < 7);
        }
    }
}
