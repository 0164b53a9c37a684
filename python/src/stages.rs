//! Stage marks of the last blocking or asyncio call, for `bench/python/stages.py` (cargo
//! feature `stages`; without it every mark is an empty inline function). Marks are
//! nanoseconds on one monotonic clock: 0 the native method entered, 1 the engine future first
//! polled, 2 the engine future done, 3 the caller's thread has the output again (blocking:
//! the wait returned; asyncio: the loop's drain took it), 4 the result converted (blocking:
//! returning to Python; asyncio: the future's result set).

/// Entry of the native method.
pub(crate) const ENTRY: usize = 0;
/// The engine future's first poll.
pub(crate) const POLLED: usize = 1;
/// The engine future's output is ready.
pub(crate) const DONE: usize = 2;
/// The caller's thread (or the loop) has the output.
pub(crate) const RESUMED: usize = 3;
/// The result is converted and handed to Python.
pub(crate) const RETURNED: usize = 4;

#[cfg(feature = "stages")]
mod imp {
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::Instant;

    static START: OnceLock<Instant> = OnceLock::new();
    static MARKS: [AtomicU64; 5] = [const { AtomicU64::new(0) }; 5];

    pub(crate) fn mark(stage: usize) {
        let ns = START.get_or_init(Instant::now).elapsed().as_nanos();
        if let Some(m) = MARKS.get(stage) {
            m.store(u64::try_from(ns).unwrap_or(u64::MAX), Ordering::Relaxed);
        }
    }

    /// The marks of the last call, in nanoseconds.
    #[pyo3::pyfunction]
    pub(crate) fn stage_marks() -> Vec<u64> {
        MARKS.iter().map(|m| m.load(Ordering::Relaxed)).collect()
    }
}

#[cfg(feature = "stages")]
pub(crate) use imp::{mark, stage_marks};

/// Records a stage (no-op without the `stages` feature).
#[cfg(not(feature = "stages"))]
#[inline(always)]
pub(crate) fn mark(_stage: usize) {}
