//! The Lua scripts every driver sends (REDLOCK.md §2.4–2.6, §7.3): their sources, and what
//! their keys and arguments are. Drivers run them by SHA-1 with an `EVAL` fallback.

/// ACQUIRE-MULTI: all keys of a set or none. KEYS: the lock keys; ARGV: value, ttl ms.
pub const ACQUIRE_MULTI: &str = include_str!("lua/acquire_multi.lua");
/// FENCED-ACQUIRE: take the set and advance its fencing counters. KEYS: the lock keys, then
/// their counter keys; ARGV: value, ttl ms, counter ttl ms (0: none).
pub const FENCED_ACQUIRE: &str = include_str!("lua/fenced_acquire.lua");
/// RAISE: owner-checked lift of lagging counters (fencing phase 2). KEYS as FENCED-ACQUIRE;
/// ARGV: value, one token per resource, counter ttl ms.
pub const RAISE: &str = include_str!("lua/raise.lua");
/// FENCE-CHECK, for protected resources kept in Redis: KEYS: fence key; ARGV: token.
pub const FENCE_CHECK: &str = include_str!("lua/fence_check.lua");
/// RELEASE of a single key: compare-and-delete returning 1 / 0 / -1. ARGV: value, notify.
/// Both releases start with `lua/wake.lua`, which tells a deleted key's waiters.
pub const RELEASE_ONE: &str = concat!(
    include_str!("lua/wake.lua"),
    include_str!("lua/release_one.lua")
);
/// RELEASE of a set: compare-and-delete every key, returning `{deleted, held_by_other}`.
pub const RELEASE: &str = concat!(
    include_str!("lua/wake.lua"),
    include_str!("lua/release.lua")
);
/// LEAVE: a registered waiter's call ends: it leaves the line, drops its registration and,
/// unless it won with the registered value, hands on a key granted to it meanwhile. KEYS: the
/// lock key, its line, its registrations; ARGV: waiter id, registered value or "".
pub const LEAVE: &str = concat!(include_str!("lua/wake.lua"), include_str!("lua/leave.lua"));
/// EXTEND: compare-and-lengthen. KEYS: the lock keys; ARGV: value, ttl ms.
pub const EXTEND: &str = include_str!("lua/extend.lua");
/// EXTEND-BATCH: EXTEND for several locks in one request. KEYS: every lock's keys in turn;
/// ARGV: per lock its number of keys, its value and its ttl ms. Returns one EXTEND answer per
/// lock.
pub const EXTEND_BATCH: &str = include_str!("lua/extend_batch.lua");
/// MARK: a waiter's place in the line of a lock key (REDLOCK.md §9). KEYS: the waiter flag,
/// the line, and for a first mark that registers for grants the registrations; ARGV: waiter
/// id, ttl ms, "1" to stand first, and with the registrations `<lock ttl ms>:<n>:<value>`.
/// Returns 0 for a plain mark (the line refused), 1 in line.
pub const MARK: &str = include_str!("lua/mark.lua");
