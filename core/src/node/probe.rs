//! Reading a node's own description: `INFO` fields and the persistence settings from
//! `CONFIG GET` (REDLOCK.md §8).

use std::collections::HashMap;

use redis::Value;

/// Parses `INFO` text (`key:value` lines, `#` section headers) into a map.
pub(crate) fn parse_info(text: &str) -> HashMap<String, String> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect()
}

/// Parses a `CONFIG GET` reply (a flat array of name, value pairs under RESP2, a map under
/// RESP3) into a map.
pub(crate) fn parse_config(v: &Value) -> HashMap<String, String> {
    let text = |v: &Value| match v {
        Value::BulkString(b) => Some(String::from_utf8_lossy(b).into_owned()),
        Value::SimpleString(s) => Some(s.clone()),
        _ => None,
    };
    match v {
        Value::Array(items) => items
            .chunks(2)
            .filter_map(|pair| Some((text(pair.first()?)?, text(pair.get(1)?)?)))
            .collect(),
        Value::Map(pairs) => pairs
            .iter()
            .filter_map(|(k, v)| Some((text(k)?, text(v)?)))
            .collect(),
        _ => HashMap::new(),
    }
}

/// The text of a bulk or verbatim string reply.
pub(crate) fn reply_text(v: &Value) -> Option<String> {
    match v {
        Value::BulkString(b) => Some(String::from_utf8_lossy(b).into_owned()),
        Value::VerbatimString { text, .. } => Some(text.clone()),
        Value::SimpleString(s) => Some(s.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_and_config_parse() {
        let info = parse_info(
            "# Server\r\nredis_version:7.0.15\r\nuptime_in_seconds:42\r\n\r\n# Memory\r\nmaxmemory_policy:noeviction\r\n",
        );
        assert_eq!(info["redis_version"], "7.0.15");
        assert_eq!(info["uptime_in_seconds"], "42");
        assert_eq!(info["maxmemory_policy"], "noeviction");
        let cfg = parse_config(&Value::Array(vec![
            Value::BulkString(b"appendonly".to_vec()),
            Value::BulkString(b"yes".to_vec()),
            Value::BulkString(b"appendfsync".to_vec()),
            Value::BulkString(b"always".to_vec()),
        ]));
        assert_eq!(cfg["appendonly"], "yes");
        assert_eq!(cfg["appendfsync"], "always");
    }
}
