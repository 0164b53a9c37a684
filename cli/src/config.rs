//! Where the nodes and settings come from: `--nodes`, `QUORUMLOCK_NODES`, or the config
//! file `quorumlock.toml` (current directory, `--config` or `QUORUMLOCK_CONFIG`); the
//! client settings (the engine's table, `docs/options.md`: `max_ttl`, quarantine, eviction
//! check, ...) from global flags, their environment variables or the file; durations in
//! humantime style (`500ms`, `30s`, `2m`). The engine checks every value.

use std::path::Path;
use std::time::Duration;

use clap::Args;
use clap::builder::PossibleValuesParser;
use quorumlock::options::{CLIENT_SETTINGS, Kind, OptionSpec};
use quorumlock::{
    Client, ClientSettings, DEFAULT_TTL, ErrorKind, EvictionCheck, LockOptions, OptionValue,
    Quarantine,
};

use crate::CliError;

/// The config file looked up in the current directory.
pub(crate) const CONFIG_FILE: &str = "quorumlock.toml";

/// Default wait budget of `run`.
pub(crate) const DEFAULT_WAIT: Duration = Duration::from_secs(30);

/// The config file's keys besides the client settings.
const FILE_KEYS: &[&str] = &["nodes", "ttl", "wait"];

/// Client settings the CLI decides itself: `run` needs a quorum of nodes, the admin
/// subcommands work with what they can reach.
const CLI_OWNED: &[&str] = &["require_quorum"];

/// The client settings the config file takes: every one of the engine's but [`CLI_OWNED`].
pub(crate) fn file_settings() -> impl Iterator<Item = &'static OptionSpec> {
    CLIENT_SETTINGS
        .iter()
        .filter(|s| !CLI_OWNED.contains(&s.name))
}

/// Nodes and defaults after merging flags, environment and the config file.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Settings {
    /// Node URLs, in order.
    pub(crate) nodes: Vec<String>,
    /// `ttl` from the config file.
    pub(crate) ttl: Option<Duration>,
    /// `wait` from the config file.
    pub(crate) wait: Option<Duration>,
    /// The engine's defaults, replaced by the config file's keys, replaced by the flags.
    pub(crate) client: ClientSettings,
}

/// Client settings given as global flags (or their environment variables); they override
/// the config file.
#[derive(Args, Debug, Default)]
pub(crate) struct ClientFlags {
    /// Upper bound for any ttl [default: max_ttl from the config file, else 60s]; every
    /// client of the same nodes must use the same value.
    #[arg(
        long,
        global = true,
        env = "QUORUMLOCK_MAX_TTL",
        value_name = "DURATION"
    )]
    pub(crate) max_ttl: Option<String>,
    /// Restart quarantine of nodes without durable writes [default: quarantine from the
    /// config file, else on].
    #[arg(
        long,
        global = true,
        env = "QUORUMLOCK_QUARANTINE",
        value_name = "MODE",
        value_parser = PossibleValuesParser::new(Quarantine::NAMES)
    )]
    pub(crate) quarantine: Option<String>,
    /// Nodes whose eviction policy can drop lock keys [default: eviction_check from the
    /// config file, else refuse].
    #[arg(
        long,
        global = true,
        env = "QUORUMLOCK_EVICTION_CHECK",
        value_name = "MODE",
        value_parser = PossibleValuesParser::new(EvictionCheck::NAMES)
    )]
    pub(crate) eviction_check: Option<String>,
}

/// Parses a humantime duration (`500ms`, `30s`, `2m`); `what` names its source in errors.
pub(crate) fn parse_duration(what: &str, text: &str) -> Result<Duration, CliError> {
    humantime::parse_duration(text.trim()).map_err(|e| {
        CliError::usage(format!(
            "invalid duration {text:?} for {what} ({e}); write it like 500ms, 30s or 2m"
        ))
    })
}

/// A value the engine refused, as a usage error with its message (naming `what`).
fn refused(e: &quorumlock::Error) -> CliError {
    CliError::usage(e.message())
}

/// The lock option `name` (`ttl`, `wait`) from `text`, checked by the engine; `what` names
/// its source in errors.
pub(crate) fn lock_duration(name: &str, what: &str, text: &str) -> Result<Duration, CliError> {
    let mut opts = LockOptions::default();
    let d = parse_duration(what, text)?;
    opts.set_as(name, what, OptionValue::Duration(d))
        .map_err(|e| refused(&e))?;
    Ok(d)
}

/// The engine's value of a config file key of kind `spec.kind`; `what` names the key and
/// the file.
fn file_value(spec: &OptionSpec, what: &str, value: toml::Value) -> Result<OptionValue, CliError> {
    let wrong = |value: &toml::Value, hint: &str| {
        CliError::usage(format!("invalid value {value} for {what}; {hint}"))
    };
    Ok(match (spec.kind, value) {
        (Kind::Duration { .. }, toml::Value::String(s)) => {
            OptionValue::Duration(parse_duration(what, &s)?)
        }
        (Kind::Duration { .. }, other) => {
            return Err(wrong(
                &other,
                "write a duration as a string like \"500ms\", \"30s\" or \"2m\"",
            ));
        }
        (Kind::Flag, toml::Value::Boolean(on)) => OptionValue::Flag(on),
        (Kind::Flag, other) => return Err(wrong(&other, "use true or false (without quotes)")),
        (Kind::Count | Kind::Ratio { .. }, toml::Value::Integer(n)) => {
            OptionValue::Number(n as f64)
        }
        (Kind::Count | Kind::Ratio { .. }, toml::Value::Float(n)) => OptionValue::Number(n),
        (Kind::Count | Kind::Ratio { .. }, other) => return Err(wrong(&other, "write a number")),
        (Kind::Choice(names), toml::Value::String(s)) if names.contains(&s.as_str()) => {
            OptionValue::Text(s)
        }
        (Kind::Choice(names), other) => {
            let hint = format!("use one of: {}", names.join(", "));
            return Err(match other {
                toml::Value::String(s) => {
                    CliError::usage(format!("invalid value {s:?} for {what}; {hint}"))
                }
                other => wrong(&other, &hint),
            });
        }
        (_, toml::Value::String(s)) => OptionValue::Text(s),
        (_, other) => return Err(wrong(&other, "write a string")),
    })
}

/// The `nodes` key: a list of URL strings.
fn file_nodes(what: &str, value: toml::Value) -> Result<Vec<String>, CliError> {
    let wrong = |v: &toml::Value| {
        CliError::usage(format!(
            "invalid value {v} for {what}; write a list of node URLs like [\"redis://10.0.0.1:6379\"]"
        ))
    };
    match value {
        toml::Value::Array(items) => items
            .into_iter()
            .map(|item| match item {
                toml::Value::String(s) => Ok(s),
                other => Err(wrong(&other)),
            })
            .collect(),
        other => Err(wrong(&other)),
    }
}

fn parse_file(path: &Path, text: &str) -> Result<Settings, CliError> {
    let shown = path.display();
    let table: toml::Table = toml::from_str(text)
        .map_err(|e| CliError::usage(format!("config file {shown}: {}", e.message())))?;
    let mut settings = Settings::default();
    for (key, value) in table {
        let what = format!("{key} in {shown}");
        let duration = |value| match value {
            toml::Value::String(s) => lock_duration(&key, &what, &s),
            other => Err(CliError::usage(format!(
                "invalid value {other} for {what}; write a duration as a string like \"500ms\", \"30s\" or \"2m\""
            ))),
        };
        match key.as_str() {
            "nodes" => settings.nodes = file_nodes(&what, value)?,
            "ttl" => settings.ttl = Some(duration(value)?),
            "wait" => settings.wait = Some(duration(value)?),
            _ => {
                let Some(spec) = file_settings().find(|s| s.name == key) else {
                    let known: Vec<&str> = FILE_KEYS
                        .iter()
                        .copied()
                        .chain(file_settings().map(|s| s.name))
                        .collect();
                    return Err(CliError::usage(format!(
                        "config file {shown}: unknown key `{key}`; the keys are {}",
                        known.join(", ")
                    )));
                };
                let value = file_value(spec, &what, value)?;
                settings
                    .client
                    .set_as(spec.name, &what, value)
                    .map_err(|e| refused(&e))?;
            }
        }
    }
    Ok(settings)
}

/// Puts back together the node URLs of a comma-split list: a piece without `://` continues
/// the cluster URL before it (`redis+cluster://a:1,b:2` is one member with two seeds).
fn join_cluster_seeds(pieces: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for piece in pieces.iter().map(|s| s.trim()).filter(|s| !s.is_empty()) {
        match out.last_mut() {
            Some(last) if !piece.contains("://") && last.contains("+cluster://") => {
                last.push(',');
                last.push_str(piece);
            }
            _ => out.push(piece.to_owned()),
        }
    }
    out
}

/// Merges the nodes given by flag or environment (`flag_nodes`, already split on commas)
/// and the client flags with the config file: `config` when given (it must exist), else
/// `./quorumlock.toml` when present. Nodes from the flag or environment replace the file's
/// list; each client flag replaces the file's key.
///
/// # Errors
/// Exit 113 for an unreadable or invalid config file, a bad value in it or in a flag, or no
/// nodes.
pub(crate) fn load(
    flag_nodes: &[String],
    config: Option<&Path>,
    flags: &ClientFlags,
) -> Result<Settings, CliError> {
    let path = config.unwrap_or(Path::new(CONFIG_FILE));
    let mut settings = if config.is_some() || path.exists() {
        let text = std::fs::read_to_string(path).map_err(|e| {
            CliError::usage(format!("cannot read config file {}: {e}", path.display()))
        })?;
        parse_file(path, &text)?
    } else {
        Settings::default()
    };
    let flagged = [
        ("max_ttl", "--max-ttl", &flags.max_ttl),
        ("quarantine", "--quarantine", &flags.quarantine),
        ("eviction_check", "--eviction-check", &flags.eviction_check),
    ];
    for (name, flag, given) in flagged {
        let Some(text) = given else { continue };
        let value = match name {
            "max_ttl" => OptionValue::Duration(parse_duration(flag, text)?),
            _ => OptionValue::Text(text.clone()),
        };
        settings
            .client
            .set_as(name, flag, value)
            .map_err(|e| refused(&e))?;
    }
    let given = join_cluster_seeds(flag_nodes);
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

/// Connects to the nodes with the client settings, waiting at most the connect timeout
/// (default 1 s). For `run` (`run` holds its lock options, which the engine checks against
/// `max_ttl` before anything is sent), fails at once when fewer than a quorum of nodes can
/// be reached; the admin subcommands connect to what they can and give each node
/// [`ADMIN_NODE_TIMEOUT`].
///
/// # Errors
/// Exit 113 for a bad URL, key prefix or client setting, or a ttl the engine refuses (above
/// `max_ttl`: a hint says how to raise it); exit 111 when nodes cannot be reached.
pub(crate) async fn connect(
    settings: &Settings,
    run: Option<&LockOptions>,
) -> Result<Client, CliError> {
    let max_ttl = settings.client.max_ttl;
    let opts = match run {
        Some(opts) => opts.clone(),
        // The admin calls take no ttl: keep the default one within a lower max_ttl.
        None => LockOptions::default()
            .ttl(DEFAULT_TTL.min(max_ttl))
            .node_timeout(ADMIN_NODE_TIMEOUT),
    };
    let ttl = opts.get_ttl();
    let builder = Client::builder()
        .nodes(settings.nodes.iter().cloned())
        .settings(settings.client.clone())
        .require_quorum(run.is_some())
        .lock_options(opts);
    builder.connect().await.map_err(|e| {
        let refused = e.kind() == ErrorKind::InvalidArgument;
        let error = CliError::from(e);
        if refused && ttl > max_ttl {
            // The engine refused the configuration, and the ttl is above max_ttl, which the
            // engine never accepts: say how to fix that in the CLI's terms.
            error.with_hint(&format!(
                "the ttl {} is above max_ttl {}: raise max_ttl to at least the ttl with \
                 --max-ttl DURATION or max_ttl in {CONFIG_FILE} (the same on every client of \
                 these nodes), or choose a shorter ttl",
                humantime::format_duration(ttl),
                humantime::format_duration(max_ttl)
            ))
        } else {
            error
        }
    })
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
        let mut client = ClientSettings::default();
        client.key_prefix = b"app:".to_vec();
        assert_eq!(
            s,
            Some(Settings {
                nodes: vec!["redis://a:1".into(), "redis://b:2".into()],
                ttl: Some(Duration::from_secs(5)),
                wait: Some(Duration::from_secs(60)),
                client,
            })
        );
        let unknown = parse_file(Path::new("q.toml"), "nodez = []").err();
        assert!(unknown.is_some_and(|e| e.message.contains("q.toml")));
        let bad = parse_file(Path::new("q.toml"), "ttl = \"forever\"").err();
        assert!(bad.is_some_and(|e| e.message.contains("ttl in q.toml")));
    }

    #[test]
    fn a_cluster_url_keeps_its_seeds_through_the_comma_split() {
        let pieces: Vec<String> = [
            "redis://a:1",
            "redis+cluster://b:2",
            "c:3",
            " d:4",
            "rediss://e:5",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            join_cluster_seeds(&pieces),
            ["redis://a:1", "redis+cluster://b:2,c:3,d:4", "rediss://e:5"]
        );
    }

    #[test]
    fn flag_nodes_replace_the_file_and_none_is_an_error() {
        let none = ClientFlags::default();
        let s = load(&[" redis://x:1 ".into(), String::new()], None, &none).ok();
        assert_eq!(s.map(|s| s.nodes), Some(vec!["redis://x:1".to_owned()]));
        let missing = load(&[], Some(Path::new("/nonexistent/quorumlock.toml")), &none).err();
        assert!(missing.is_some_and(|e| e.exit == crate::exit::USAGE));
    }

    /// The usage error of `text` as a config file `q.toml`; panics when it parses.
    fn file_error(text: &str) -> CliError {
        match parse_file(Path::new("q.toml"), text) {
            Ok(s) => panic!("{text:?} parsed: {s:?}"),
            Err(e) => e,
        }
    }

    #[test]
    fn client_settings_in_the_file() {
        let text = "max_ttl = \"2m\"\nquarantine = \"strict\"\nquarantine_margin = \"10s\"\n\
                    eviction_check = \"warn\"\nconnect_timeout = \"250ms\"\nnotify = false\n";
        let s = parse_file(Path::new("q.toml"), text).ok();
        let mut client = ClientSettings::default();
        client.max_ttl = Duration::from_secs(120);
        client.quarantine = Quarantine::Strict;
        client.quarantine_margin = Duration::from_secs(10);
        client.eviction_check = EvictionCheck::Warn;
        client.connect_timeout = Duration::from_millis(250);
        client.notify = false;
        assert_eq!(
            s,
            Some(Settings {
                client,
                ..Settings::default()
            })
        );
        for (text, mode) in [
            ("on", Quarantine::On),
            ("strict", Quarantine::Strict),
            ("off", Quarantine::Off),
        ] {
            let s = parse_file(Path::new("q.toml"), &format!("quarantine = {text:?}")).ok();
            assert_eq!(s.map(|s| s.client.quarantine), Some(mode), "{text}");
        }
        for (text, mode) in [
            ("refuse", EvictionCheck::Refuse),
            ("warn", EvictionCheck::Warn),
            ("off", EvictionCheck::Off),
        ] {
            let s = parse_file(Path::new("q.toml"), &format!("eviction_check = {text:?}")).ok();
            assert_eq!(s.map(|s| s.client.eviction_check), Some(mode), "{text}");
        }
        let s = parse_file(Path::new("q.toml"), "notify = true\ndrift_factor = 0.02").ok();
        assert_eq!(
            s.map(|s| (s.client.notify, s.client.drift_factor)),
            Some((true, 0.02))
        );
        // Unset keys keep the engine's defaults.
        let s = parse_file(Path::new("q.toml"), "").ok();
        assert_eq!(s, Some(Settings::default()));
    }

    #[test]
    fn bad_client_settings_in_the_file_name_the_key_and_the_choices() {
        let cases: &[(&str, &str, &[&str])] = &[
            ("max_ttl = \"forever\"", "max_ttl in q.toml", &["500ms"]),
            ("max_ttl = 120", "max_ttl in q.toml", &["120", "string"]),
            (
                "quarantine_margin = \"5 parsecs\"",
                "quarantine_margin in q.toml",
                &[],
            ),
            ("connect_timeout = \"\"", "connect_timeout in q.toml", &[]),
            (
                "connect_timeout = 1.5",
                "connect_timeout in q.toml",
                &["1.5"],
            ),
            (
                "quarantine = \"maybe\"",
                "quarantine in q.toml",
                &["on, strict, off"],
            ),
            (
                "quarantine = \"On\"",
                "quarantine in q.toml",
                &["on, strict, off"],
            ),
            (
                "quarantine = true",
                "quarantine in q.toml",
                &["on, strict, off"],
            ),
            (
                "eviction_check = \"ignore\"",
                "eviction_check in q.toml",
                &["refuse, warn, off"],
            ),
            (
                "eviction_check = 0",
                "eviction_check in q.toml",
                &["refuse, warn, off"],
            ),
            ("notify = \"yes\"", "notify in q.toml", &["true or false"]),
            ("notify = 1", "notify in q.toml", &["true or false"]),
            ("max_ttls = \"2m\"", "q.toml", &["max_ttls"]),
            // The CLI decides this one itself.
            ("require_quorum = true", "q.toml", &["require_quorum"]),
            // Values the engine refuses, with its message.
            ("max_ttl = \"0s\"", "max_ttl in q.toml", &["at least 1 ms"]),
            (
                "drift_factor = 0.5",
                "drift_factor in q.toml",
                &["0.0..0.5"],
            ),
            ("ttl = \"0s\"", "ttl in q.toml", &["at least 1 ms"]),
            ("nodes = \"redis://a:1\"", "nodes in q.toml", &["list"]),
        ];
        for (text, key, more) in cases {
            let e = file_error(text);
            assert_eq!(e.exit, crate::exit::USAGE, "{text}");
            assert_eq!(e.code, "QL_INVALID", "{text}");
            assert!(e.message.contains(key), "{text}: {}", e.message);
            for m in *more {
                assert!(e.message.contains(m), "{text}: {}", e.message);
            }
        }
    }

    #[test]
    fn the_documented_example_file_parses_and_lists_every_key() {
        let doc = include_str!("../../docs/cli.md");
        let example = doc
            .split("## Config file `quorumlock.toml`")
            .nth(1)
            .and_then(|rest| rest.split("```toml\n").nth(1))
            .and_then(|rest| rest.split("```").next())
            .unwrap_or_default();
        let s = parse_file(Path::new("cli.md"), example);
        assert!(s.is_ok(), "{:?}", s.err().map(|e| e.message));
        let keys = FILE_KEYS
            .iter()
            .copied()
            .chain(file_settings().map(|s| s.name));
        for key in keys {
            assert!(example.contains(&format!("\n{key} = ")), "{key} missing");
        }
        for flag in ["--max-ttl", "--quarantine", "--eviction-check"] {
            assert!(doc.contains(&format!("| `{flag} ")), "{flag} missing");
        }
    }

    #[test]
    fn client_flags_override_the_file() {
        let dir = std::env::temp_dir().join(format!("ql-cli-cfg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).ok();
        let path = dir.join("q.toml");
        let text = "nodes = [\"redis://a:1\"]\nmax_ttl = \"2m\"\nquarantine = \"strict\"\n\
                    eviction_check = \"warn\"\nnotify = false\n";
        assert!(std::fs::write(&path, text).is_ok());
        let from_file = load(&[], Some(&path), &ClientFlags::default()).ok();
        assert_eq!(
            from_file.as_ref().map(|s| (
                s.client.max_ttl,
                s.client.quarantine,
                s.client.eviction_check
            )),
            Some((
                Duration::from_secs(120),
                Quarantine::Strict,
                EvictionCheck::Warn
            ))
        );
        let flags = ClientFlags {
            max_ttl: Some("90s".into()),
            quarantine: Some("off".into()),
            eviction_check: Some("refuse".into()),
        };
        let s = load(&[], Some(&path), &flags).ok();
        assert_eq!(
            s.as_ref().map(|s| (
                s.client.max_ttl,
                s.client.quarantine,
                s.client.eviction_check,
                s.client.notify
            )),
            Some((
                Duration::from_secs(90),
                Quarantine::Off,
                EvictionCheck::Refuse,
                false
            ))
        );
        let bad = ClientFlags {
            max_ttl: Some("long".into()),
            ..ClientFlags::default()
        };
        let e = load(&[], Some(&path), &bad).err();
        assert!(e.is_some_and(|e| e.exit == crate::exit::USAGE && e.message.contains("--max-ttl")));
        let bad = ClientFlags {
            quarantine: Some("sometimes".into()),
            ..ClientFlags::default()
        };
        let e = load(&[], Some(&path), &bad).err();
        assert!(e.is_some_and(
            |e| e.message.contains("--quarantine") && e.message.contains("on, strict, off")
        ));
        let bad = ClientFlags {
            max_ttl: Some("0s".into()),
            ..ClientFlags::default()
        };
        let e = load(&[], Some(&path), &bad).err();
        assert!(e.is_some_and(|e| e.exit == crate::exit::USAGE
            && e.message == "--max-ttl must be at least 1 ms (got 0 ms)"));
        std::fs::remove_dir_all(&dir).ok();
    }
}
