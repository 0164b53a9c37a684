//! What a node's own description means for lock traffic (REDLOCK.md §8): the restart
//! quarantine, the eviction check, replicas and single cluster nodes, from parsed `INFO` and
//! `CONFIG GET` replies. A member that is a Redis Cluster is described by each primary; it
//! counts only when every primary would.

use std::collections::HashMap;
use std::time::Duration;

use crate::config::{EvictionCheck, Quarantine};
use crate::report::NodeKind;
use crate::warning::WarningKind;

/// The client-wide settings the checks apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    /// Restart quarantine mode.
    pub quarantine: Quarantine,
    /// `Qp = max_ttl + quarantine_margin`.
    pub quarantine_period: Duration,
    /// Eviction check mode.
    pub eviction: EvictionCheck,
}

/// What one server (a master, or one primary of a cluster member) said about itself.
#[derive(Clone, Copy, Debug)]
pub struct Facts<'a> {
    /// The primary's address inside a cluster member; empty for a single master.
    pub server: &'a str,
    /// Parsed `INFO`, `None` when `INFO` was refused.
    pub info: Option<&'a HashMap<String, String>>,
    /// Parsed `CONFIG GET append*` and `no-appendfsync-on-rewrite` (empty when refused).
    pub config: &'a HashMap<String, String>,
    /// The server belongs to a member given as a Redis Cluster.
    pub cluster: bool,
}

/// The verdict on a member, folded over its servers with [`Decision::add`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Decision {
    /// The servers' run ids, to find one server listed twice.
    pub run_ids: Vec<String>,
    /// The shortest uptime among the servers that told it.
    pub uptime: Option<Duration>,
    /// How long from now lock traffic must wait (restart quarantine); zero when none.
    pub wait: Duration,
    /// Why the member must never carry lock traffic on this connection, if so.
    pub unusable: Option<(NodeKind, String)>,
    /// A server refused `INFO` while the quarantine is on: fenced locks skip the member.
    pub uptime_unknown: bool,
    /// Warnings the driver delivers (once per kind and node).
    pub warnings: Vec<(WarningKind, String)>,
}

impl Decision {
    /// Folds one server's facts in: the member waits for its slowest server's quarantine and
    /// is unusable when any server is.
    pub fn add(&mut self, facts: &Facts<'_>, settings: &Settings) {
        let on = on(facts.server);
        let Some(info) = facts.info else {
            self.uptime_unknown |= settings.quarantine != Quarantine::Off;
            self.warnings.push((
                WarningKind::InfoRefused,
                format!("INFO is refused{on}; the restart quarantine cannot see restarts of this node, and one server listed twice cannot be told apart; allow INFO (+info) for the lock user"),
            ));
            if settings.quarantine == Quarantine::Strict && self.unusable.is_none() {
                self.unusable = Some((
                    NodeKind::NoPermission,
                    format!(
                        "INFO is refused{on} and quarantine is strict; the node is never counted"
                    ),
                ));
            }
            return;
        };
        self.run_ids.extend(info.get("run_id").cloned());
        let uptime = info
            .get("uptime_in_seconds")
            .and_then(|s| s.parse().ok())
            .map_or(Duration::ZERO, Duration::from_secs);
        self.uptime = Some(self.uptime.map_or(uptime, |u| u.min(uptime)));
        if self.unusable.is_none() {
            self.unusable = self
                .misconfiguration(info, settings, facts.cluster)
                .map(|(kind, text)| (kind, format!("{text}{on}")));
        }
        let durable = durable(facts.config);
        if facts.cluster && settings.quarantine != Quarantine::Off && !durable {
            // A cluster client reconnects to a restarted primary by itself and retries, so no
            // restart is ever seen and an uptime-based quarantine would protect nothing.
            if self.unusable.is_none() {
                self.unusable = Some((
                    NodeKind::Quarantined,
                    format!(
                        "a cluster member's primaries must write durably (appendonly yes, appendfsync always) while the restart quarantine is on: the cluster client reconnects to a restarted primary by itself, so the quarantine cannot see restarts{on}; make the primaries durable, or turn the quarantine off and accept the restart hazard"
                    ),
                ));
            }
            return;
        }
        if settings.quarantine != Quarantine::Off && !durable {
            // uptime is rounded down, so the wait is conservative.
            self.wait = self
                .wait
                .max(settings.quarantine_period.saturating_sub(uptime));
        }
        if settings.quarantine == Quarantine::Off && !durable && self.unusable.is_none() {
            self.warnings.push((
                WarningKind::NotDurable,
                format!(
                    "counted without durable writes{on} (up {} s) because the restart quarantine is off: if it restarts, the locks it held are gone and another client can take them while their holders still act; set `appendonly yes` and `appendfsync always`, or turn the quarantine on (quarantine=on)",
                    uptime.as_secs()
                ),
            ));
        }
    }

    fn misconfiguration(
        &mut self,
        info: &HashMap<String, String>,
        settings: &Settings,
        cluster: bool,
    ) -> Option<(NodeKind, String)> {
        if info.get("role").is_some_and(|r| r == "slave") {
            return Some((
                NodeKind::ReadOnly,
                "the node is a replica (role:slave); lock nodes must be masters".to_owned(),
            ));
        }
        if !cluster && info.get("cluster_enabled").is_some_and(|c| c == "1") {
            return Some((
                NodeKind::ClusterUnsupported,
                "cluster mode is enabled: list the whole cluster as one member, redis+cluster://host:port,host:port,... (one node of a cluster cannot route keys by slot)"
                    .to_owned(),
            ));
        }
        let limited = info.get("maxmemory").is_some_and(|m| m != "0");
        let policy = info.get("maxmemory_policy").map_or("", String::as_str);
        if limited && policy != "noeviction" && settings.eviction != EvictionCheck::Off {
            let text = format!("maxmemory-policy {policy} can evict lock keys; set noeviction");
            if settings.eviction == EvictionCheck::Refuse {
                return Some((NodeKind::EvictionPolicy, text));
            }
            self.warnings.push((WarningKind::EvictionPolicy, text));
        }
        None
    }
}

/// `appendonly yes`, `appendfsync always` and `no-appendfsync-on-rewrite no`: every
/// acknowledged write survives `kill -9` and power loss.
pub fn durable(config: &HashMap<String, String>) -> bool {
    let is = |k: &str, v: &str| config.get(k).is_some_and(|x| x == v);
    is("appendonly", "yes") && is("appendfsync", "always") && is("no-appendfsync-on-rewrite", "no")
}

/// " on primary <server>" for a cluster's primary; nothing for a single master.
fn on(server: &str) -> String {
    if server.is_empty() {
        String::new()
    } else {
        format!(" on primary {server}")
    }
}

/// Parses `INFO` text (`key:value` lines, `#` section headers) into a map.
pub fn parse_info(text: &str) -> HashMap<String, String> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn settings(quarantine: Quarantine) -> Settings {
        Settings {
            quarantine,
            quarantine_period: Duration::from_secs(65),
            eviction: EvictionCheck::Refuse,
        }
    }

    #[test]
    fn info_parses() {
        let info = parse_info(
            "# Server\r\nredis_version:7.0.15\r\nuptime_in_seconds:42\r\n\r\n# Memory\r\nmaxmemory_policy:noeviction\r\n",
        );
        assert_eq!(info["redis_version"], "7.0.15");
        assert_eq!(info["uptime_in_seconds"], "42");
        assert_eq!(info["maxmemory_policy"], "noeviction");
    }

    #[test]
    fn quarantine_waits_for_the_youngest_non_durable_server() {
        let young = map(&[("uptime_in_seconds", "5"), ("run_id", "a")]);
        let old = map(&[("uptime_in_seconds", "600"), ("run_id", "b")]);
        let plain = HashMap::new();
        let aof = map(&[
            ("appendonly", "yes"),
            ("appendfsync", "always"),
            ("no-appendfsync-on-rewrite", "no"),
        ]);
        let mut d = Decision::default();
        let s = settings(Quarantine::On);
        d.add(
            &Facts {
                server: "p1",
                info: Some(&old),
                config: &plain,
                cluster: false,
            },
            &s,
        );
        d.add(
            &Facts {
                server: "p2",
                info: Some(&young),
                config: &plain,
                cluster: false,
            },
            &s,
        );
        assert_eq!(d.wait, Duration::from_secs(60));
        assert_eq!(d.uptime, Some(Duration::from_secs(5)));
        assert_eq!(d.run_ids, vec!["b", "a"]);
        let mut durable_one = Decision::default();
        durable_one.add(
            &Facts {
                server: "",
                info: Some(&young),
                config: &aof,
                cluster: false,
            },
            &s,
        );
        assert_eq!(durable_one.wait, Duration::ZERO);
        // Off: counted at once, with a warning that names the remedy.
        let mut off = Decision::default();
        off.add(
            &Facts {
                server: "",
                info: Some(&young),
                config: &plain,
                cluster: false,
            },
            &settings(Quarantine::Off),
        );
        assert_eq!(off.wait, Duration::ZERO);
        assert_eq!(off.warnings.len(), 1);
        assert!(off.warnings[0].1.contains("appendfsync always"));
    }

    #[test]
    fn refusals() {
        let s = settings(Quarantine::On);
        let plain = HashMap::new();
        let replica = map(&[("role", "slave")]);
        let cluster_node = map(&[("cluster_enabled", "1")]);
        let evicting = map(&[("maxmemory", "100"), ("maxmemory_policy", "allkeys-lru")]);
        let verdict = |info: &HashMap<String, String>, cluster| {
            let mut d = Decision::default();
            d.add(
                &Facts {
                    server: "",
                    info: Some(info),
                    config: &plain,
                    cluster,
                },
                &s,
            );
            d.unusable.map(|(k, _)| k)
        };
        assert_eq!(verdict(&replica, false), Some(NodeKind::ReadOnly));
        assert_eq!(
            verdict(&cluster_node, false),
            Some(NodeKind::ClusterUnsupported)
        );
        assert_eq!(
            verdict(&cluster_node, true),
            Some(NodeKind::Quarantined),
            "a plain primary"
        );
        let mut durable_cluster = Decision::default();
        let aof = map(&[
            ("appendonly", "yes"),
            ("appendfsync", "always"),
            ("no-appendfsync-on-rewrite", "no"),
        ]);
        durable_cluster.add(
            &Facts {
                server: "p",
                info: Some(&cluster_node),
                config: &aof,
                cluster: true,
            },
            &s,
        );
        assert_eq!(durable_cluster.unusable, None);
        assert_eq!(verdict(&evicting, false), Some(NodeKind::EvictionPolicy));
        let mut strict = Decision::default();
        strict.add(
            &Facts {
                server: "",
                info: None,
                config: &plain,
                cluster: false,
            },
            &settings(Quarantine::Strict),
        );
        assert_eq!(
            strict.unusable.map(|(k, _)| k),
            Some(NodeKind::NoPermission)
        );
        assert!(strict.uptime_unknown);
    }
}
