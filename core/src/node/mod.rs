//! One Redis master: its connection (opened at start-up, re-opened in the background), the
//! requests the engine sends and the classification of their replies and errors.

pub(crate) mod probe;
pub(crate) mod scripts;

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{Cmd, ConnectionAddr, ErrorKind as RedisKind, RedisError, ServerErrorKind, Value};
use tokio::runtime::Handle;

use crate::report::NodeKind;
use scripts::Script;

/// A failed request on one node: the kind and a short text.
pub(crate) type NodeFailure = (NodeKind, String);

enum State {
    /// No connection yet; the last connect failure, if any.
    Connecting(Option<NodeFailure>),
    Ready(ConnectionManager),
}

/// One configured lock node.
pub(crate) struct Node {
    pub(crate) index: usize,
    pub(crate) address: String,
    client: redis::Client,
    connect_timeout: Duration,
    state: Mutex<State>,
}

impl Node {
    pub(crate) fn new(index: usize, client: redis::Client, connect_timeout: Duration) -> Self {
        Self {
            index,
            address: display_address(&client),
            client,
            connect_timeout,
            state: Mutex::new(State::Connecting(None)),
        }
    }

    /// Tries to connect once; on failure records why.
    pub(crate) async fn connect_once(&self) -> bool {
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(self.connect_timeout))
            .set_response_timeout(None)
            .set_number_of_retries(1)
            .set_min_delay(Duration::from_millis(20))
            .set_max_delay(Duration::from_millis(500));
        let attempt = tokio::time::timeout(
            self.connect_timeout,
            ConnectionManager::new_with_config(self.client.clone(), config),
        )
        .await;
        let next = match attempt {
            Ok(Ok(conn)) => State::Ready(conn),
            Ok(Err(e)) => State::Connecting(Some(classify(&e))),
            Err(_) => State::Connecting(Some((
                NodeKind::Timeout,
                format!("no connection within {:?}", self.connect_timeout),
            ))),
        };
        let ready = matches!(next, State::Ready(_));
        if let State::Connecting(Some((kind, text))) = &next {
            tracing::debug!(node = self.index, address = %self.address, %kind, %text, "connect failed");
        }
        *lock(&self.state) = next;
        ready
    }

    /// Keeps trying to connect in the background with backoff until connected or the node
    /// is dropped.
    pub(crate) fn spawn_reconnect(self: &Arc<Self>, rt: &Handle) {
        let weak: Weak<Node> = Arc::downgrade(self);
        rt.spawn(async move {
            let mut backoff = Duration::from_millis(50);
            loop {
                tokio::time::sleep(backoff).await;
                let Some(node) = weak.upgrade() else { return };
                if node.connect_once().await {
                    tracing::debug!(node = node.index, "connected");
                    return;
                }
                backoff = (backoff * 2).min(Duration::from_secs(2));
            }
        });
    }

    /// The last connect failure, when the node has no connection.
    pub(crate) fn connect_failure(&self) -> Option<NodeFailure> {
        match &*lock(&self.state) {
            State::Ready(_) => None,
            State::Connecting(last) => Some(
                last.clone()
                    .unwrap_or((NodeKind::NotConnected, "not connected yet".to_owned())),
            ),
        }
    }

    fn connection(&self) -> Result<ConnectionManager, NodeFailure> {
        match &*lock(&self.state) {
            State::Ready(c) => Ok(c.clone()),
            State::Connecting(last) => Err(match last {
                // Keep the real cause (refused, auth, ...) visible in reports.
                Some((kind, text)) => (*kind, format!("not connected: {text}")),
                None => (NodeKind::NotConnected, "not connected yet".to_owned()),
            }),
        }
    }

    /// Sends one command and returns its reply. Error replies become failures.
    pub(crate) async fn send(&self, cmd: &Cmd) -> Result<Value, NodeFailure> {
        let mut conn = self.connection()?;
        reply(conn.send_packed_command(cmd).await).map_err(|e| classify(&e))
    }

    /// Runs a script by SHA-1, falling back once to `EVAL` on `NOSCRIPT`.
    pub(crate) async fn eval(
        &self,
        script: &Script,
        keys: &[Vec<u8>],
        args: &[&[u8]],
    ) -> Result<Value, NodeFailure> {
        let mut conn = self.connection()?;
        let first = reply(
            conn.send_packed_command(&script.cmd(false, keys, args))
                .await,
        );
        match first {
            Err(e) if e.kind() == RedisKind::Server(ServerErrorKind::NoScript) => reply(
                conn.send_packed_command(&script.cmd(true, keys, args))
                    .await,
            ),
            other => other,
        }
        .map_err(|e| classify(&e))
    }
}

/// An error reply may arrive as `Ok(Value::ServerError)`; make it an `Err`.
fn reply(r: redis::RedisResult<Value>) -> redis::RedisResult<Value> {
    match r {
        Ok(Value::ServerError(e)) => Err(RedisError::from(e)),
        other => other,
    }
}

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
            self.send(&cmd).await?
        } else {
            let ttl = ttl_ms.to_string();
            self.eval(
                &scripts::ACQUIRE_MULTI,
                keys,
                &[value.as_bytes(), ttl.as_bytes()],
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
            .eval(&scripts::EXTEND, keys, &[value.as_bytes(), ttl.as_bytes()])
            .await?
        {
            Value::Int(1) => Ok(NodeKind::Ok),
            Value::Int(0) => Ok(NodeKind::NotHeld),
            Value::Int(-1) => Ok(NodeKind::HeldByOther),
            other => Err(unexpected(&other)),
        }
    }

    /// RELEASE on this node: `Released` (all keys deleted), `Partial` (some), `HeldByOther`
    /// (none, another value present) or `NotHeld`.
    pub(crate) async fn release(
        &self,
        keys: &[Vec<u8>],
        value: &str,
    ) -> Result<NodeKind, NodeFailure> {
        let reply = self
            .eval(&scripts::RELEASE, keys, &[value.as_bytes()])
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

fn unexpected(reply: &Value) -> NodeFailure {
    (NodeKind::Protocol, format!("unexpected reply: {reply:?}"))
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A poisoned state mutex only means a panic elsewhere while holding it; the state itself
    // is always a complete value, so keep using it.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// `host:port/db` (or `unix:path/db`), never with credentials.
pub(crate) fn display_address(client: &redis::Client) -> String {
    let info = client.get_connection_info();
    let db = info.redis_settings().db();
    match info.addr() {
        ConnectionAddr::Tcp(host, port) => format!("{host}:{port}/{db}"),
        ConnectionAddr::TcpTls { host, port, .. } => format!("{host}:{port}/{db} (tls)"),
        ConnectionAddr::Unix(path) => format!("unix:{}/{db}", path.display()),
        _ => format!("unknown/{db}"),
    }
}

/// Maps a redis-rs error to a node kind and a short text (REDLOCK.md §10).
pub(crate) fn classify(e: &RedisError) -> NodeFailure {
    let text = e.to_string();
    let kind = match e.kind() {
        RedisKind::AuthenticationFailed => NodeKind::Auth,
        RedisKind::Io => {
            let lower = text.to_ascii_lowercase();
            if e.is_connection_refusal() || lower.contains("connection refused") {
                NodeKind::ConnectionRefused
            } else if lower.contains("tls") || lower.contains("certificate") {
                NodeKind::Tls
            } else {
                NodeKind::ConnectionLost
            }
        }
        RedisKind::Parse | RedisKind::UnexpectedReturnType => NodeKind::Protocol,
        RedisKind::Server(ServerErrorKind::NoPerm) => NodeKind::NoPermission,
        RedisKind::Server(ServerErrorKind::ReadOnly) => NodeKind::ReadOnly,
        RedisKind::Server(ServerErrorKind::BusyLoading) => NodeKind::Loading,
        RedisKind::Server(ServerErrorKind::NoScript) => NodeKind::Script,
        RedisKind::Server(
            ServerErrorKind::Moved
            | ServerErrorKind::Ask
            | ServerErrorKind::CrossSlot
            | ServerErrorKind::ClusterDown
            | ServerErrorKind::TryAgain
            | ServerErrorKind::MasterDown,
        ) => NodeKind::ClusterUnsupported,
        _ => by_code(e.code().unwrap_or(""), &text),
    };
    (kind, text)
}

fn by_code(code: &str, text: &str) -> NodeKind {
    match code {
        "NOAUTH" | "WRONGPASS" => NodeKind::Auth,
        "NOPERM" => NodeKind::NoPermission,
        "OOM" => NodeKind::OutOfMemory,
        "BUSY" => NodeKind::ServerBusy,
        "WRONGTYPE" => NodeKind::WrongType,
        "READONLY" => NodeKind::ReadOnly,
        "LOADING" => NodeKind::Loading,
        "NOSCRIPT" => NodeKind::Script,
        _ if text.contains("Error running script")
            || text.contains("user_script")
            || text.contains("@user_function") =>
        {
            NodeKind::Script
        }
        _ => NodeKind::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_map_to_kinds() {
        assert_eq!(by_code("WRONGPASS", ""), NodeKind::Auth);
        assert_eq!(by_code("NOAUTH", ""), NodeKind::Auth);
        assert_eq!(by_code("OOM", ""), NodeKind::OutOfMemory);
        assert_eq!(by_code("BUSY", ""), NodeKind::ServerBusy);
        assert_eq!(by_code("WRONGTYPE", ""), NodeKind::WrongType);
        assert_eq!(
            by_code("ERR", "Error running script (call to f_x)"),
            NodeKind::Script
        );
        assert_eq!(by_code("ERR", "unknown command"), NodeKind::Other);
    }

    #[test]
    fn addresses_hide_credentials() {
        let c = redis::Client::open("redis://user:s3cret@127.0.0.1:6390/2").unwrap();
        let a = display_address(&c);
        assert_eq!(a, "127.0.0.1:6390/2");
        assert!(!a.contains("s3cret"));
    }
}
