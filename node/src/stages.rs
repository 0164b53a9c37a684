//! Stage marks of the last call, for `bench/node/stages.mjs` (cargo feature `stages`; without
//! it every mark is an empty inline function). Marks are nanoseconds on one monotonic clock:
//! 0 the native method entered, 1 the engine future first polled (on a runtime worker), 2 the
//! engine future done, 3 the event loop's thread has the outcome (the promise's settle
//! callback, before the outcome becomes a JS object). `stageOrigin()` reads the marks' clock,
//! so that a caller that reads its own clock around it can place the marks on that clock.

/// Entry of the native method.
pub(crate) const ENTRY: usize = 0;
/// The engine future's first poll.
pub(crate) const POLLED: usize = 1;
/// The engine future's output is ready.
pub(crate) const DONE: usize = 2;
/// The event loop's thread has the outcome.
pub(crate) const RESUMED: usize = 3;

#[cfg(feature = "stages")]
mod imp {
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::Instant;

    use napi_derive::napi;

    static START: OnceLock<Instant> = OnceLock::new();
    static MARKS: [AtomicU64; 4] = [const { AtomicU64::new(0) }; 4];

    pub(crate) fn mark(stage: usize) {
        let ns = START.get_or_init(Instant::now).elapsed().as_nanos();
        if let Some(m) = MARKS.get(stage) {
            m.store(u64::try_from(ns).unwrap_or(u64::MAX), Ordering::Relaxed);
        }
    }

    /// The marks' clock now, in nanoseconds: a caller that reads its own clock around this
    /// call places the marks on it.
    #[napi]
    pub fn stage_origin() -> f64 {
        START.get_or_init(Instant::now).elapsed().as_nanos() as f64
    }

    /// The marks of the last call, in nanoseconds (as numbers).
    #[napi]
    pub fn stage_marks() -> Vec<f64> {
        MARKS
            .iter()
            .map(|m| m.load(Ordering::Relaxed) as f64)
            .collect()
    }
}

#[cfg(feature = "stages")]
pub(crate) use imp::mark;

/// Records a stage (no-op without the `stages` feature).
#[cfg(not(feature = "stages"))]
#[inline(always)]
pub(crate) fn mark(_stage: usize) {}
