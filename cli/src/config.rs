//! Where the nodes and defaults come from: `--nodes`, `QUORUMLOCK_NODES`, or the config
//! file `quorumlock.toml` (current directory, `--config` or `QUORUMLOCK_CONFIG`); durations
//! in humantime style (`500ms`, `30s`, `2m`).

use std::path::Path;
use std::time::Duration;

use quorumlock::{Client, LockOptions};
use serde::Deserialize;

use crate::CliError;

/// The config file looked up in the current directory.
pub(crate) const CONFIG_FILE: &str = "quorumlock.toml";

/// Default wait budget of `run`.
pub(crate) const DEFAULT_WAIT: Duration = Duration::from_secs(30);

/// Nodes and defaults after merging flags, environment and the config file.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Settings {
    /// Node URLs, in order.
    pub(crate) nodes: Vec<String>,
    /// `ttl` from the config file.
    pub(crate) ttl: Option<Duration>,
    /// `wait` from the config file.
    pub(crate) wait: Option<Duration>,
    /// `key_prefix` from the config file.
    pub(crate) key_prefix: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    nodes: Option<Vec<String>>,
    ttl: Option<String>,
    wait: Option<String>,
    key_prefix: Option<String>,
}

/// Parses a humantime duration (`500ms`, `30s`, `2m`); `what` names its source in errors.
pub(crate) fn parse_duration(what: &str, text: &str) -> Result<Duration, CliError> {
    humantime::parse_duration(text.trim()).map_err(|e| {
        CliError::usage(format!(
            "invalid duration {text:?} for {what} ({e}); write it like 500ms, 30s or 2m"
        ))
    })
}

fn parse_file(path: &Path, text: &str) -> Result<Settings, CliError> {
    let shown = path.display();
    let file: File = toml::from_str(text)
        .map_err(|e| CliError::usage(format!("config file {shown}: {}", e.message())))?;
    let duration = |key: &str, v: Option<String>| {
        v.map(|s| parse_duration(&format!("{key} in {shown}"), &s))
            .transpose()
    };
    Ok(Settings {
        nodes: file.nodes.unwrap_or_default(),
        ttl: duration("ttl", file.ttl)?,
        wait: duration("wait", file.wait)?,
        key_prefix: file.key_prefix,
    })
}

/// Merges the nodes given by flag or environment (`flag_nodes`, already split on commas)
/// with the config file: `config` when given (it must exist), else `./quorumlock.toml` when
/// present. Nodes from the flag or environment replace the file's list.
///
/// # Errors
/// Exit 113 for an unreadable or invalid config file, a bad duration in it, or no nodes.
pub(crate) fn load(flag_nodes: &[String], config: Option<&Path>) -> Result<Settings, CliError> {
    let path = config.unwrap_or(Path::new(CONFIG_FILE));
    let mut settings = if config.is_some() || path.exists() {
        let text = std::fs::read_to_string(path).map_err(|e| {
            CliError::usage(format!("cannot read config file {}: {e}", path.display()))
        })?;
        parse_file(path, &text)?
    } else {
        Settings::default()
    };
    let given: Vec<String> = flag_nodes
        .iter()
        .map(|s| s.trim())
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    if !given.is_empty() {
        settings.nodes = given;
    }
    if settings.nodes.is_empty() {
        return Err(CliError::usage(format!(
            "no nodes given: pass --nodes URL,..., set QUORUMLOCK_NODES, or list `nodes` in {CONFIG_FILE}"
        )));
    }
    Ok(settings)
}

/// Node timeout of the admin calls: generous, since they are not on a lock's critical path.
const ADMIN_NODE_TIMEOUT: Duration = Duration::from_secs(1);

/// Connects to the nodes, waiting at most the connect timeout (1 s). For `run`
/// (`for_run`), fails at once when fewer than a quorum of nodes can be reached; the admin
/// subcommands connect to what they can and give each node [`ADMIN_NODE_TIMEOUT`].
///
/// # Errors
/// Exit 113 for a bad URL or key prefix, exit 111 when nodes cannot be reached.
pub(crate) async fn connect(settings: &Settings, for_run: bool) -> Result<Client, CliError> {
    let mut builder = Client::builder()
        .nodes(settings.nodes.iter().cloned())
        .require_quorum(for_run);
    if !for_run {
        builder = builder.lock_options(LockOptions::default().node_timeout(ADMIN_NODE_TIMEOUT));
    }
    if let Some(prefix) = &settings.key_prefix {
        builder = builder.key_prefix(prefix);
    }
    Ok(builder.connect().await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_in_humantime_style() {
        let ms = |n| Duration::from_millis(n);
        assert_eq!(parse_duration("--ttl", "500ms").ok(), Some(ms(500)));
        assert_eq!(parse_duration("--ttl", "30s").ok(), Some(ms(30_000)));
        assert_eq!(parse_duration("--ttl", "2m").ok(), Some(ms(120_000)));
        let e = parse_duration("--wait", "10 parsecs").err();
        assert!(e.is_some_and(|e| e.exit == crate::exit::USAGE && e.message.contains("--wait")));
    }

    #[test]
    fn file_format() {
        let text = "nodes = [\"redis://a:1\", \"redis://b:2\"]\nttl = \"5s\"\nwait = \"1m\"\nkey_prefix = \"app:\"\n";
        let s = parse_file(Path::new("q.toml"), text).ok();
        assert_eq!(
            s,
            Some(Settings {
                nodes: vec!["redis://a:1".into(), "redis://b:2".into()],
                ttl: Some(Duration::from_secs(5)),
                wait: Some(Duration::from_secs(60)),
                key_prefix: Some("app:".into()),
            })
        );
        let unknown = parse_file(Path::new("q.toml"), "nodez = []").err();
        assert!(unknown.is_some_and(|e| e.message.contains("q.toml")));
        let bad = parse_file(Path::new("q.toml"), "ttl = \"forever\"").err();
        assert!(bad.is_some_and(|e| e.message.contains("ttl in q.toml")));
    }

    #[test]
    fn flag_nodes_replace_the_file_and_none_is_an_error() {
        let s = load(&[" redis://x:1 ".into(), String::new()], None).ok();
        assert_eq!(s.map(|s| s.nodes), Some(vec!["redis://x:1".to_owned()]));
        let missing = load(&[], Some(Path::new("/nonexistent/quorumlock.toml"))).err();
        assert!(missing.is_some_and(|e| e.exit == crate::exit::USAGE));
    }
}
