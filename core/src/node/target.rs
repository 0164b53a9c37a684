//! What one quorum member is: a single Redis master, or a Redis Cluster whose keys route by
//! hash slot (REDLOCK.md §2.8). Both are one vote; a cluster member answers for a key through
//! the primary that serves the key's slot, following `MOVED` and `ASK`.

use std::time::Duration;

use redis::aio::{ConnectionLike, MultiplexedConnection};
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, ConnectionAddr, RedisResult, TlsCertificates, Value};

pub(crate) use super::tls;

/// How often a cluster member's client follows a redirection or retries a request before it
/// gives up; each round still ends at its own deadline.
const CLUSTER_RETRIES: u32 = 3;

/// How a member is reached. One per member, made once: the size difference of the
/// variants costs nothing.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Target {
    Single(redis::Client),
    Cluster {
        client: ClusterClient,
        /// The seed nodes, for display and for release notification: a `PUBLISH` in a
        /// cluster reaches every node, so one subscription on a seed hears every release.
        seeds: Vec<redis::Client>,
    },
}

impl Target {
    /// The client a pub/sub connection for release notification is opened with.
    pub(crate) fn pubsub_client(&self) -> &redis::Client {
        match self {
            Target::Single(c) => c,
            // `parse_cluster` never returns a cluster without seeds.
            Target::Cluster { seeds, .. } => &seeds[0],
        }
    }

    pub(crate) fn is_cluster(&self) -> bool {
        matches!(self, Target::Cluster { .. })
    }

    /// `host:port/db`, `unix:path/db`, or `cluster(host:port,...)`; never credentials.
    pub(crate) fn display(&self) -> String {
        match self {
            Target::Single(c) => display_address(c),
            Target::Cluster { seeds, .. } => {
                let s: Vec<String> = seeds.iter().map(server_address).collect();
                let tls = seeds.first().is_some_and(|c| {
                    matches!(
                        c.get_connection_info().addr(),
                        ConnectionAddr::TcpTls { .. }
                    )
                });
                format!(
                    "cluster({}){}",
                    s.join(","),
                    if tls { " (tls)" } else { "" }
                )
            }
        }
    }

    /// The servers behind the member, whatever the database and credentials, to find one
    /// server listed twice.
    pub(crate) fn servers(&self) -> Vec<String> {
        match self {
            Target::Single(c) => vec![server_address(c)],
            Target::Cluster { seeds, .. } => seeds.iter().map(server_address).collect(),
        }
    }

    /// Opens the member's connection.
    pub(crate) async fn connect(&self, timeout: Duration) -> RedisResult<Conn> {
        match self {
            Target::Single(c) => {
                let config = redis::AsyncConnectionConfig::new()
                    .set_connection_timeout(Some(timeout))
                    .set_response_timeout(None)
                    .set_pipeline_buffer_size(PIPELINE_BUFFER);
                let mux = c
                    .get_multiplexed_async_connection_with_config(&config)
                    .await?;
                Ok(Conn::Single(mux))
            }
            Target::Cluster { client, .. } => Ok(Conn::Cluster(Box::new(
                client.get_async_connection().await?,
            ))),
        }
    }
}

/// The multiplexed connection's queue of commands its task has not yet taken (redis-rs's
/// default is 50). A caller waiting for room in a full queue is queued only when it is polled
/// again, so in a burst (a round decided at the quorum leaves its slow requests to a
/// background task) a release could pass its own lock's `SET` and leave the key behind until
/// its ttl. The bound is kept far beyond any number of requests in flight: each one is a
/// caller's, and every round is bounded by its deadline. The queue's blocks are allocated as
/// they fill.
const PIPELINE_BUFFER: usize = 1 << 24;

/// One member's connection: multiplexed for a single master, slot-routed for a cluster.
#[derive(Clone)]
pub(crate) enum Conn {
    Single(MultiplexedConnection),
    Cluster(Box<ClusterConnection>),
}

impl Conn {
    /// Sends one command: to the master, or to the primary of the command's first key.
    ///
    /// On a single master the first poll of the returned future queues the command on the
    /// connection: the rounds rely on it (a request polled once is ordered before every later
    /// request of the same connection, such as the release or cleanup of the same value). The
    /// queue's bound is out of reach ([`PIPELINE_BUFFER`]) and the future's polls are exempt
    /// from tokio's cooperative budget, either of which would otherwise leave the command
    /// unqueued and let a later one overtake it. This holds while redis-rs awaits nothing
    /// before its queue: no `concurrency_limit`, no client-side cache, no credentials
    /// provider (`core/tests/ordering.rs` checks it).
    pub(crate) async fn send(&mut self, cmd: &Cmd) -> RedisResult<Value> {
        match self {
            Conn::Single(m) => tokio::task::unconstrained(m.send_packed_command(cmd)).await,
            // redis-rs's cluster driver keeps no order between requests: a release waits for
            // the acquisitions of its value instead (`writes.rs`).
            Conn::Cluster(c) => tokio::task::unconstrained(c.req_packed_command(cmd)).await,
        }
    }

    /// Sends one command to every primary of a cluster, and returns each one's reply by
    /// address; a single master answers under its own empty address.
    pub(crate) async fn send_to_primaries(
        &mut self,
        cmd: &Cmd,
    ) -> RedisResult<Vec<(String, RedisResult<Value>)>> {
        use redis::cluster_routing::{MultipleNodeRoutingInfo, RoutingInfo};
        match self {
            Conn::Single(m) => Ok(vec![(
                String::new(),
                reply(m.send_packed_command(cmd).await),
            )]),
            Conn::Cluster(c) => {
                let routing = RoutingInfo::MultiNode((MultipleNodeRoutingInfo::AllMasters, None));
                match c.route_command(cmd.clone(), routing).await? {
                    Value::Map(pairs) => Ok(pairs
                        .into_iter()
                        .map(|(addr, v)| {
                            let addr = match addr {
                                Value::BulkString(b) => String::from_utf8_lossy(&b).into_owned(),
                                other => format!("{other:?}"),
                            };
                            (addr, reply(Ok(v)))
                        })
                        .collect()),
                    other => Ok(vec![(String::new(), reply(Ok(other)))]),
                }
            }
        }
    }
}

/// An error reply may arrive as `Ok(Value::ServerError)`; make it an `Err`.
pub(crate) fn reply(r: RedisResult<Value>) -> RedisResult<Value> {
    match r {
        Ok(Value::ServerError(e)) => Err(redis::RedisError::from(e)),
        other => other,
    }
}

/// Parses `redis+cluster://[user:password@]host:port[,host:port...][/?query]` (or
/// `rediss+cluster://` for TLS) into a cluster member; `Ok(None)` for any other scheme.
/// Credentials and TLS apply to every node of the cluster.
pub(crate) fn parse_cluster(
    url: &str,
    certs: Option<TlsCertificates>,
    connect_timeout: Duration,
) -> Result<Option<Target>, String> {
    let lower = url.to_ascii_lowercase();
    let (scheme, rest) = if lower.starts_with("redis+cluster://") {
        ("redis", &url["redis+cluster://".len()..])
    } else if lower.starts_with("rediss+cluster://") {
        ("rediss", &url["rediss+cluster://".len()..])
    } else {
        return Ok(None);
    };
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let (userinfo, hosts) = match authority.rfind('@') {
        Some(at) => (&authority[..=at], &authority[at + 1..]),
        None => ("", authority),
    };
    if tail
        .trim_start_matches('/')
        .split('?')
        .next()
        .is_some_and(|db| !db.is_empty() && db != "0")
    {
        return Err("a Redis Cluster has only database 0".to_owned());
    }
    let query = tail.find('?').map_or("", |q| &tail[q..]);
    let mut seeds = Vec::new();
    for (k, host) in hosts.split(',').map(str::trim).enumerate() {
        if host.is_empty() {
            return Err("a cluster URL lists host:port pairs separated by commas".to_owned());
        }
        let seed = format!("{scheme}://{userinfo}{host}/{query}");
        // Neither the seed's text (a malformed URL can put credentials there) nor the redis
        // error (which never echoes the URL) leaks credentials.
        let client = match &certs {
            Some(c) => redis::Client::build_with_tls(seed, c.clone()),
            None => redis::Client::open(seed),
        }
        .map_err(|e| format!("invalid cluster seed #{k} ({e})"))?;
        seeds.push(client);
    }
    let infos: Vec<redis::ConnectionInfo> = seeds
        .iter()
        .map(|c| c.get_connection_info().clone())
        .collect();
    let mut builder = ClusterClient::builder(infos)
        .connection_timeout(connect_timeout)
        .retries(CLUSTER_RETRIES);
    if let Some(c) = certs {
        builder = builder.certs(c);
    }
    let client = builder
        .build()
        .map_err(|e| format!("invalid cluster URL ({e})"))?;
    Ok(Some(Target::Cluster { client, seeds }))
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

/// The server behind a client, whatever its database and credentials: `host:port` or
/// `unix:path`. Two nodes with the same server address are one master.
pub(crate) fn server_address(client: &redis::Client) -> String {
    match client.get_connection_info().addr() {
        ConnectionAddr::Tcp(host, port) | ConnectionAddr::TcpTls { host, port, .. } => {
            format!("{}:{port}", host.to_ascii_lowercase())
        }
        ConnectionAddr::Unix(path) => format!("unix:{}", path.display()),
        other => format!("{other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster(url: &str) -> Result<Option<Target>, String> {
        parse_cluster(url, None, Duration::from_secs(1))
    }

    #[test]
    fn cluster_urls_parse_into_seeds() {
        let t = cluster("redis+cluster://u:s3cret@127.0.0.1:7000,127.0.0.1:7001")
            .unwrap()
            .unwrap();
        assert!(t.is_cluster());
        assert_eq!(t.servers(), vec!["127.0.0.1:7000", "127.0.0.1:7001"]);
        let shown = t.display();
        assert_eq!(shown, "cluster(127.0.0.1:7000,127.0.0.1:7001)");
        assert!(!shown.contains("s3cret"));
        let tls = cluster("rediss+cluster://h:7000/?protocol=resp3")
            .unwrap()
            .unwrap();
        assert!(tls.display().ends_with("(tls)"), "{}", tls.display());
        assert!(cluster("redis://h:1").unwrap().is_none());
    }

    #[test]
    fn bad_cluster_urls_are_refused_without_credentials() {
        for url in [
            "redis+cluster://",
            "redis+cluster://h:1,,h:2",
            "redis+cluster://h:1/3",
            "redis+cluster://u:s3cret@h:notaport",
            "redis+cluster://user:pa?ss@h:1",
        ] {
            let e = cluster(url).err().unwrap_or_default();
            assert!(!e.is_empty(), "{url} accepted");
            assert!(!e.contains("s3cret"), "{e}");
        }
    }
}
