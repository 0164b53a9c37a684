//! The checker: no two holders' windows of one resource overlap in true time, fencing tokens
//! strictly increase in the order of the grants, and (where a scenario asks) no key of a
//! finished call is left behind.

/// A holder's working window on one resource, in true µs: `[start, end)`.
#[derive(Clone, Debug)]
pub struct Window {
    /// Resource index.
    pub resource: usize,
    /// Holder.
    pub client: usize,
    /// Acquired (T2, true time).
    pub start: i64,
    /// End of work: validity end or release start.
    pub end: i64,
    /// The lock value.
    pub value: String,
    /// Fencing token, when fenced.
    pub token: Option<u64>,
}

/// A broken property, with what shows it.
#[derive(Clone, Debug)]
pub struct Violation {
    /// `overlap`, `token` or `leak`.
    pub kind: &'static str,
    /// The evidence.
    pub detail: String,
    /// True time (µs) at which it shows: the start of the later window, or the audit.
    pub at: i64,
}

/// Collects windows and grants during a run.
#[derive(Default)]
pub struct Checker {
    /// Every finished window.
    pub windows: Vec<Window>,
}

impl Checker {
    /// The first violation of overlap or token order, if any.
    pub fn check(&self) -> Option<Violation> {
        let mut w: Vec<&Window> = self.windows.iter().collect();
        w.sort_by_key(|x| (x.resource, x.start, x.end));
        for pair in w.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            if a.resource != b.resource {
                continue;
            }
            if let (Some(ta), Some(tb)) = (a.token, b.token)
                && tb <= ta
            {
                return Some(Violation {
                    kind: "token",
                    detail: format!(
                        "resource {}: client {} got token {ta} at {} µs, later client {} got {tb} at {} µs",
                        a.resource, a.client, a.start, b.client, b.start
                    ),
                    at: b.start,
                });
            }
        }
        // Overlap: compare each window with the one ending latest before it.
        let mut latest: Option<&Window> = None;
        for x in w {
            if let Some(l) = latest
                && l.resource == x.resource
                && x.start < l.end
            {
                return Some(Violation {
                    kind: "overlap",
                    detail: format!(
                        "resource {}: client {} holds [{}, {}) µs and client {} holds [{}, {}) µs",
                        x.resource, l.client, l.start, l.end, x.client, x.start, x.end
                    ),
                    at: x.start,
                });
            }
            if latest.is_none_or(|l| l.resource != x.resource || x.end > l.end) {
                latest = Some(x);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(resource: usize, start: i64, end: i64, token: Option<u64>) -> Window {
        Window {
            resource,
            client: 0,
            start,
            end,
            value: String::new(),
            token,
        }
    }

    #[test]
    fn overlaps_and_tokens() {
        let mut c = Checker {
            windows: vec![w(0, 0, 10, None), w(0, 10, 20, None), w(1, 5, 30, None)],
        };
        assert!(c.check().is_none());
        c.windows.push(w(0, 2, 3, None));
        assert_eq!(c.check().map(|v| v.kind), Some("overlap"));
        c.windows = vec![w(0, 0, 10, Some(5)), w(0, 10, 20, Some(5))];
        assert_eq!(c.check().map(|v| v.kind), Some("token"));
    }
}
