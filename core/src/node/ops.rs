//! The per-node halves of acquire, extend and release: which command goes out and how the
//! reply becomes a vote.

use redis::Value;

use super::{Node, NodeFailure, Traffic, scripts};
use crate::report::NodeKind;

impl Node {
    /// ACQUIRE on this node: `SET key value NX PX ttl` for one key, ACQUIRE-MULTI for a set.
    /// `Ok` is a vote for, `HeldByOther` a key already present.
    pub(crate) async fn acquire(
        &self,
        keys: &[Vec<u8>],
        value: &str,
        ttl_ms: u64,
    ) -> Result<NodeKind, NodeFailure> {
        let reply = if let [key] = keys {
            let mut cmd = redis::cmd("SET");
            cmd.arg(key.as_slice())
                .arg(value)
                .arg("NX")
                .arg("PX")
                .arg(ttl_ms);
            self.send(&cmd, Traffic::Lock).await?
        } else {
            let ttl = ttl_ms.to_string();
            self.eval(
                &scripts::ACQUIRE_MULTI,
                keys,
                &[value.as_bytes(), ttl.as_bytes()],
                Traffic::Lock,
            )
            .await?
        };
        match reply {
            Value::Okay | Value::Int(1) => Ok(NodeKind::Ok),
            Value::SimpleString(s) if s == "OK" => Ok(NodeKind::Ok),
            Value::Nil | Value::Int(0) => Ok(NodeKind::HeldByOther),
            other => Err(unexpected(&other)),
        }
    }

    /// EXTEND on this node: `Ok` when every key held the value (and is now at least
    /// `ttl_ms` long), `NotHeld` when a key was absent, `HeldByOther` when another value held
    /// one. Nothing is written unless the answer is `Ok`.
    pub(crate) async fn extend(
        &self,
        keys: &[Vec<u8>],
        value: &str,
        ttl_ms: u64,
    ) -> Result<NodeKind, NodeFailure> {
        let ttl = ttl_ms.to_string();
        match self
            .eval(
                &scripts::EXTEND,
                keys,
                &[value.as_bytes(), ttl.as_bytes()],
                Traffic::Lock,
            )
            .await?
        {
            Value::Int(1) => Ok(NodeKind::Ok),
            Value::Int(0) => Ok(NodeKind::NotHeld),
            Value::Int(-1) => Ok(NodeKind::HeldByOther),
            other => Err(unexpected(&other)),
        }
    }

    /// RELEASE on this node: `Released` (all keys deleted), `Partial` (some), `HeldByOther`
    /// (none, another value present) or `NotHeld`. With `notify`, each deleted key is
    /// published on its release channel.
    pub(crate) async fn release(
        &self,
        keys: &[Vec<u8>],
        value: &str,
        notify: bool,
    ) -> Result<NodeKind, NodeFailure> {
        let flag: &[u8] = if notify { b"1" } else { b"0" };
        if keys.len() == 1 {
            return match self
                .eval(
                    &scripts::RELEASE_ONE,
                    keys,
                    &[value.as_bytes(), flag],
                    Traffic::Any,
                )
                .await?
            {
                Value::Int(1) => Ok(NodeKind::Released),
                Value::Int(0) => Ok(NodeKind::NotHeld),
                Value::Int(-1) => Ok(NodeKind::HeldByOther),
                other => Err(unexpected(&other)),
            };
        }
        let reply = self
            .eval(
                &scripts::RELEASE,
                keys,
                &[value.as_bytes(), flag],
                Traffic::Any,
            )
            .await?;
        let counts = match &reply {
            Value::Array(items) => match items.as_slice() {
                [Value::Int(deleted), Value::Int(other)] => Some((*deleted, *other)),
                _ => None,
            },
            _ => None,
        };
        let Some((deleted, other)) = counts else {
            return Err(unexpected(&reply));
        };
        Ok(match (usize::try_from(deleted).unwrap_or(0), other) {
            (d, _) if d == keys.len() => NodeKind::Released,
            (d, _) if d > 0 => NodeKind::Partial,
            (_, o) if o > 0 => NodeKind::HeldByOther,
            _ => NodeKind::NotHeld,
        })
    }
}

impl Node {
    /// Whether none of `keys` exists here (`NotHeld`) or some does (`HeldByOther`): a read
    /// that tells a waiter whether a release came before its subscription.
    pub(crate) async fn vacant(&self, keys: &[Vec<u8>]) -> Result<NodeKind, NodeFailure> {
        let mut cmd = redis::cmd("EXISTS");
        for k in keys {
            cmd.arg(k.as_slice());
        }
        match self.send(&cmd, Traffic::Lock).await? {
            Value::Int(0) => Ok(NodeKind::NotHeld),
            Value::Int(_) => Ok(NodeKind::HeldByOther),
            other => Err(unexpected(&other)),
        }
    }
}

fn unexpected(reply: &Value) -> NodeFailure {
    (NodeKind::Protocol, format!("unexpected reply: {reply:?}"))
}

impl Node {
    /// FENCED-ACQUIRE on this node. `keys` holds the lock keys followed by their counter
    /// keys. `Ok(Some(tokens))` is a vote for with one new counter per resource;
    /// `Ok(None)` a key held by another owner.
    pub(crate) async fn fenced_acquire(
        &self,
        keys: &[Vec<u8>],
        value: &str,
        ttl_ms: u64,
        counter_ttl_ms: u64,
    ) -> Result<Option<Vec<u64>>, NodeFailure> {
        let (ttl, counter_ttl) = (ttl_ms.to_string(), counter_ttl_ms.to_string());
        let reply = self
            .eval(
                &scripts::FENCED_ACQUIRE,
                keys,
                &[value.as_bytes(), ttl.as_bytes(), counter_ttl.as_bytes()],
                Traffic::Fenced,
            )
            .await?;
        match &reply {
            Value::Int(0) | Value::Nil => Ok(None),
            Value::Array(items) if items.len() * 2 == keys.len() => items
                .iter()
                .map(|v| match v {
                    Value::Int(t) if *t > 0 => u64::try_from(*t).ok(),
                    _ => None,
                })
                .collect::<Option<Vec<u64>>>()
                .map(Some)
                .ok_or_else(|| unexpected(&reply)),
            _ => Err(unexpected(&reply)),
        }
    }

    /// RAISE on this node (fencing phase 2): `Ok` when our keys are still there and the
    /// counters are now at least `tokens`; `NotHeld` (nothing written) otherwise.
    pub(crate) async fn raise(
        &self,
        keys: &[Vec<u8>],
        value: &str,
        tokens: &[u64],
        counter_ttl_ms: u64,
    ) -> Result<NodeKind, NodeFailure> {
        let mut args: Vec<String> = Vec::with_capacity(tokens.len() + 2);
        args.push(value.to_owned());
        args.extend(tokens.iter().map(u64::to_string));
        args.push(counter_ttl_ms.to_string());
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        match self
            .eval(&scripts::RAISE, keys, &args, Traffic::Fenced)
            .await?
        {
            Value::Int(1) => Ok(NodeKind::Ok),
            Value::Int(0) => Ok(NodeKind::NotHeld),
            other => Err(unexpected(&other)),
        }
    }
}
