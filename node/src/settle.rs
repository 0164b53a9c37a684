//! The promises of engine calls, and how their outputs reach the event loop.
//!
//! Each JavaScript environment (the main thread, each worker thread) has one [`Sink`]: one
//! threadsafe function, created with the first call, through which every call's output
//! comes back. A runtime worker that finishes a call queues its output and wakes the event
//! loop only when the queue was empty, so a burst of outputs costs one wake-up; the loop then
//! settles them all. A threadsafe function per call (napi-rs's `JsDeferred`) cost the event
//! loop a libuv handle, two cleanup hooks and an async resource per call, made and torn down
//! again. The promise itself is a plain `napi_create_promise`.
//!
//! The function is unref'd while no call is pending, so an idle client never keeps the
//! process alive, and ref'd while one is. When the environment tears down, its cleanup hook
//! closes the sink first: outputs that arrive later are dropped, never sent to a function
//! that is gone.
// The raw N-API calls below are the reason this module exists; each carries its SAFETY note.
#![allow(unsafe_code)]

use std::cell::RefCell;
use std::ffi::c_void;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use napi::bindgen_prelude::{Object, ToNapiValue};
use napi::{Env, JsError, sys};

use crate::error::NativeError;

/// A call's output, turned into a JavaScript value on the environment's thread.
type Output = Box<dyn FnOnce(sys::napi_env) -> napi::Result<sys::napi_value> + Send>;

/// A promise's resolver.
struct Deferred(sys::napi_deferred);

// SAFETY: a `napi_deferred` is an opaque handle that is only passed back to N-API on the
// thread of the environment that made it (in `drain`); other threads only move it.
unsafe impl Send for Deferred {}

/// The outputs waiting for the event loop, and whether the environment is gone.
struct Queue {
    items: Vec<(Deferred, Output)>,
    tsfn: sys::napi_threadsafe_function,
    closed: bool,
}

/// The channel of one environment (see the module's documentation).
pub(crate) struct Sink {
    queue: Mutex<Queue>,
    /// Calls whose promise is not settled yet; read and written on the environment's thread.
    pending: AtomicUsize,
}

// SAFETY: the raw threadsafe function is only used under the queue's lock, while `closed` is
// false (N-API allows calling it from any thread until it is released); everything else in
// `Sink` is `Send + Sync`.
unsafe impl Send for Sink {}
// SAFETY: as for `Send`.
unsafe impl Sync for Sink {}

thread_local! {
    /// This thread's environment and its sink.
    static SINK: RefCell<Option<(usize, Arc<Sink>)>> = const { RefCell::new(None) };
}

impl Sink {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The sink of `env`'s environment, made with its first call.
    fn of(env: &Env) -> napi::Result<Arc<Sink>> {
        let raw = env.raw();
        SINK.with_borrow_mut(|slot| {
            if let Some((owner, sink)) = slot.as_ref()
                && *owner == raw as usize
            {
                return Ok(sink.clone());
            }
            let sink = Sink::create(raw)?;
            *slot = Some((raw as usize, sink.clone()));
            Ok(sink)
        })
    }

    fn create(env: sys::napi_env) -> napi::Result<Arc<Sink>> {
        let sink = Arc::new(Sink {
            queue: Mutex::new(Queue {
                items: Vec::new(),
                tsfn: ptr::null_mut(),
                closed: false,
            }),
            pending: AtomicUsize::new(0),
        });
        let name = "quorumlock";
        let mut js_name = ptr::null_mut();
        // SAFETY: `env` is the live environment of the calling (JavaScript) thread, and the
        // name's pointer and length describe a valid UTF-8 buffer.
        status(unsafe {
            sys::napi_create_string_utf8(
                env,
                name.as_ptr().cast(),
                name.len() as isize,
                &mut js_name,
            )
        })?;
        // The function owns one reference (freed by `finalize`), the cleanup hook another
        // (freed by `close`).
        let context = Arc::into_raw(sink.clone()).cast_mut().cast::<c_void>();
        let mut tsfn = ptr::null_mut();
        // SAFETY: no JavaScript function (N-API calls `drain` instead), no queue limit, one
        // owning thread (this one; the function lives until the environment tears down);
        // `context` stays valid until `finalize` runs, which is the last use N-API makes of it.
        let created = status(unsafe {
            sys::napi_create_threadsafe_function(
                env,
                ptr::null_mut(),
                ptr::null_mut(),
                js_name,
                0,
                1,
                context,
                Some(finalize),
                context,
                Some(drain),
                &mut tsfn,
            )
        });
        if let Err(e) = created {
            // SAFETY: N-API did not take the reference made above; give it back.
            drop(unsafe { Arc::from_raw(context.cast::<Sink>()) });
            return Err(e);
        }
        sink.lock().tsfn = tsfn;
        if let Err(e) = Sink::watch(env, tsfn, &sink) {
            // SAFETY: no thread has seen the function yet; released, its finalizer frees its
            // reference to the sink.
            unsafe {
                sys::napi_release_threadsafe_function(
                    tsfn,
                    sys::ThreadsafeFunctionReleaseMode::release,
                )
            };
            return Err(e);
        }
        Ok(sink)
    }

    /// Unrefs the new function (it keeps no process alive until a call is pending, `begin`)
    /// and registers the environment's cleanup hook for `sink`.
    fn watch(
        env: sys::napi_env,
        tsfn: sys::napi_threadsafe_function,
        sink: &Arc<Sink>,
    ) -> napi::Result<()> {
        // SAFETY: `tsfn` was just created on this thread.
        status(unsafe { sys::napi_unref_threadsafe_function(env, tsfn) })?;
        let hook = Arc::into_raw(sink.clone()).cast_mut().cast::<c_void>();
        // SAFETY: `close` runs once on this thread when the environment tears down, before
        // N-API finalizes the function (cleanup hooks run in the reverse order of their
        // registration, and the function's own was registered when it was created).
        let added = status(unsafe { sys::napi_add_env_cleanup_hook(env, Some(close), hook) });
        if added.is_err() {
            // SAFETY: the hook was not registered; give its reference back.
            drop(unsafe { Arc::from_raw(hook.cast::<Sink>()) });
        }
        added
    }

    /// A call begins (on the environment's thread): the first pending call refs the function.
    fn begin(&self, env: sys::napi_env) {
        if self.pending.fetch_add(1, Ordering::Relaxed) == 0 {
            let tsfn = self.lock().tsfn;
            // SAFETY: on the environment's thread, with the function not finalized (the sink
            // is this thread's current one, so its environment is alive).
            unsafe { sys::napi_ref_threadsafe_function(env, tsfn) };
        }
    }

    /// A call ended (on the environment's thread): the last pending call unrefs the function.
    fn end(&self, env: sys::napi_env) {
        if self.pending.fetch_sub(1, Ordering::Relaxed) == 1 {
            let tsfn = self.lock().tsfn;
            // SAFETY: as in `begin`; called from `drain`, while the function is alive.
            unsafe { sys::napi_unref_threadsafe_function(env, tsfn) };
        }
    }

    /// Queues an output (from any thread) and wakes the event loop if the queue was empty.
    /// After the environment's teardown the output is dropped.
    fn send(&self, deferred: Deferred, output: Output) {
        let mut queue = self.lock();
        if queue.closed {
            return;
        }
        queue.items.push((deferred, output));
        if queue.items.len() == 1 {
            // SAFETY: not closed, so the function is not released (`close` sets `closed` under
            // this lock before it releases the function). Nonblocking on an unlimited queue
            // cannot fail but while closing, when the outputs no longer matter.
            unsafe {
                sys::napi_call_threadsafe_function(
                    queue.tsfn,
                    ptr::null_mut(),
                    sys::ThreadsafeFunctionCallMode::nonblocking,
                )
            };
        }
    }
}

/// The promise of one call, settled through the sink with `outcome(result)` whatever happens
/// to the call: dropped without a result (its task was dropped unpolled, e.g. while the
/// runtime shuts down), it settles with `QL_INTERNAL`, as a panic in the work does, so that
/// no promise stays pending and keeps the process alive forever.
pub(crate) struct Settle<T, O: ToNapiValue + Send + 'static> {
    sink: Arc<Sink>,
    deferred: Option<Deferred>,
    outcome: fn(Result<T, NativeError>) -> O,
}

impl<T, O: ToNapiValue + Send + 'static> Settle<T, O> {
    /// Settles the promise with `outcome(result)`, turned into a JavaScript value on the
    /// event loop.
    pub(crate) fn with(mut self, result: Result<T, NativeError>) {
        self.send(result);
    }

    fn send(&mut self, result: Result<T, NativeError>) {
        if let Some(deferred) = self.deferred.take() {
            let outcome = (self.outcome)(result);
            self.sink.send(
                deferred,
                Box::new(move |env| {
                    crate::stages::mark(crate::stages::RESUMED);
                    // SAFETY: `env` is the live environment of the current thread (`drain`).
                    unsafe { O::to_napi_value(env, outcome) }
                }),
            );
        }
    }
}

impl<T, O: ToNapiValue + Send + 'static> Drop for Settle<T, O> {
    fn drop(&mut self) {
        if self.deferred.is_none() {
            return; // settled by `with`
        }
        self.send(Err(NativeError::internal(
            "a quorumlock engine task ended without a result (the runtime is shutting down)",
        )));
    }
}

/// A new promise of `env`'s environment and the [`Settle`] that settles it with `outcome`
/// from any thread.
pub(crate) fn pending<T, O: ToNapiValue + Send + 'static>(
    env: &Env,
    outcome: fn(Result<T, NativeError>) -> O,
) -> napi::Result<(Settle<T, O>, Object<'_>)> {
    let sink = Sink::of(env)?;
    let (deferred, promise) = create_promise(env)?;
    sink.begin(env.raw());
    Ok((
        Settle {
            sink,
            deferred: Some(deferred),
            outcome,
        },
        promise,
    ))
}

/// A promise already resolved with `outcome` (bad arguments found before any work starts).
pub(crate) fn resolved<O: ToNapiValue>(env: &Env, outcome: O) -> napi::Result<Object<'_>> {
    let (deferred, promise) = create_promise(env)?;
    // SAFETY: on the environment's thread, with a deferred it has just made; the conversion
    // gets that same live `env`.
    unsafe {
        settle_one(env.raw(), deferred, move |env| {
            O::to_napi_value(env, outcome)
        })
    };
    Ok(promise)
}

fn create_promise(env: &Env) -> napi::Result<(Deferred, Object<'_>)> {
    let mut deferred = ptr::null_mut();
    let mut promise = ptr::null_mut();
    // SAFETY: `env` is the live environment of the calling thread.
    status(unsafe { sys::napi_create_promise(env.raw(), &mut deferred, &mut promise) })?;
    Ok((Deferred(deferred), Object::from_raw(env.raw(), promise)))
}

/// Resolves or rejects one promise with its output, in a handle scope of its own.
///
/// # Safety
/// `env` must be the live environment of the current thread, and `deferred` one of its
/// unsettled deferreds.
unsafe fn settle_one(
    env: sys::napi_env,
    deferred: Deferred,
    output: impl FnOnce(sys::napi_env) -> napi::Result<sys::napi_value>,
) {
    let mut scope = ptr::null_mut();
    // SAFETY: see the function's contract.
    let opened = unsafe { sys::napi_open_handle_scope(env, &mut scope) } == sys::Status::napi_ok;
    let value = catch_unwind(AssertUnwindSafe(|| output(env))).unwrap_or_else(|_| {
        Err(napi::Error::from_reason(
            "QL_INTERNAL: converting a quorumlock result panicked; this is a bug",
        ))
    });
    // SAFETY: see the function's contract; a deferred is settled exactly once, here.
    unsafe {
        match value {
            Ok(v) => sys::napi_resolve_deferred(env, deferred.0, v),
            Err(e) => sys::napi_reject_deferred(env, deferred.0, JsError::from(e).into_value(env)),
        };
        if opened {
            sys::napi_close_handle_scope(env, scope);
        }
    }
}

/// The function's JavaScript-thread callback: settles every queued output.
unsafe extern "C" fn drain(
    env: sys::napi_env,
    _js_callback: sys::napi_value,
    context: *mut c_void,
    _data: *mut c_void,
) {
    if env.is_null() || context.is_null() {
        return; // the function is being finalized with calls left in its queue
    }
    // SAFETY: `context` is the sink's reference owned by the function, alive until `finalize`.
    let sink = unsafe { &*context.cast::<Sink>() };
    let items = std::mem::take(&mut sink.lock().items);
    for (deferred, output) in items {
        // SAFETY: N-API calls `drain` on the environment's thread with its live `env`, and each
        // queued deferred is unsettled (queued once, drained once).
        unsafe { settle_one(env, deferred, output) };
        sink.end(env);
    }
}

/// The function's finalizer: gives back the function's reference to the sink.
unsafe extern "C" fn finalize(_env: sys::napi_env, data: *mut c_void, _hint: *mut c_void) {
    if !data.is_null() {
        // SAFETY: `data` is the reference made by `Sink::create` for the function; N-API
        // finalizes once.
        drop(unsafe { Arc::from_raw(data.cast::<Sink>()) });
    }
}

/// The environment's cleanup hook: closes the sink (later outputs are dropped), drops the
/// queued ones, releases the function, and forgets the sink on this thread.
unsafe extern "C" fn close(data: *mut c_void) {
    if data.is_null() {
        return;
    }
    // SAFETY: `data` is the reference made by `Sink::create` for this hook, which runs once.
    let sink = unsafe { Arc::from_raw(data.cast::<Sink>()) };
    let dropped = {
        let mut queue = sink.lock();
        queue.closed = true;
        // SAFETY: the function is alive (its own cleanup runs after this hook) and no thread
        // calls it any more (`closed` is set under the lock that `send` holds to call it).
        unsafe {
            sys::napi_release_threadsafe_function(
                queue.tsfn,
                sys::ThreadsafeFunctionReleaseMode::abort,
            )
        };
        std::mem::take(&mut queue.items)
    };
    drop(dropped);
    let _ = SINK.try_with(|slot| {
        if let Ok(mut slot) = slot.try_borrow_mut()
            && slot.as_ref().is_some_and(|(_, s)| Arc::ptr_eq(s, &sink))
        {
            *slot = None;
        }
    });
}

fn status(s: sys::napi_status) -> napi::Result<()> {
    if s == sys::Status::napi_ok {
        Ok(())
    } else {
        Err(napi::Error::from_status(napi::Status::from(s)))
    }
}
