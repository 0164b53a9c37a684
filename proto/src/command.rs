//! The commands of the protocol as data, and what their replies mean (REDLOCK.md §2.4–2.6,
//! §7.3, §10). A driver sends [`Command`]s however it talks to Redis (a socket, a cluster
//! client, a REST endpoint) and hands the reply back as a [`Reply`]; the `read_*` functions
//! turn it into a vote, a count or a typed failure. Nothing here does I/O.

use std::borrow::Cow;

use crate::report::NodeKind;
use crate::scripts;

/// A node's failure on one request: the kind, and a text for the report.
pub type Failure = (NodeKind, String);

/// A reply as the driver's client decoded it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// A nil bulk string or nil array.
    Nil,
    /// An integer.
    Int(i64),
    /// A bulk string.
    Data(Vec<u8>),
    /// A simple string such as `OK` (borrowed when the driver knows it: `OK`, every
    /// successful `SET`, is not allocated per reply).
    Status(Cow<'static, str>),
    /// An array.
    Array(Vec<Reply>),
}

/// The protocol's Lua scripts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Script {
    /// [`scripts::ACQUIRE_MULTI`].
    AcquireMulti,
    /// [`scripts::FENCED_ACQUIRE`].
    FencedAcquire,
    /// [`scripts::RAISE`].
    Raise,
    /// [`scripts::RELEASE_ONE`].
    ReleaseOne,
    /// [`scripts::RELEASE`].
    Release,
    /// [`scripts::EXTEND`].
    Extend,
    /// [`scripts::EXTEND_BATCH`].
    ExtendBatch,
    /// [`scripts::MARK`].
    Mark,
    /// [`scripts::LEAVE`].
    Leave,
}

impl Script {
    /// The Lua source.
    pub fn source(self) -> &'static str {
        match self {
            Script::AcquireMulti => scripts::ACQUIRE_MULTI,
            Script::FencedAcquire => scripts::FENCED_ACQUIRE,
            Script::Raise => scripts::RAISE,
            Script::ReleaseOne => scripts::RELEASE_ONE,
            Script::Release => scripts::RELEASE,
            Script::Extend => scripts::EXTEND,
            Script::ExtendBatch => scripts::EXTEND_BATCH,
            Script::Mark => scripts::MARK,
            Script::Leave => scripts::LEAVE,
        }
    }

    /// Every script (for drivers that load or hash them up front).
    pub const ALL: [Script; 9] = [
        Script::AcquireMulti,
        Script::FencedAcquire,
        Script::Raise,
        Script::ReleaseOne,
        Script::Release,
        Script::Extend,
        Script::ExtendBatch,
        Script::Mark,
        Script::Leave,
    ];
}

/// One request to one node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// `SET key value NX PX ttl_ms`.
    SetNx {
        /// The lock key.
        key: Vec<u8>,
        /// The lock value.
        value: Vec<u8>,
        /// The TTL in milliseconds.
        ttl_ms: u64,
    },
    /// `EXISTS keys...`.
    Exists(Vec<Vec<u8>>),
    /// `ZREM line waiter`: a waiter leaves the line of a lock key ([`unmark`]).
    Unmark {
        /// The key's line ([`waiter_line`]).
        line: Vec<u8>,
        /// The waiter id ([`waiter_id`]).
        waiter: Vec<u8>,
    },
    /// A script: `EVALSHA sha n keys... args...`, or `EVAL source ...` after `NOSCRIPT`.
    Eval {
        /// Which script.
        script: Script,
        /// Its keys.
        keys: Vec<Vec<u8>>,
        /// Its arguments.
        args: Vec<Vec<u8>>,
    },
}

impl Command {
    /// Whether a script goes out whole (`EVAL` with its source, never `EVALSHA`): its `EVAL`
    /// after a `NOSCRIPT` would be a second request, which could run after the driver's next
    /// request on the connection. Those that must not: scripts that write keys that did not
    /// hold the caller's value (an acquisition: a later release or cleanup of the same value
    /// would miss it), a waiter's MARK (before its check or attempt), and a LEAVE that gives
    /// grants back (before the waiter's next MARK and attempt). A winner's LEAVE, without a
    /// value, touches no key and precedes nothing.
    pub fn goes_whole(&self) -> bool {
        match self {
            Command::Eval { script, args, .. } => match script {
                Script::AcquireMulti | Script::FencedAcquire | Script::Raise | Script::Mark => true,
                Script::Leave => args.get(1).is_some_and(|value| !value.is_empty()),
                _ => false,
            },
            _ => false,
        }
    }

    /// The command's arguments, name first; scripts as `EVAL` with their source.
    pub fn argv(&self) -> Vec<Vec<u8>> {
        match self {
            Command::SetNx { key, value, ttl_ms } => vec![
                b"SET".to_vec(),
                key.clone(),
                value.clone(),
                b"NX".to_vec(),
                b"PX".to_vec(),
                ttl_ms.to_string().into_bytes(),
            ],
            Command::Exists(keys) => {
                let mut v = vec![b"EXISTS".to_vec()];
                v.extend(keys.iter().cloned());
                v
            }
            Command::Unmark { line, waiter } => {
                vec![b"ZREM".to_vec(), line.clone(), waiter.clone()]
            }
            Command::Eval { script, keys, args } => {
                let mut v = vec![
                    b"EVAL".to_vec(),
                    script.source().as_bytes().to_vec(),
                    keys.len().to_string().into_bytes(),
                ];
                v.extend(keys.iter().cloned());
                v.extend(args.iter().cloned());
                v
            }
        }
    }
}

fn num(n: u64) -> Vec<u8> {
    n.to_string().into_bytes()
}

/// ACQUIRE: `SET NX PX` for one key, ACQUIRE-MULTI for a set.
pub fn acquire(keys: &[Vec<u8>], value: &str, ttl_ms: u64) -> Command {
    if let [key] = keys {
        return Command::SetNx {
            key: key.clone(),
            value: value.as_bytes().to_vec(),
            ttl_ms,
        };
    }
    Command::Eval {
        script: Script::AcquireMulti,
        keys: keys.to_vec(),
        args: vec![value.as_bytes().to_vec(), num(ttl_ms)],
    }
}

/// What an ACQUIRE reply means: `Ok` (written) or `HeldByOther`.
///
/// # Errors
/// `Protocol` for a reply of another shape.
pub fn read_acquire(reply: &Reply) -> Result<NodeKind, Failure> {
    match reply {
        Reply::Int(1) => Ok(NodeKind::Ok),
        Reply::Status(s) if s == "OK" => Ok(NodeKind::Ok),
        Reply::Nil | Reply::Int(0) => Ok(NodeKind::HeldByOther),
        other => Err(unexpected(other)),
    }
}

/// FENCED-ACQUIRE over the lock keys followed by their counter keys.
pub fn fenced_acquire(keys: &[Vec<u8>], value: &str, ttl_ms: u64, counter_ttl_ms: u64) -> Command {
    Command::Eval {
        script: Script::FencedAcquire,
        keys: keys.to_vec(),
        args: vec![value.as_bytes().to_vec(), num(ttl_ms), num(counter_ttl_ms)],
    }
}

/// What a FENCED-ACQUIRE reply over `keys` keys (lock keys and counters) means: the new
/// counters (a vote for), or `None` (held by another owner).
///
/// # Errors
/// `Protocol` for a reply of another shape, or counters that are not positive.
pub fn read_fenced_acquire(reply: &Reply, keys: usize) -> Result<Option<Vec<u64>>, Failure> {
    match reply {
        Reply::Int(0) | Reply::Nil => Ok(None),
        Reply::Array(items) if items.len() * 2 == keys => items
            .iter()
            .map(|v| match v {
                Reply::Int(t) if *t > 0 => u64::try_from(*t).ok(),
                _ => None,
            })
            .collect::<Option<Vec<u64>>>()
            .map(Some)
            .ok_or_else(|| unexpected(reply)),
        _ => Err(unexpected(reply)),
    }
}

/// RAISE (fencing phase 2) over the lock keys followed by their counters.
pub fn raise(keys: &[Vec<u8>], value: &str, tokens: &[u64], counter_ttl_ms: u64) -> Command {
    let mut args = Vec::with_capacity(tokens.len() + 2);
    args.push(value.as_bytes().to_vec());
    args.extend(tokens.iter().map(|t| num(*t)));
    args.push(num(counter_ttl_ms));
    Command::Eval {
        script: Script::Raise,
        keys: keys.to_vec(),
        args,
    }
}

/// What a RAISE reply means: `Ok` (our keys are there, counters raised) or `NotHeld`.
///
/// # Errors
/// `Protocol` for a reply of another shape.
pub fn read_raise(reply: &Reply) -> Result<NodeKind, Failure> {
    match reply {
        Reply::Int(1) => Ok(NodeKind::Ok),
        Reply::Int(0) => Ok(NodeKind::NotHeld),
        other => Err(unexpected(other)),
    }
}

/// EXTEND: compare-and-lengthen; never creates a key.
pub fn extend(keys: &[Vec<u8>], value: &str, ttl_ms: u64) -> Command {
    Command::Eval {
        script: Script::Extend,
        keys: keys.to_vec(),
        args: vec![value.as_bytes().to_vec(), num(ttl_ms)],
    }
}

/// What an EXTEND reply means: `Ok`, `NotHeld` (a key was absent) or `HeldByOther`.
///
/// # Errors
/// `Protocol` for a reply of another shape.
pub fn read_extend(reply: &Reply) -> Result<NodeKind, Failure> {
    match reply {
        Reply::Int(1) => Ok(NodeKind::Ok),
        Reply::Int(0) => Ok(NodeKind::NotHeld),
        Reply::Int(-1) => Ok(NodeKind::HeldByOther),
        other => Err(unexpected(other)),
    }
}

/// One lock of an [`extend_batch`]: its keys, its value and its new ttl in milliseconds.
#[derive(Clone, Copy, Debug)]
pub struct Extension<'a> {
    /// The lock's keys.
    pub keys: &'a [Vec<u8>],
    /// The lock's value.
    pub value: &'a str,
    /// The new ttl in milliseconds.
    pub ttl_ms: u64,
}

/// EXTEND-BATCH: EXTEND for several locks in one request (REDLOCK.md §5.3). On a cluster
/// member every key of the batch must live in one hash slot.
pub fn extend_batch(locks: &[Extension<'_>]) -> Command {
    let mut keys = Vec::with_capacity(locks.iter().map(|l| l.keys.len()).sum());
    let mut args = Vec::with_capacity(3 * locks.len());
    for lock in locks {
        keys.extend_from_slice(lock.keys);
        args.push(num(lock.keys.len() as u64));
        args.push(lock.value.as_bytes().to_vec());
        args.push(num(lock.ttl_ms));
    }
    Command::Eval {
        script: Script::ExtendBatch,
        keys,
        args,
    }
}

/// What an EXTEND-BATCH reply over `locks` locks means: per lock, in the batch's order, an
/// EXTEND answer, or a failure of that lock only (the others of the batch were still
/// handled): `WrongType` when one of its keys holds another type (`-2`), `Script` when
/// reading a key failed otherwise (`-3`). (An ACL that denies a key fails the whole request
/// before the script runs.)
///
/// # Errors
/// `Protocol` for a reply of another shape or length.
pub fn read_extend_batch(
    reply: &Reply,
    locks: usize,
) -> Result<Vec<Result<NodeKind, Failure>>, Failure> {
    let Reply::Array(items) = reply else {
        return Err(unexpected(reply));
    };
    if items.len() != locks {
        return Err(unexpected(reply));
    }
    items
        .iter()
        .map(|item| match item {
            Reply::Int(-2) => Ok(Err((
                NodeKind::WrongType,
                "a lock key holds a value of another type".to_owned(),
            ))),
            Reply::Int(-3) => Ok(Err((
                NodeKind::Script,
                "reading a lock key failed in the batch's script".to_owned(),
            ))),
            other => read_extend(other).map(Ok),
        })
        .collect()
}

/// How a release tells waiters (REDLOCK.md §9).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Notify {
    /// Publishes nothing (`notify(false)`).
    Off,
    /// Publishes every deleted key.
    Always,
    /// Tells waiters only while a deleted key's [`waiter_flag`] exists, and then wakes the
    /// first waiter in its [`waiter_line`] ([`mark`]): `KeyFormat::Braced` keys, whose flags
    /// and lines can never be another lock's key (a braced key ends in `}`, a flag in `:w`, a
    /// line in `:q`); a set with a key without a flag publishes every deleted key.
    Waiters,
}

impl Notify {
    /// The mode of a client with notification `on` and keys in `format`.
    pub fn of(on: bool, format: crate::config::KeyFormat) -> Self {
        match (on, format) {
            (false, _) => Notify::Off,
            (true, crate::config::KeyFormat::Braced) => Notify::Waiters,
            (true, _) => Notify::Always,
        }
    }

    /// The mode for a node whose ACL refused the keys of a release that declares waiter flags
    /// and lines ([`reads_flags`]): `Always` for `Waiters`.
    pub fn without_flags(self) -> Self {
        match self {
            Notify::Waiters => Notify::Always,
            other => other,
        }
    }
}

/// RELEASE: compare-and-delete (RELEASE-ONE for one key), telling waiters as `notify` says.
/// With [`Notify::Waiters`] and a flag for every key, the flags and lines go along (mode
/// "2"): the script reads key and flag with one `MGET`, so a release nobody waits for
/// publishes nothing, and while the flag exists it pops the first waiter of the key's line
/// and publishes its id on that waiter's client's channel ([`named_channel`]), so a release
/// wakes one waiter.
pub fn release(keys: &[Vec<u8>], value: &str, notify: Notify) -> Command {
    let mut all = Vec::with_capacity(keys.len() * 4);
    all.extend_from_slice(keys);
    let mut mode: &[u8] = match notify {
        Notify::Off => b"0",
        Notify::Always | Notify::Waiters => b"1",
    };
    if notify == Notify::Waiters {
        all.extend(keys.iter().map_while(|k| waiter_flag(k)));
        if all.len() == keys.len() * 2 {
            all.extend(keys.iter().filter_map(|k| waiter_line(k)));
            all.extend(keys.iter().filter_map(|k| waiter_grants(k)));
            mode = b"2";
        } else {
            all.truncate(keys.len());
        }
    }
    Command::Eval {
        script: if keys.len() == 1 {
            Script::ReleaseOne
        } else {
            Script::Release
        },
        keys: all,
        args: vec![value.as_bytes().to_vec(), mode.to_vec()],
    }
}

/// Whether [`release`] of `keys` with `notify` declares their waiter flags and lines.
pub fn reads_flags(keys: &[Vec<u8>], notify: Notify) -> bool {
    notify == Notify::Waiters && keys.iter().all(|k| waiter_flag(k).is_some())
}

/// Whether a [`release`] of `keys` with `notify` that a node answered with `kind` is sent
/// there again without flags and lines ([`Notify::without_flags`]), as are that node's later
/// releases: the ACL refused the keys of a release that declares them (`NOPERM` before the
/// script runs: a key pattern that covers the lock keys but not `<key>:w` / `<key>:q`).
pub fn refused_flags(keys: &[Vec<u8>], notify: Notify, kind: NodeKind) -> bool {
    kind == NodeKind::NoPermission && reads_flags(keys, notify)
}

/// The waiter flag of a lock key (REDLOCK.md §9): `<key>:w`, for a key with a Redis Cluster
/// hash tag, so that the flag lives in the key's hash slot; `None` for a key without one,
/// whose releases publish whether anybody waits or not. Only [`Notify::Waiters`] (braced
/// keys) uses flags.
pub fn waiter_flag(key: &[u8]) -> Option<Vec<u8>> {
    let open = key.iter().position(|&b| b == b'{')?;
    let close = key[open + 1..].iter().position(|&b| b == b'}')?;
    if close == 0 {
        return None;
    }
    let mut flag = Vec::with_capacity(key.len() + 2);
    flag.extend_from_slice(key);
    flag.extend_from_slice(b":w");
    Some(flag)
}

/// The line of waiters of a lock key (REDLOCK.md §9): `<key>:q`, a sorted set of waiter ids
/// in the key's hash slot, for a key with a [`waiter_flag`]; `None` otherwise.
pub fn waiter_line(key: &[u8]) -> Option<Vec<u8>> {
    let mut line = waiter_flag(key)?;
    if let Some(last) = line.last_mut() {
        *last = b'q';
    }
    Some(line)
}

/// The registrations of a lock key's waiters (REDLOCK.md §9): `<key>:g`, a hash of waiter id
/// to `<registered ms>:<lock ttl ms>:<n>:<value>` ([`mark_registered`]), for a key with a
/// [`waiter_flag`]; `None` otherwise.
pub fn waiter_grants(key: &[u8]) -> Option<Vec<u8>> {
    let mut regs = waiter_flag(key)?;
    if let Some(last) = regs.last_mut() {
        *last = b'g';
    }
    Some(regs)
}

/// The channel on which a release of `key` wakes every waiter: `<key>:released` (a key
/// without a waiter flag, or a flag that holds a plain mark).
pub fn released_channel(key: &[u8]) -> Vec<u8> {
    let mut c = Vec::with_capacity(key.len() + 9);
    c.extend_from_slice(key);
    c.extend_from_slice(b":released");
    c
}

/// The channel on which a release of `key` names one waiter of `client`:
/// `<key>:released:<client>`; the message is the waiter's id ([`waiter_id`]).
pub fn named_channel(key: &[u8], client: &[u8]) -> Vec<u8> {
    let mut c = released_channel(key);
    c.push(b':');
    c.extend_from_slice(client);
    c
}

/// A client's id in its waiters' ids and named channels: 16 hex digits of `random` (8 bytes
/// from the driver's CSPRNG).
pub fn client_id(random: [u8; 8]) -> Vec<u8> {
    crate::value::hex(&random).into_bytes()
}

/// The channels a waiter for `keys` listens on: each key's [`released_channel`], and with
/// `client` (a waiter standing in the keys' lines) each key's [`named_channel`] of that client.
pub fn release_channels(keys: &[Vec<u8>], client: Option<&[u8]>) -> Vec<Vec<u8>> {
    let mut channels: Vec<Vec<u8>> = keys.iter().map(|k| released_channel(k)).collect();
    if let Some(client) = client {
        channels.extend(keys.iter().map(|k| named_channel(k, client)));
    }
    channels
}

/// A waiter's id, `<client>.<n>`: `client` names the client whose channel a release
/// publishes it on ([`named_channel`]; the client part must not be empty), `n` the waiter
/// within that client.
pub fn waiter_id(client: &[u8], n: u64) -> Vec<u8> {
    let mut id = Vec::with_capacity(client.len() + 21);
    id.extend_from_slice(client);
    id.push(b'.');
    id.extend_from_slice(n.to_string().as_bytes());
    id
}

/// MARK (REDLOCK.md §9): waiter `waiter` ([`waiter_id`]) marks the [`waiter_flag`] of each
/// of `keys` that has one and takes its place in the key's [`waiter_line`]: at the back, or
/// where it stands when already in line; first when `front` (a woken waiter whose attempt
/// lost). Flag and line live at least `ttl_ms`. Sent on a node's connection *before* the
/// waiter's vacancy check or attempt there: a release before it leaves the key gone for the
/// check or the attempt that follows it; one after it wakes the first in line.
/// [`crate::line::Marks`] says when to renew it. A refused mark only costs a notice.
pub fn mark(keys: &[Vec<u8>], waiter: &[u8], ttl_ms: u64, front: bool) -> Vec<Command> {
    keys.iter()
        .filter_map(|k| Some(vec![waiter_flag(k)?, waiter_line(k)?]))
        .map(|keys| Command::Eval {
            script: Script::Mark,
            keys,
            args: vec![
                waiter.to_vec(),
                num(ttl_ms),
                if front { b"1".to_vec() } else { b"0".to_vec() },
            ],
        })
        .collect()
}

/// What a waiter registers for grants ([`mark_registered`]).
#[derive(Clone, Copy, Debug)]
pub struct Registration<'a> {
    /// The value a release sets the key to.
    pub value: &'a str,
    /// The lock's ttl, from the registering mark's run on the node.
    pub ttl_ms: u64,
    /// The waiter's count of its registrations: a grant notice names it, so that a grant of
    /// an earlier registration (given back since) is never counted for a later one.
    pub number: u64,
}

/// MARK that also registers a waiter for grants (REDLOCK.md §9): a release that pops `waiter`
/// from `key`'s line sets the key to the registration's value until this node's time of the
/// mark plus its ttl, and names it as granted, with the registration's number
/// ([`read_notice`]). One braced key only;
/// `None` otherwise. `front`: first in line (a waiter that gave its grants back registers
/// again with a new value, [`leave`]). Only these marks register: a renewal could land after a
/// release popped the waiter and register it again for a call that has moved on.
pub fn mark_registered(
    key: &[u8],
    waiter: &[u8],
    ttl_ms: u64,
    reg: Registration<'_>,
    front: bool,
) -> Option<Command> {
    let reg = [
        &num(reg.ttl_ms)[..],
        b":",
        &num(reg.number),
        b":",
        reg.value.as_bytes(),
    ]
    .concat();
    Some(Command::Eval {
        script: Script::Mark,
        keys: vec![waiter_flag(key)?, waiter_line(key)?, waiter_grants(key)?],
        args: vec![
            waiter.to_vec(),
            num(ttl_ms),
            if front { b"1".to_vec() } else { b"0".to_vec() },
            reg,
        ],
    })
}

/// LEAVE (REDLOCK.md §9): a waiter that registered for grants ([`mark_registered`]) leaves
/// `key`'s line and drops its registration; with `value` (the call did not win with it), a key
/// granted to it meanwhile is deleted and handed on. One braced key only; `None` otherwise.
pub fn leave(key: &[u8], waiter: &[u8], value: Option<&str>) -> Option<Command> {
    Some(Command::Eval {
        script: Script::Leave,
        keys: vec![key.to_vec(), waiter_line(key)?, waiter_grants(key)?],
        args: vec![
            waiter.to_vec(),
            value.unwrap_or_default().as_bytes().to_vec(),
        ],
    })
}

/// A notice on a client's named channel ([`named_channel`]): the waiter id it names, and, when
/// the release granted that waiter the key (`<id> g<n>`, wake.lua), the number of the
/// registration it granted.
pub fn read_notice(payload: &[u8]) -> (&[u8], Option<u64>) {
    let Some(at) = payload.iter().rposition(|&b| b == b' ') else {
        return (payload, None);
    };
    let number = payload[at + 1..]
        .strip_prefix(b"g")
        .and_then(|n| std::str::from_utf8(n).ok())
        .and_then(|n| n.parse().ok());
    match number {
        Some(n) => (&payload[..at], Some(n)),
        None => (payload, None),
    }
}

/// UNMARK: `waiter` leaves the [`waiter_line`] of each of `keys` that has one (a call that
/// ends, won or not). The reply carries nothing.
pub fn unmark(keys: &[Vec<u8>], waiter: &[u8]) -> Vec<Command> {
    keys.iter()
        .filter_map(|k| waiter_line(k))
        .map(|line| Command::Unmark {
            line,
            waiter: waiter.to_vec(),
        })
        .collect()
}

/// What a RELEASE reply over `keys` keys means: how many keys were deleted, and how many
/// held another value.
///
/// # Errors
/// `Protocol` for a reply of another shape.
pub fn read_release(reply: &Reply, keys: usize) -> Result<(usize, usize), Failure> {
    if keys == 1 {
        return match reply {
            Reply::Int(1) => Ok((1, 0)),
            Reply::Int(0) => Ok((0, 0)),
            Reply::Int(-1) => Ok((0, 1)),
            other => Err(unexpected(other)),
        };
    }
    if let Reply::Array(items) = reply
        && let [Reply::Int(deleted), Reply::Int(other)] = items.as_slice()
    {
        let count = |n: i64| usize::try_from(n).unwrap_or(0);
        return Ok((count(*deleted), count(*other)));
    }
    Err(unexpected(reply))
}

/// A release's outcome on one node from its counts over `keys` keys: `Released` (all
/// deleted), `Partial` (some), `HeldByOther` (none, another value present) or `NotHeld`.
pub fn release_kind(deleted: usize, other: usize, keys: usize) -> NodeKind {
    match (deleted, other) {
        (d, _) if d == keys => NodeKind::Released,
        (d, _) if d > 0 => NodeKind::Partial,
        (_, o) if o > 0 => NodeKind::HeldByOther,
        _ => NodeKind::NotHeld,
    }
}

/// `EXISTS` over the keys: whether a release came before a waiter's subscription.
pub fn vacant(keys: &[Vec<u8>]) -> Command {
    Command::Exists(keys.to_vec())
}

/// What an `EXISTS` reply means: `NotHeld` (none of the keys exists) or `HeldByOther`.
///
/// # Errors
/// `Protocol` for a reply of another shape.
pub fn read_vacant(reply: &Reply) -> Result<NodeKind, Failure> {
    match reply {
        Reply::Int(0) => Ok(NodeKind::NotHeld),
        Reply::Int(_) => Ok(NodeKind::HeldByOther),
        other => Err(unexpected(other)),
    }
}

/// The joined answer of a cluster member's per-slot requests to an extend or a raise: `Ok`
/// when every slot said `Ok`, else `HeldByOther` if any slot said so, else the first other
/// kind.
pub fn join_slots(kinds: &[NodeKind]) -> NodeKind {
    if kinds.iter().all(|k| *k == NodeKind::Ok) {
        NodeKind::Ok
    } else if kinds.contains(&NodeKind::HeldByOther) {
        NodeKind::HeldByOther
    } else {
        kinds
            .iter()
            .copied()
            .find(|k| *k != NodeKind::Ok)
            .unwrap_or(NodeKind::NotHeld)
    }
}

/// The node kind of an error reply, from its code (the first word) and text (REDLOCK.md §10).
pub fn error_kind(code: &str, text: &str) -> NodeKind {
    match code {
        "NOAUTH" | "WRONGPASS" => NodeKind::Auth,
        "NOPERM" => NodeKind::NoPermission,
        "OOM" => NodeKind::OutOfMemory,
        "BUSY" => NodeKind::ServerBusy,
        "WRONGTYPE" => NodeKind::WrongType,
        "READONLY" => NodeKind::ReadOnly,
        "LOADING" => NodeKind::Loading,
        "NOSCRIPT" => NodeKind::Script,
        "MOVED" | "ASK" | "CROSSSLOT" | "CLUSTERDOWN" | "TRYAGAIN" | "MASTERDOWN" => {
            NodeKind::ClusterUnsupported
        }
        _ if text.contains("Error running script")
            || text.contains("user_script")
            || text.contains("@user_function") =>
        {
            NodeKind::Script
        }
        _ => NodeKind::Other,
    }
}

fn unexpected(reply: &Reply) -> Failure {
    (NodeKind::Protocol, format!("unexpected reply: {reply:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(n: usize) -> Vec<Vec<u8>> {
        (0..n).map(|i| format!("k{i}").into_bytes()).collect()
    }

    #[test]
    fn acquire_replies_read_as_written_or_held() {
        assert_eq!(read_acquire(&Reply::Int(1)), Ok(NodeKind::Ok));
        assert_eq!(read_acquire(&Reply::Int(0)), Ok(NodeKind::HeldByOther));
    }

    #[test]
    fn one_key_is_a_set_nx_and_a_set_is_a_script() {
        let argv = acquire(&keys(1), "v", 500).argv();
        assert_eq!(argv, [&b"SET"[..], b"k0", b"v", b"NX", b"PX", b"500"]);
        let Command::Eval { script, args, .. } = acquire(&keys(2), "v", 500) else {
            panic!()
        };
        assert_eq!((script, args.len()), (Script::AcquireMulti, 2));
        let argv = release(&keys(2), "v", Notify::Always).argv();
        assert_eq!(argv[0], b"EVAL");
        assert_eq!(argv[2], b"2");
        assert_eq!(argv.last().unwrap(), b"1");
        assert!(matches!(
            release(&keys(1), "v", Notify::Off),
            Command::Eval {
                script: Script::ReleaseOne,
                ..
            }
        ));
        let raised = raise(&keys(4), "v", &[7, 9], 0);
        let Command::Eval { args, .. } = raised else {
            panic!()
        };
        assert_eq!(args, [&b"v"[..], b"7", b"9", b"0"]);
    }

    #[test]
    fn waiter_flags_share_their_key_s_hash_slot() {
        assert_eq!(waiter_flag(b"ql:{a}"), Some(b"ql:{a}:w".to_vec()));
        assert_eq!(waiter_flag(b"{a}b{c}"), Some(b"{a}b{c}:w".to_vec()));
        // No hash tag: the flag would hash elsewhere, so there is none.
        for bare in [&b"a"[..], b"a{}b", b"a{b", b"a}b{"] {
            assert_eq!(waiter_flag(bare), None, "{bare:?}");
        }
        let tagged = vec![b"q:{a}".to_vec(), b"q:{b}".to_vec()];
        let Command::Eval { keys, args, .. } = release(&tagged, "v", Notify::Waiters) else {
            panic!()
        };
        assert_eq!(
            keys,
            [
                &b"q:{a}"[..],
                b"q:{b}",
                b"q:{a}:w",
                b"q:{b}:w",
                b"q:{a}:q",
                b"q:{b}:q",
                b"q:{a}:g",
                b"q:{b}:g"
            ]
        );
        assert_eq!(args[1], b"2");
        assert_eq!(waiter_grants(b"q:{a}"), Some(b"q:{a}:g".to_vec()));
        assert_eq!(waiter_grants(b"a"), None);
        let reg = Registration {
            value: "v",
            ttl_ms: 500,
            number: 3,
        };
        let Some(Command::Eval { keys, args, .. }) =
            mark_registered(b"q:{a}", b"c.1", 40, reg, false)
        else {
            panic!()
        };
        assert_eq!(keys, [&b"q:{a}:w"[..], b"q:{a}:q", b"q:{a}:g"]);
        assert_eq!(args, [&b"c.1"[..], b"40", b"0", b"500:3:v"]);
        assert_eq!(mark_registered(b"a", b"c.1", 40, reg, true), None);
        let Some(Command::Eval { script, keys, args }) = leave(b"q:{a}", b"c.1", Some("v")) else {
            panic!()
        };
        assert_eq!(script, Script::Leave);
        assert_eq!(keys, [&b"q:{a}"[..], b"q:{a}:q", b"q:{a}:g"]);
        assert_eq!(args, [&b"c.1"[..], b"v"]);
        let Some(Command::Eval { args, .. }) = leave(b"q:{a}", b"c.1", None) else {
            panic!()
        };
        assert_eq!(args[1], b"");
        assert_eq!(read_notice(b"c.1 g12"), (&b"c.1"[..], Some(12)));
        assert_eq!(read_notice(b"c.1"), (&b"c.1"[..], None));
        assert_eq!(read_notice(b"c.1 gx"), (&b"c.1 gx"[..], None));
        // One key without a flag: every deleted key is published, as before flags.
        let mixed = vec![b"q:{a}".to_vec(), b"b".to_vec()];
        let Command::Eval { keys, args, .. } = release(&mixed, "v", Notify::Waiters) else {
            panic!()
        };
        assert_eq!((keys.len(), &args[1][..]), (2, &b"1"[..]));
        let Command::Eval { keys, args, .. } = release(&tagged, "v", Notify::Off) else {
            panic!()
        };
        assert_eq!((keys.len(), &args[1][..]), (2, &b"0"[..]));
        let Command::Eval { keys, args, .. } = release(&tagged, "v", Notify::Always) else {
            panic!()
        };
        assert_eq!((keys.len(), &args[1][..]), (2, &b"1"[..]));
        assert!(reads_flags(&tagged, Notify::Waiters));
        assert!(!reads_flags(&tagged, Notify::Always) && !reads_flags(&mixed, Notify::Waiters));
        assert_eq!(Notify::Waiters.without_flags(), Notify::Always);
        assert!(refused_flags(
            &tagged,
            Notify::Waiters,
            NodeKind::NoPermission
        ));
        assert!(!refused_flags(&tagged, Notify::Waiters, NodeKind::Timeout));
        assert!(!refused_flags(
            &mixed,
            Notify::Waiters,
            NodeKind::NoPermission
        ));
        assert_eq!(
            Notify::of(true, crate::config::KeyFormat::Bare),
            Notify::Always
        );
        assert_eq!(
            Notify::of(true, crate::config::KeyFormat::Braced),
            Notify::Waiters
        );
        assert_eq!(
            Notify::of(false, crate::config::KeyFormat::Braced),
            Notify::Off
        );
        let id = waiter_id(b"c1", 7);
        assert_eq!(id, b"c1.7");
        let marks = mark(&mixed, &id, 1_500, false);
        assert_eq!(marks.len(), 1);
        let Command::Eval { script, keys, args } = &marks[0] else {
            panic!()
        };
        assert_eq!(
            (*script, &keys[..]),
            (
                Script::Mark,
                &[b"q:{a}:w".to_vec(), b"q:{a}:q".to_vec()][..]
            )
        );
        assert_eq!(args, &[&b"c1.7"[..], b"1500", b"0"]);
        let Command::Eval { args, .. } = &mark(&tagged, &id, 9, true)[1] else {
            panic!()
        };
        assert_eq!(args[2], b"1");
        assert_eq!(
            unmark(&mixed, &id)[0].argv(),
            [&b"ZREM"[..], b"q:{a}:q", b"c1.7"]
        );
        assert_eq!(released_channel(b"q:{a}"), b"q:{a}:released");
        assert_eq!(named_channel(b"q:{a}", b"c1"), b"q:{a}:released:c1");
        assert_eq!(
            release_channels(&tagged[..1], Some(b"c1")),
            [&b"q:{a}:released"[..], b"q:{a}:released:c1"]
        );
        assert_eq!(release_channels(&tagged[..1], None).len(), 1);
        assert_eq!(
            client_id([0xab, 0, 1, 2, 3, 4, 5, 0xff]),
            b"ab000102030405ff"
        );
    }

    #[test]
    fn replies_become_votes_or_typed_failures() {
        assert_eq!(read_acquire(&Reply::Status("OK".into())), Ok(NodeKind::Ok));
        assert_eq!(read_acquire(&Reply::Nil), Ok(NodeKind::HeldByOther));
        let bad = read_acquire(&Reply::Data(b"garbage".to_vec())).unwrap_err();
        assert_eq!(bad.0, NodeKind::Protocol);
        assert_eq!(read_extend(&Reply::Int(-1)), Ok(NodeKind::HeldByOther));
        assert_eq!(read_extend(&Reply::Int(0)), Ok(NodeKind::NotHeld));
        assert!(read_extend(&Reply::Int(2)).is_err());
        assert_eq!(read_raise(&Reply::Int(1)), Ok(NodeKind::Ok));
        assert_eq!(read_vacant(&Reply::Int(0)), Ok(NodeKind::NotHeld));
        let pair = Reply::Array(vec![Reply::Int(1), Reply::Int(1)]);
        assert_eq!(read_release(&pair, 3), Ok((1, 1)));
        assert_eq!(release_kind(1, 1, 3), NodeKind::Partial);
        assert_eq!(release_kind(0, 1, 3), NodeKind::HeldByOther);
        assert_eq!(release_kind(3, 0, 3), NodeKind::Released);
        assert_eq!(read_release(&Reply::Int(-1), 1), Ok((0, 1)));
        let counters = Reply::Array(vec![Reply::Int(5), Reply::Int(6)]);
        assert_eq!(read_fenced_acquire(&counters, 4), Ok(Some(vec![5, 6])));
        assert_eq!(read_fenced_acquire(&Reply::Int(0), 4), Ok(None));
        let zero = Reply::Array(vec![Reply::Int(0), Reply::Int(6)]);
        assert!(read_fenced_acquire(&zero, 4).is_err(), "a token is never 0");
        assert!(
            read_fenced_acquire(&counters, 6).is_err(),
            "one counter per resource"
        );
    }

    #[test]
    fn error_codes_map_to_kinds() {
        assert_eq!(error_kind("WRONGPASS", ""), NodeKind::Auth);
        assert_eq!(error_kind("NOAUTH", ""), NodeKind::Auth);
        assert_eq!(error_kind("OOM", ""), NodeKind::OutOfMemory);
        assert_eq!(error_kind("BUSY", ""), NodeKind::ServerBusy);
        assert_eq!(error_kind("WRONGTYPE", ""), NodeKind::WrongType);
        assert_eq!(
            error_kind("MOVED", "MOVED 3999 1.2.3.4:6381"),
            NodeKind::ClusterUnsupported
        );
        assert_eq!(
            error_kind("ERR", "Error running script (call to f_x)"),
            NodeKind::Script
        );
        assert_eq!(error_kind("ERR", "unknown command"), NodeKind::Other);
        let denied_70 = "The user executing the script can't run this command or subcommand \
                         script: 0971c0, on @user_script:10.";
        let denied_72 = "ACL failure in script: User locker has no permissions to run the 'mget' \
                         command script: 0971c0, on @user_script:10.";
        for text in [denied_70, denied_72] {
            assert_eq!(error_kind("ERR", text), NodeKind::Script, "{text}");
        }
    }

    #[test]
    fn a_batch_of_extensions_is_one_script_with_an_answer_per_lock() {
        let (one, two) = (keys(1), keys(2));
        let locks = [
            Extension {
                keys: &one,
                value: "a",
                ttl_ms: 100,
            },
            Extension {
                keys: &two,
                value: "b",
                ttl_ms: 200,
            },
        ];
        let Command::Eval { script, keys, args } = extend_batch(&locks) else {
            panic!()
        };
        assert_eq!(script, Script::ExtendBatch);
        assert_eq!(keys, [&b"k0"[..], b"k0", b"k1"]);
        assert_eq!(args, [&b"1"[..], b"a", b"100", b"2", b"b", b"200"]);
        let items = [1, -1, -2, -3].map(Reply::Int).to_vec();
        let answers = read_extend_batch(&Reply::Array(items), 4).unwrap();
        assert_eq!(answers[..2], [Ok(NodeKind::Ok), Ok(NodeKind::HeldByOther)]);
        assert_eq!(answers[2].as_ref().unwrap_err().0, NodeKind::WrongType);
        assert_eq!(answers[3].as_ref().unwrap_err().0, NodeKind::Script);
        let reply = Reply::Array(vec![Reply::Int(1), Reply::Int(-1)]);
        assert!(read_extend_batch(&reply, 3).is_err(), "one answer per lock");
        let bad = Reply::Array(vec![Reply::Int(1), Reply::Int(7)]);
        assert!(read_extend_batch(&bad, 2).is_err());
        assert!(read_extend_batch(&Reply::Int(1), 1).is_err());
    }

    #[test]
    fn slot_answers_join() {
        use NodeKind::*;
        assert_eq!(join_slots(&[Ok, Ok]), Ok);
        assert_eq!(join_slots(&[Ok, NotHeld]), NotHeld);
        assert_eq!(join_slots(&[NotHeld, HeldByOther]), HeldByOther);
    }
}
