//! What the benchmark programs share (included by each with `#[path]`).

/// The load average (1, 5, 15 min) as text, "?" where /proc/loadavg is missing.
pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}
