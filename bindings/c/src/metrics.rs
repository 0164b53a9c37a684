//! Metrics snapshots (`quorumlock_metrics`): client totals, calls per operation by outcome,
//! replies per node by kind, latency summaries, and the Prometheus text.
//!
//! A snapshot is an opaque, immutable handle rather than a struct with fields
//! (ARCHITECTURE.md §5.1), so counters can be added without an ABI break, and every value
//! read from one handle (the Prometheus text included) comes from the same moment.

use std::ffi::c_char;
use std::sync::OnceLock;

use quorumlock::{ErrorKind, Histogram, NodeKind, NodeMetrics, OpMetrics};

use crate::client::Client;
use crate::error::{Error, QL_NO_LATENCY, QlResult};
use crate::ffi::{self, Out};
use crate::panic::ffi_panic_boundary;

/// A snapshot of a client's counters and latency histograms, taken by
/// `quorumlock_client_metrics`. It never changes; take another one for newer values.
pub struct Metrics {
    inner: quorumlock::Metrics,
    prometheus: OnceLock<String>,
}

/// The operation whose counters a `quorumlock_metrics_op_*` function reads; numbers are
/// stable.
#[repr(u32)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug)]
pub enum OpCode {
    /// Acquire calls (plain, try, with timeout, multi-resource).
    QL_OP_ACQUIRE = 0,
    /// Extend calls, automatic extensions included.
    QL_OP_EXTEND = 1,
    /// Releases of locks, explicit or on drop (failed attempts' cleanups and repeated releases are not counted).
    QL_OP_RELEASE = 2,
}

fn snapshot<'a>(m: *const Metrics) -> Result<&'a quorumlock::Metrics, Error> {
    Ok(&ffi::handle(m, "metrics")?.inner)
}

fn op_metrics(m: &quorumlock::Metrics, op: u32) -> Result<&OpMetrics, Error> {
    match op {
        0 => Ok(&m.acquire),
        1 => Ok(&m.extend),
        2 => Ok(&m.release),
        _ => Err(Error::invalid(format!(
            "unknown operation {op} (QL_OP_ACQUIRE, QL_OP_EXTEND or QL_OP_RELEASE)"
        ))),
    }
}

fn node(m: &quorumlock::Metrics, index: usize) -> Result<&NodeMetrics, Error> {
    m.nodes.get(index).ok_or_else(|| {
        Error::invalid(format!(
            "node index {index} is out of range (node count {})",
            m.nodes.len()
        ))
    })
}

/// Microseconds, saturating below `QL_NO_LATENCY`.
fn micros(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(QL_NO_LATENCY - 1)
}

fn quantile(h: &Histogram, q: f64) -> Result<u64, Error> {
    if !(0.0..=1.0).contains(&q) {
        return Err(Error::invalid(format!(
            "quantile {q} is not within 0.0..=1.0"
        )));
    }
    Ok(h.quantile(q).map_or(QL_NO_LATENCY, micros))
}

/// Writes a histogram's observation count and sum; both outputs are checked first.
fn summary(h: &Histogram, count_out: *mut u64, sum_us_out: *mut u64) -> Result<(), Error> {
    let count_out = Out::new(count_out, "count_out")?;
    let sum_us_out = Out::new(sum_us_out, "sum_us_out")?;
    count_out.write(h.count());
    sum_us_out.write(h.sum_us);
    Ok(())
}

/// Takes a snapshot of the client's counters (shared by every lock acquired through it):
/// free it with `quorumlock_metrics_free`. Counters only grow over the client's life;
/// subtract two snapshots for a rate. Client totals are exact when the calls they count have
/// returned; a node reply that arrives after its round was decided is counted in the node's
/// figures when it lands.
///
/// Thread safety: safe from any thread, concurrently with other calls on the client.
/// Blocking: never blocks.
///
/// # Safety
/// `client` is NULL or a live client; `out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_client_metrics(
    client: *const Client,
    out: *mut *mut Metrics,
) -> QlResult {
    ffi_panic_boundary!(std::ptr::null_mut() => {
        let client = ffi::handle(client, "client")?;
        let out = Out::new(out, "out")?;
        out.write(ffi::into_raw(Metrics {
            inner: client.inner.metrics(),
            prometheus: OnceLock::new(),
        }));
        Ok(())
    })
}

/// Frees a snapshot; NULL does nothing. Freeing twice is undefined behaviour.
///
/// Thread safety: must not race other calls on the same snapshot.
/// Blocking: never blocks.
///
/// # Safety
/// `metrics` is NULL or a live snapshot.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_metrics_free(metrics: *mut Metrics) {
    ffi_panic_boundary!({ ffi::free(metrics) })
}

/// Acquisition rounds sent (one acquire call may take several); 0 for NULL.
///
/// Thread safety: safe from any thread.
/// Blocking: never blocks.
///
/// # Safety
/// `metrics` is NULL or a live snapshot.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_metrics_acquire_attempts(metrics: *const Metrics) -> u64 {
    ffi_panic_boundary!({ snapshot(metrics).map_or(0, |m| m.acquire_attempts) })
}

/// Locks that were lost while held (expired or taken over); 0 for NULL.
///
/// Thread safety: safe from any thread.
/// Blocking: never blocks.
///
/// # Safety
/// `metrics` is NULL or a live snapshot.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_metrics_lost(metrics: *const Metrics) -> u64 {
    ffi_panic_boundary!({ snapshot(metrics).map_or(0, |m| m.lost) })
}

/// Waits cut short by a release notification; 0 for NULL.
///
/// Thread safety: safe from any thread.
/// Blocking: never blocks.
///
/// # Safety
/// `metrics` is NULL or a live snapshot.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_metrics_wakeups(metrics: *const Metrics) -> u64 {
    ffi_panic_boundary!({ snapshot(metrics).map_or(0, |m| m.wakeups) })
}

/// Writes how many calls of operation `op` (`QL_OP_*`) ended in result `code` to `*out`:
/// `QL_OK` counts successes, an engine code (`QL_BUSY` ... `QL_TIMEOUT`) failures of that
/// kind (0 when none happened). `QL_INVALID` for NULL, an unknown operation, or a code no
/// call can end in (`QL_INTERNAL`, unknown numbers).
///
/// Thread safety: safe from any thread.
/// Blocking: never blocks.
///
/// # Safety
/// `metrics` is NULL or a live snapshot; `out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_metrics_op_calls(
    metrics: *const Metrics,
    op: u32,
    code: u32,
    out: *mut u64,
) -> QlResult {
    ffi_panic_boundary!(std::ptr::null_mut() => {
        let out = Out::new(out, "out")?;
        let m = op_metrics(snapshot(metrics)?, op)?;
        let n = if code == QlResult::QL_OK as u32 {
            m.ok
        } else {
            let kind = ErrorKind::ALL.iter().find(|k| k.code() == code).ok_or_else(|| {
                Error::invalid(format!("no call ends in result code {code}"))
            })?;
            m.failed.iter().find(|(k, _)| k == kind).map_or(0, |&(_, n)| n)
        };
        out.write(n);
        Ok(())
    })
}

/// Writes how many calls of operation `op` (`QL_OP_*`) failed, whatever the code, to
/// `*out`. `QL_INVALID` for NULL or an unknown operation.
///
/// Thread safety: safe from any thread.
/// Blocking: never blocks.
///
/// # Safety
/// `metrics` is NULL or a live snapshot; `out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_metrics_op_failed(
    metrics: *const Metrics,
    op: u32,
    out: *mut u64,
) -> QlResult {
    ffi_panic_boundary!(std::ptr::null_mut() => {
        let out = Out::new(out, "out")?;
        out.write(op_metrics(snapshot(metrics)?, op)?.failures());
        Ok(())
    })
}

/// Writes the number of timed calls of operation `op` (`QL_OP_*`, failed calls included)
/// to `*count_out` and their total duration in microseconds to `*sum_us_out`. `QL_INVALID`
/// for NULL or an unknown operation.
///
/// Thread safety: safe from any thread.
/// Blocking: never blocks.
///
/// # Safety
/// `metrics` is NULL or a live snapshot; `count_out` and `sum_us_out` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_metrics_op_latency(
    metrics: *const Metrics,
    op: u32,
    count_out: *mut u64,
    sum_us_out: *mut u64,
) -> QlResult {
    ffi_panic_boundary!(std::ptr::null_mut() => {
        summary(&op_metrics(snapshot(metrics)?, op)?.latency, count_out, sum_us_out)
    })
}

/// Writes an upper estimate of quantile `q` (0.0 to 1.0; 0.5 for the median, 0.99 for p99)
/// of the duration of operation `op` (`QL_OP_*`) in microseconds to `*out`: the upper bound
/// of the histogram bucket holding it (bounds from 100 us to 10 s), or `QL_NO_LATENCY` when
/// there were no calls or the quantile lies above the last bound. `QL_INVALID` for NULL, an
/// unknown operation, or `q` outside 0.0 to 1.0 (NaN included).
///
/// Thread safety: safe from any thread.
/// Blocking: never blocks.
///
/// # Safety
/// `metrics` is NULL or a live snapshot; `out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_metrics_op_quantile_us(
    metrics: *const Metrics,
    op: u32,
    q: f64,
    out: *mut u64,
) -> QlResult {
    ffi_panic_boundary!(std::ptr::null_mut() => {
        let out = Out::new(out, "out")?;
        out.write(quantile(&op_metrics(snapshot(metrics)?, op)?.latency, q)?);
        Ok(())
    })
}

/// Entries in the per-node figures: one per configured node, in configuration order (the
/// order of `quorumlock_error_node_*`); 0 for NULL.
///
/// Thread safety: safe from any thread.
/// Blocking: never blocks.
///
/// # Safety
/// `metrics` is NULL or a live snapshot.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_metrics_node_count(metrics: *const Metrics) -> usize {
    ffi_panic_boundary!({ snapshot(metrics).map_or(0, |m| m.nodes.len()) })
}

/// Copies the address (`host:port/db`, never credentials) of node `index` into `buf`,
/// `snprintf`-style (see `quorumlock_error_message`). `QL_INVALID` for NULL or an index out
/// of range.
///
/// Thread safety: safe from any thread.
/// Blocking: never blocks.
///
/// # Safety
/// `metrics` is NULL or a live snapshot; `buf` has `len` writable bytes (or `len` is 0);
/// `out_n` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_metrics_node_address(
    metrics: *const Metrics,
    index: usize,
    buf: *mut c_char,
    len: usize,
    out_n: *mut usize,
) -> QlResult {
    ffi_panic_boundary!(std::ptr::null_mut() => {
        ffi::write_text(&node(snapshot(metrics)?, index)?.address, buf, len, out_n)
    })
}

/// Writes the number of requests sent to node `index` whose outcome is known (replies,
/// timeouts and node errors) to `*out`. `QL_INVALID` for NULL or an index out of range.
///
/// Thread safety: safe from any thread.
/// Blocking: never blocks.
///
/// # Safety
/// `metrics` is NULL or a live snapshot; `out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_metrics_node_requests(
    metrics: *const Metrics,
    index: usize,
    out: *mut u64,
) -> QlResult {
    ffi_panic_boundary!(std::ptr::null_mut() => {
        let out = Out::new(out, "out")?;
        out.write(node(snapshot(metrics)?, index)?.requests());
        Ok(())
    })
}

/// Writes the number of requests to node `index` that ended in a node error (a timeout, a
/// connection, server or script error, a quarantined or misconfigured node: any kind but a
/// vote or an operation result) to `*out`. `QL_INVALID` for NULL or an index out of range.
///
/// Thread safety: safe from any thread.
/// Blocking: never blocks.
///
/// # Safety
/// `metrics` is NULL or a live snapshot; `out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_metrics_node_errors(
    metrics: *const Metrics,
    index: usize,
    out: *mut u64,
) -> QlResult {
    ffi_panic_boundary!(std::ptr::null_mut() => {
        let out = Out::new(out, "out")?;
        out.write(node(snapshot(metrics)?, index)?.errors());
        Ok(())
    })
}

/// Writes the number of requests to node `index` that ended as node kind `kind`
/// (`QL_NODE_*`; 0 when none did) to `*out`. `QL_INVALID` for NULL, an index out of range,
/// or an unknown kind.
///
/// Thread safety: safe from any thread.
/// Blocking: never blocks.
///
/// # Safety
/// `metrics` is NULL or a live snapshot; `out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_metrics_node_replies(
    metrics: *const Metrics,
    index: usize,
    kind: u32,
    out: *mut u64,
) -> QlResult {
    ffi_panic_boundary!(std::ptr::null_mut() => {
        let out = Out::new(out, "out")?;
        let node = node(snapshot(metrics)?, index)?;
        let kind = NodeKind::ALL
            .iter()
            .find(|k| k.code() == kind)
            .ok_or_else(|| Error::invalid(format!("unknown node kind {kind}")))?;
        out.write(node.replies.iter().find(|(k, _)| k == kind).map_or(0, |&(_, n)| n));
        Ok(())
    })
}

/// Writes the number of replies from node `index` (requests that timed out or never got an
/// answer are not timed) to `*count_out` and their total latency in microseconds to
/// `*sum_us_out`. `QL_INVALID` for NULL or an index out of range.
///
/// Thread safety: safe from any thread.
/// Blocking: never blocks.
///
/// # Safety
/// `metrics` is NULL or a live snapshot; `count_out` and `sum_us_out` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_metrics_node_latency(
    metrics: *const Metrics,
    index: usize,
    count_out: *mut u64,
    sum_us_out: *mut u64,
) -> QlResult {
    ffi_panic_boundary!(std::ptr::null_mut() => {
        summary(&node(snapshot(metrics)?, index)?.latency, count_out, sum_us_out)
    })
}

/// Writes an upper estimate of quantile `q` of node `index`'s reply latency in
/// microseconds to `*out`, as `quorumlock_metrics_op_quantile_us` does for operations
/// (`QL_NO_LATENCY` when unknown). `QL_INVALID` for NULL, an index out of range, or `q`
/// outside 0.0 to 1.0.
///
/// Thread safety: safe from any thread.
/// Blocking: never blocks.
///
/// # Safety
/// `metrics` is NULL or a live snapshot; `out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_metrics_node_quantile_us(
    metrics: *const Metrics,
    index: usize,
    q: f64,
    out: *mut u64,
) -> QlResult {
    ffi_panic_boundary!(std::ptr::null_mut() => {
        let out = Out::new(out, "out")?;
        out.write(quantile(&node(snapshot(metrics)?, index)?.latency, q)?);
        Ok(())
    })
}

/// Copies the snapshot in the Prometheus text exposition format (version 0.0.4; metric
/// names `quorumlock_*`, e.g. `quorumlock_acquire_total{outcome="ok"} 1`) into `buf`,
/// `snprintf`-style (see `quorumlock_error_message`): call with `len` 0 for the length,
/// then again with a buffer of that length plus one; the text is the same for both calls.
/// `QL_INVALID` for NULL.
///
/// Thread safety: safe from any thread.
/// Blocking: never blocks.
///
/// # Safety
/// `metrics` is NULL or a live snapshot; `buf` has `len` writable bytes (or `len` is 0);
/// `out_n` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quorumlock_metrics_prometheus(
    metrics: *const Metrics,
    buf: *mut c_char,
    len: usize,
    out_n: *mut usize,
) -> QlResult {
    ffi_panic_boundary!(std::ptr::null_mut() => {
        let m = ffi::handle(metrics, "metrics")?;
        let text = m.prometheus.get_or_init(|| m.inner.to_prometheus());
        ffi::write_text(text, buf, len, out_n)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_map_unknown_to_no_latency() {
        let empty = Histogram::default();
        assert_eq!(quantile(&empty, 0.5).ok(), Some(QL_NO_LATENCY));
        assert!(quantile(&empty, f64::NAN).is_err());
        assert!(quantile(&empty, 1.5).is_err());
        assert!(quantile(&empty, -0.1).is_err());
        let mut counts = vec![0; quorumlock::LATENCY_BOUNDS_US.len() + 1];
        counts[1] = 1;
        let one = Histogram {
            counts,
            sum_us: 200,
        };
        assert_eq!(quantile(&one, 0.99).ok(), Some(250));
    }

    #[test]
    fn op_codes_cover_the_snapshot() {
        let m = quorumlock::Metrics::default();
        for code in [
            OpCode::QL_OP_ACQUIRE,
            OpCode::QL_OP_EXTEND,
            OpCode::QL_OP_RELEASE,
        ] {
            assert!(op_metrics(&m, code as u32).is_ok(), "{code:?}");
        }
        assert!(op_metrics(&m, 3).is_err());
    }
}
