//! Mutual exclusion under contention, checked by the overlap checker, and the checker's
//! broken variant (a client that ignores validity) that it must flag (TESTING.md §1.6).
// Test helpers outside #[test] functions panic on failure by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use quorumlock::{Client, MonoTime};
use quorumlock_harness::{Window, check};

fn window(holder: usize, start: MonoTime, end: MonoTime) -> Window {
    Window {
        resource: "one".into(),
        holder: format!("worker-{holder}"),
        start_us: start.as_micros(),
        end_us: end.as_micros(),
    }
}

async fn contend(
    client: Client,
    workers: usize,
    per_worker: usize,
    ignore_validity: bool,
) -> Vec<Window> {
    let windows = Arc::new(Mutex::new(Vec::new()));
    let opts = if ignore_validity {
        opts(200)
            .retry_forever()
            .retry_delay(Duration::from_millis(5))
            .retry_jitter(Duration::from_millis(5))
    } else {
        opts(2_000)
            .retry_forever()
            .retry_delay(Duration::from_micros(200))
            .retry_jitter(Duration::from_millis(2))
    };
    let mut tasks = Vec::new();
    for w in 0..workers {
        let (client, windows, opts) = (client.clone(), windows.clone(), opts.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..per_worker {
                let lock = client.acquire_with(["one"], &opts).await.expect("acquire");
                let start = lock.acquired_at();
                if ignore_validity {
                    // The broken client: works past its validity and records the whole time.
                    tokio::time::sleep(Duration::from_millis(400)).await;
                }
                let released_at = MonoTime::now();
                let end = if ignore_validity {
                    released_at
                } else {
                    released_at.min(lock.valid_until())
                };
                windows.lock().unwrap().push(window(w, start, end));
                lock.release().await.expect("release");
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    Arc::try_unwrap(windows).unwrap().into_inner().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixteen_tasks_times_200_acquisitions_never_overlap() {
    let c = cluster(5);
    let client = client(&c).await;
    let windows = contend(client, 16, 200, false).await;
    assert_eq!(windows.len(), 3_200);
    let violations = check(&windows);
    assert!(
        violations.is_empty(),
        "{} overlaps, first: {:?}",
        violations.len(),
        violations.first()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checker_flags_a_client_that_ignores_validity() {
    let c = cluster(3);
    let client = client(&c).await;
    let windows = contend(client, 2, 2, true).await;
    let violations = check(&windows);
    assert!(!violations.is_empty(), "the broken variant must be caught");
    assert!(
        violations.iter().any(|v| v.overlap_us >= 100_000),
        "{violations:?}"
    );
}
