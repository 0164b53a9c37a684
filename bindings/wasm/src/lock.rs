//! The lock handle: held, lost or released; extend (`proto::hold` decides), release, the
//! auto-extension (the schedule of `Hold::next_extend_us`) and the lost callback.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use futures_util::lock::Mutex;
use js_sys::{Array, Function, Promise};
use quorumlock_proto::acquisition::Grant;
use quorumlock_proto::command;
use quorumlock_proto::config::LockOptions;
use quorumlock_proto::error::{Error, Result};
use quorumlock_proto::hold::{AfterFailure, ExtendOutcome, Hold};
use quorumlock_proto::quorum::Decide;
use quorumlock_proto::report::Report;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

use crate::engine::{Inner, Traffic};
use crate::js::{Sleep, error_js, now_us, random8, release_js, report_js};

enum Phase {
    Held,
    Lost(Error),
    Released(Report),
}

struct State {
    phase: Phase,
    hold: Hold,
    extended: Option<Report>,
    auto: bool,
    generation: u64,
}

struct Shared {
    inner: Rc<Inner>,
    keys: Arc<[Vec<u8>]>,
    opts: LockOptions,
    grant: Grant,
    state: RefCell<State>,
    /// Serializes extend and release, so a release waits for an extend in flight.
    op: Mutex<()>,
    on_lost: Option<Function>,
}

/// A held lock (the package's `Lock` wraps it).
#[wasm_bindgen]
pub struct LockHandle {
    s: Rc<Shared>,
}

impl LockHandle {
    pub(crate) fn new(
        inner: Rc<Inner>,
        keys: Arc<[Vec<u8>]>,
        opts: LockOptions,
        grant: Grant,
        on_lost: Option<Function>,
    ) -> Self {
        let hold = Hold::new(&opts, grant.t1_us, grant.t2_us, grant.valid_until_us);
        let auto = opts.get_auto_extend();
        let s = Rc::new(Shared {
            inner,
            keys,
            opts,
            grant,
            state: RefCell::new(State {
                phase: Phase::Held,
                hold,
                extended: None,
                auto: false,
                generation: 0,
            }),
            op: Mutex::new(()),
            on_lost,
        });
        if auto {
            start_watchdog(&s);
        }
        Self { s }
    }
}

fn mark_lost(s: &Rc<Shared>, e: &Error) {
    {
        let mut st = s.state.borrow_mut();
        if !matches!(st.phase, Phase::Held) {
            return;
        }
        st.phase = Phase::Lost(e.clone());
        st.auto = false;
        st.generation += 1;
    }
    if let Some(f) = &s.on_lost {
        let _ = f.call1(&JsValue::UNDEFINED, &error_js(e));
    }
    let me = s.clone();
    wasm_bindgen_futures::spawn_local(async move {
        let timeout = me.opts.effective_node_timeout(me.opts.get_ttl());
        let _ = me
            .inner
            .release_on(&me.inner.all(), &me.keys, &me.grant.value, timeout)
            .await;
    });
}

/// The loss, if the lock is lost now (a held lock whose deadline passed is lost now).
fn lost_now(s: &Rc<Shared>) -> Option<Error> {
    let expired = {
        let st = s.state.borrow();
        match &st.phase {
            Phase::Lost(e) => return Some(e.clone()),
            Phase::Released(_) => return None,
            Phase::Held => st
                .hold
                .is_expired(now_us())
                .then(|| st.hold.expired_error(Report::default())),
        }
    };
    if let Some(e) = &expired {
        mark_lost(s, e);
    }
    expired
}

async fn extend(s: &Rc<Shared>, ttl: Duration) -> Result<()> {
    let _op = s.op.lock().await;
    let round = {
        let mut st = s.state.borrow_mut();
        match &st.phase {
            Phase::Held => {}
            Phase::Lost(e) => return Err(e.clone()),
            Phase::Released(_) => {
                return Err(Error::invalid("the lock was released; acquire it again"));
            }
        }
        st.hold
            .start_extend(&s.inner.s.timing, &s.opts, ttl, now_us())
    };
    let round = match round {
        Ok(r) => r,
        Err(e) => {
            if e.is_lost() {
                mark_lost(s, &e);
            }
            return Err(e);
        }
    };
    let cmd = command::extend(&s.keys, &s.grant.value, round.ttl_ms());
    let result = s
        .inner
        .round(
            &s.inner.all(),
            Decide::AtQuorum,
            round.timeout(),
            Traffic::Lock,
            &cmd,
            command::read_extend,
        )
        .await;
    let outcome = {
        let mut st = s.state.borrow_mut();
        if !matches!(st.phase, Phase::Held) {
            return Err(match &st.phase {
                Phase::Lost(e) => e.clone(),
                _ => Error::invalid("the lock was released; acquire it again"),
            });
        }
        st.hold
            .finish_extend(&s.inner.s.timing, &s.opts, round, result, now_us())
    };
    match outcome {
        ExtendOutcome::Extended(report) => {
            s.state.borrow_mut().extended = Some(report);
            Ok(())
        }
        ExtendOutcome::Lost(e) => {
            mark_lost(s, &e);
            Err(e)
        }
        ExtendOutcome::Failed(e) => Err(e),
    }
}

async fn release(s: &Rc<Shared>) -> Report {
    stop_watchdog(s);
    let _op = s.op.lock().await;
    if let Phase::Released(r) = &s.state.borrow().phase {
        return r.clone();
    }
    let timeout = s.opts.effective_node_timeout(s.opts.get_ttl());
    let report = s
        .inner
        .release_on(&s.inner.all(), &s.keys, &s.grant.value, timeout)
        .await;
    s.state.borrow_mut().phase = Phase::Released(report.clone());
    report
}

fn start_watchdog(s: &Rc<Shared>) {
    let generation = {
        let mut st = s.state.borrow_mut();
        if st.auto {
            return;
        }
        st.auto = true;
        st.generation += 1;
        st.generation
    };
    let me = s.clone();
    wasm_bindgen_futures::spawn_local(async move { watchdog(me, generation).await });
}

fn stop_watchdog(s: &Rc<Shared>) {
    let mut st = s.state.borrow_mut();
    if st.auto {
        st.auto = false;
        st.generation += 1;
    }
}

fn current(s: &Shared, generation: u64) -> bool {
    let st = s.state.borrow();
    st.generation == generation && matches!(st.phase, Phase::Held)
}

/// The auto-extension (REDLOCK.md §5.2): weak timers, so a forgotten lock does not keep a
/// Node process alive.
async fn watchdog(s: Rc<Shared>, generation: u64) {
    let ttl = s.opts.get_ttl();
    let interval = s.opts.effective_extend_interval(ttl);
    let mut retry = false;
    loop {
        if !current(&s, generation) {
            return;
        }
        let at = s
            .state
            .borrow()
            .hold
            .next_extend_us(interval, retry, now_us(), random8());
        Sleep::until(at, true).await;
        if !current(&s, generation) {
            return;
        }
        if lost_now(&s).is_some() {
            return;
        }
        match extend(&s, ttl).await {
            Ok(()) => retry = false,
            Err(e) => match AfterFailure::of(&e) {
                AfterFailure::Stop => return,
                AfterFailure::Retry => retry = true,
                AfterFailure::WaitOut => {
                    let until = s.state.borrow().hold.valid_until_us();
                    Sleep::until(until, true).await;
                    if current(&s, generation) {
                        let _ = lost_now(&s);
                    }
                    return;
                }
            },
        }
    }
}

#[wasm_bindgen]
impl LockHandle {
    /// The value stored in the keys.
    #[wasm_bindgen(getter)]
    pub fn value(&self) -> String {
        self.s.grant.value.to_string()
    }

    /// The fencing tokens as decimal strings, one per resource in sorted order; `undefined`
    /// when not fenced.
    #[wasm_bindgen(getter)]
    pub fn tokens(&self) -> Option<Vec<String>> {
        self.s
            .grant
            .tokens
            .as_ref()
            .map(|t| t.iter().map(u64::to_string).collect())
    }

    /// The TTL in milliseconds.
    #[wasm_bindgen(getter, js_name = ttlMs)]
    pub fn ttl_ms(&self) -> f64 {
        self.s.opts.get_ttl().as_millis() as f64
    }

    /// Attempts the acquisition took.
    #[wasm_bindgen(getter)]
    pub fn attempts(&self) -> u32 {
        self.s.grant.attempts
    }

    /// Validity left in whole milliseconds; 0 once expired, lost or released.
    #[wasm_bindgen(getter, js_name = remainingMs)]
    pub fn remaining_ms(&self) -> f64 {
        if lost_now(&self.s).is_some() {
            return 0.0;
        }
        let st = self.s.state.borrow();
        match st.phase {
            Phase::Held => st.hold.remaining(now_us()).as_millis() as f64,
            _ => 0.0,
        }
    }

    /// Successful extensions so far.
    #[wasm_bindgen(getter)]
    pub fn extensions(&self) -> u32 {
        self.s.state.borrow().hold.extensions()
    }

    /// True while the auto-extension runs.
    #[wasm_bindgen(getter, js_name = autoExtending)]
    pub fn auto_extending(&self) -> bool {
        self.s.state.borrow().auto
    }

    /// The report of the successful attempt.
    #[wasm_bindgen(getter)]
    pub fn nodes(&self) -> Array {
        report_js(&self.s.grant.report)
    }

    /// The reports of every attempt, oldest first.
    #[wasm_bindgen(getter, js_name = attemptReports)]
    pub fn attempt_reports(&self) -> Array {
        let g = &self.s.grant;
        g.history
            .iter()
            .chain([&g.report])
            .map(|r| JsValue::from(report_js(r)))
            .collect()
    }

    /// The report of the last successful extend, if any.
    #[wasm_bindgen(getter, js_name = extendNodes)]
    pub fn extend_nodes(&self) -> JsValue {
        self.s
            .state
            .borrow()
            .extended
            .as_ref()
            .map_or(JsValue::NULL, |r| report_js(r).into())
    }

    /// The loss as an error object if the lock is lost now, else `null`.
    #[wasm_bindgen(js_name = lostError)]
    pub fn lost_error(&self) -> JsValue {
        lost_now(&self.s).map_or(JsValue::NULL, |e| error_js(&e))
    }

    /// Starts or stops the auto-extension.
    #[wasm_bindgen(js_name = setAutoExtend)]
    pub fn set_auto_extend(&self, on: bool) -> Result<(), JsValue> {
        if on {
            if !matches!(self.s.state.borrow().phase, Phase::Held) || lost_now(&self.s).is_some() {
                return Err(error_js(&Error::invalid("the lock is no longer held")));
            }
            start_watchdog(&self.s);
        } else {
            stop_watchdog(&self.s);
        }
        Ok(())
    }

    /// Extends to `ttl_ms` (default: the lock's TTL) from now.
    pub fn extend(&self, ttl_ms: JsValue) -> Promise {
        let s = self.s.clone();
        future_to_promise(async move {
            let ttl = match ttl_ms.as_f64() {
                None if ttl_ms.is_undefined() || ttl_ms.is_null() => s.opts.get_ttl(),
                Some(v) if v.is_finite() && v >= 0.0 && v.fract() == 0.0 => {
                    Duration::from_millis(v as u64)
                }
                _ => {
                    return Err(error_js(&Error::invalid(
                        "ttlMs must be a whole number of milliseconds",
                    )));
                }
            };
            extend(&s, ttl)
                .await
                .map(|()| JsValue::UNDEFINED)
                .map_err(|e| error_js(&e))
        })
    }

    /// Releases on every node; idempotent. Resolves to `{ releasedCount, wasHeldByQuorum }`;
    /// the per-node report is [`LockHandle::release_nodes`], made only when read.
    pub fn release(&self) -> Promise {
        let s = self.s.clone();
        future_to_promise(async move { Ok(release_js(&release(&s).await)) })
    }

    /// The per-node report of the release; empty before it.
    #[wasm_bindgen(js_name = releaseNodes)]
    pub fn release_nodes(&self) -> Array {
        match &self.s.state.borrow().phase {
            Phase::Released(r) => report_js(r),
            _ => Array::new(),
        }
    }
}
