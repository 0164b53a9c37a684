//! The mutual-exclusion checker: finds lock windows on the same resource that overlap.
//!
//! Pure logic, no I/O. Windows are half-open `[start_us, end_us)`, so a window that ends exactly
//! when the next one starts does not overlap it (`docs/TESTING.md` §4.3).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// One holder's exclusive window on a resource, in microseconds on the shared clock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    /// The locked resource (the lock key).
    pub resource: String,
    /// Who held it, for example `client/value`.
    pub holder: String,
    /// Start of the window, inclusive.
    pub start_us: u64,
    /// End of the window, exclusive.
    pub end_us: u64,
}

/// Two windows on the same resource that overlap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The resource both windows are on.
    pub resource: String,
    /// The window that started first (on a tie, the one listed first in the input).
    pub a: Window,
    /// The window that started later.
    pub b: Window,
    /// Length of the overlap: `min(a.end_us, b.end_us) - b.start_us`, always > 0.
    pub overlap_us: u64,
}

/// Returns every pair of windows on the same resource whose intervals overlap.
///
/// Empty windows (`start_us >= end_us`) overlap nothing. Pairs are reported in the order of the
/// later window's start. Runs in O(n log n + number of violations): windows are sorted by
/// (resource, start) and swept with a min-heap of the ends of the still-open windows.
pub fn check(windows: &[Window]) -> Vec<Violation> {
    let mut order: Vec<usize> = (0..windows.len())
        .filter(|&i| windows[i].start_us < windows[i].end_us)
        .collect();
    // Stable sort: ties keep input order.
    order.sort_by(|&x, &y| {
        let (a, b) = (&windows[x], &windows[y]);
        (&a.resource, a.start_us).cmp(&(&b.resource, b.start_us))
    });

    let mut out = Vec::new();
    // Open windows of the current resource, keyed by (end, input index) for a min-heap.
    let mut open: BinaryHeap<Reverse<(u64, usize)>> = BinaryHeap::new();
    let mut resource: Option<&str> = None;
    for &i in &order {
        let w = &windows[i];
        if resource != Some(w.resource.as_str()) {
            open.clear();
            resource = Some(&w.resource);
        }
        while open
            .peek()
            .is_some_and(|Reverse((end, _))| *end <= w.start_us)
        {
            open.pop();
        }
        // Every window still open ends after `w` starts, and started at or before it.
        let mut earlier: Vec<usize> = open.iter().map(|Reverse((_, j))| *j).collect();
        earlier.sort_by_key(|&j| (windows[j].start_us, j));
        for j in earlier {
            let a = &windows[j];
            out.push(Violation {
                resource: w.resource.clone(),
                a: a.clone(),
                b: w.clone(),
                overlap_us: a.end_us.min(w.end_us) - w.start_us,
            });
        }
        open.push(Reverse((w.end_us, i)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(resource: &str, holder: &str, start_us: u64, end_us: u64) -> Window {
        Window {
            resource: resource.into(),
            holder: holder.into(),
            start_us,
            end_us,
        }
    }

    #[test]
    fn finds_an_overlap() {
        let v = check(&[w("r", "a", 100, 300), w("r", "b", 250, 400)]);
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].a.holder, "a");
        assert_eq!(v[0].b.holder, "b");
        assert_eq!(v[0].overlap_us, 50);
    }

    #[test]
    fn touching_windows_do_not_overlap() {
        let ws = [
            w("r", "a", 100, 200),
            w("r", "b", 200, 300),
            w("r", "c", 300, 301),
        ];
        assert!(check(&ws).is_empty());
    }

    #[test]
    fn different_resources_do_not_overlap() {
        assert!(check(&[w("r1", "a", 0, 100), w("r2", "b", 50, 150)]).is_empty());
    }

    #[test]
    fn empty_windows_are_ignored() {
        assert!(
            check(&[
                w("r", "a", 100, 100),
                w("r", "b", 50, 150),
                w("r", "c", 90, 80)
            ])
            .is_empty()
        );
    }

    #[test]
    fn finds_every_pair_in_any_input_order() {
        // a contains b and c; b and c overlap too; d comes after all of them.
        let ws = [
            w("r", "d", 1000, 1100),
            w("r", "c", 150, 400),
            w("r", "a", 0, 500),
            w("r", "b", 100, 200),
        ];
        let got: Vec<(String, String, u64)> = check(&ws)
            .into_iter()
            .map(|v| (v.a.holder, v.b.holder, v.overlap_us))
            .collect();
        let want = [("a", "b", 100), ("a", "c", 250), ("b", "c", 50)];
        let want: Vec<(String, String, u64)> = want
            .iter()
            .map(|(a, b, o)| (a.to_string(), b.to_string(), *o))
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn a_long_window_shadows_later_short_ones() {
        // The sweep must not forget `a` when the shorter `b` closes.
        let ws = [
            w("r", "a", 0, 1000),
            w("r", "b", 10, 20),
            w("r", "c", 500, 600),
        ];
        let pairs: Vec<(String, String)> = check(&ws)
            .into_iter()
            .map(|v| (v.a.holder, v.b.holder))
            .collect();
        assert_eq!(
            pairs,
            [
                ("a".to_string(), "b".to_string()),
                ("a".to_string(), "c".to_string())
            ]
        );
    }
}
