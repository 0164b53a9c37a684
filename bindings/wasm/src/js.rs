//! The host's services as Rust values: the transport, the monotonic clock
//! (`performance.now()`), the CSPRNG (`crypto.getRandomValues`), timers (`setTimeout`), abort
//! signals, and the conversions of replies, reports and errors.

use std::cell::RefCell;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use js_sys::{Array, Function, Object, Promise, Reflect, Uint8Array};
use quorumlock_proto::command::{self, Failure, Reply, error_kind};
use quorumlock_proto::error::Error;
use quorumlock_proto::grants;
use quorumlock_proto::line::bit;
use quorumlock_proto::report::{NodeCategory, NodeKind, Report};
use quorumlock_proto::value::Random;
use wasm_bindgen::JsCast;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

#[wasm_bindgen]
extern "C" {
    /// The I/O adapter as the package hands it over: `addresses` (one per node) and
    /// `send(node, argv, id)`, which sends at once and later calls [`settle`]`(id, ok,
    /// value)` with the node's reply (`ok`), or with `{ replyError: true, message }` for a
    /// Redis error reply or an error whose `kind` names the node kind of a transport failure.
    pub type Transport;

    #[wasm_bindgen(method, catch)]
    fn send(this: &Transport, node: u32, argv: Vec<JsValue>, id: u32) -> Result<(), JsValue>;

    #[wasm_bindgen(method, getter)]
    fn addresses(this: &Transport) -> JsValue;

    /// Subscribes node `node` to `channels` for listener `listener`: later calls
    /// [`notice`]`(listener, node)` on each message, and [`settle`]`(ack, ...)` once the
    /// subscription is live. False when the transport has no pub/sub.
    #[wasm_bindgen(method, catch)]
    fn listen(
        this: &Transport,
        node: u32,
        channels: Array,
        listener: u32,
        ack: u32,
    ) -> Result<bool, JsValue>;

    /// Ends every subscription of listener `listener`.
    #[wasm_bindgen(method, catch)]
    fn unlisten(this: &Transport, listener: u32) -> Result<(), JsValue>;

    #[wasm_bindgen(js_namespace = performance, js_name = now)]
    fn performance_now() -> f64;

    #[wasm_bindgen(js_namespace = crypto, js_name = getRandomValues, catch)]
    fn get_random_values(buf: &mut [u8]) -> Result<JsValue, JsValue>;

    #[wasm_bindgen(js_name = setTimeout)]
    fn set_timeout(f: &Function, ms: f64, id: u32) -> JsValue;

    #[wasm_bindgen(js_name = clearTimeout)]
    fn clear_timeout(id: &JsValue);
}

/// The monotonic clock in microseconds.
pub fn now_us() -> u64 {
    let ms = performance_now();
    if ms.is_finite() && ms > 0.0 {
        (ms * 1000.0) as u64
    } else {
        0
    }
}

/// `crypto.getRandomValues`, drawn 1 KiB at a time: one host call serves about 28
/// acquisition attempts (20 bytes of value, 16 of jitter each). Bytes are used once.
pub struct Crypto;

const POOL: usize = 1024;

thread_local! {
    static POOL_BYTES: std::cell::RefCell<(Vec<u8>, usize)> =
        const { std::cell::RefCell::new((Vec::new(), 0)) };
}

impl Random for Crypto {
    fn fill(&mut self, out: &mut [u8]) -> Result<(), String> {
        if out.len() > POOL {
            // getRandomValues takes at most 65536 bytes at once.
            for chunk in out.chunks_mut(65_536) {
                get_random_values(chunk).map_err(|e| text_of(&e))?;
            }
            return Ok(());
        }
        POOL_BYTES.with(|cell| {
            let mut pool = cell.borrow_mut();
            let (bytes, used) = &mut *pool;
            if bytes.len() != POOL || *used + out.len() > POOL {
                bytes.resize(POOL, 0);
                if let Err(e) = get_random_values(bytes) {
                    // Nothing from a failed draw is ever used.
                    bytes.clear();
                    return Err(text_of(&e));
                }
                *used = 0;
            }
            let taken = &mut bytes[*used..*used + out.len()];
            out.copy_from_slice(taken);
            // Never hand out the same bytes twice.
            taken.fill(0);
            *used += out.len();
            Ok(())
        })
    }
}

/// Eight random bytes (jitter; not a safety property: zeros if the source fails).
pub fn random8() -> [u8; 8] {
    let mut b = [0u8; 8];
    let _ = Crypto.fill(&mut b);
    b
}

thread_local! {
    /// Property names as JavaScript strings, made once: options, reports and errors use the
    /// same few names on every call.
    static KEYS: RefCell<HashMap<&'static str, JsValue>> = RefCell::new(HashMap::new());
}

fn key(name: &'static str) -> JsValue {
    KEYS.with(|k| {
        k.borrow_mut()
            .entry(name)
            .or_insert_with(|| JsValue::from_str(name))
            .clone()
    })
}

thread_local! {
    /// Strings that recur from call to call (command names, flags, numbers, script SHAs,
    /// node addresses), made once; at most `MAX_INTERNED`.
    static INTERNED: RefCell<HashMap<Vec<u8>, JsValue>> = RefCell::new(HashMap::new());
}

const MAX_INTERNED: usize = 512;

thread_local! {
    /// The texts of the last request's arguments by position, with their JavaScript strings.
    static LAST_ARGS: RefCell<Vec<(Vec<u8>, JsValue)>> = const { RefCell::new(Vec::new()) };
}

/// `text` as a JavaScript string; recurring short texts are made once.
fn text_js(text: &[u8], recurring: bool) -> Option<JsValue> {
    let s = std::str::from_utf8(text).ok()?;
    if !recurring {
        return Some(JsValue::from_str(s));
    }
    INTERNED.with(|m| {
        let mut m = m.borrow_mut();
        if let Some(v) = m.get(text) {
            return Some(v.clone());
        }
        let v = JsValue::from_str(s);
        if m.len() < MAX_INTERNED {
            m.insert(text.to_vec(), v.clone());
        }
        Some(v)
    })
}

/// Whether an argument is likely to recur: a command name or flag, a number, a script SHA.
fn recurring_arg(a: &[u8]) -> bool {
    !a.is_empty()
        && (a.len() <= 12
            && (a.iter().all(u8::is_ascii_uppercase) || a.iter().all(u8::is_ascii_digit))
            || a.len() == 40 && a.iter().all(|b| b.is_ascii_hexdigit()))
}

fn get(o: &JsValue, name: &'static str) -> JsValue {
    // Reflect.get throws on primitives: an exception per call is slow, and means "absent".
    if !o.is_object() && !o.is_function() {
        return JsValue::UNDEFINED;
    }
    Reflect::get(o, &key(name)).unwrap_or(JsValue::UNDEFINED)
}

fn set(o: &Object, name: &'static str, value: impl Into<JsValue>) {
    let _ = Reflect::set(o, &key(name), &value.into());
}

/// The text of a thrown value: its `message`, or the value as a string.
pub fn text_of(e: &JsValue) -> String {
    get(e, "message")
        .as_string()
        .or_else(|| e.as_string())
        .unwrap_or_else(|| "unknown error".to_owned())
}

/// An outcome the host delivers later through [`settle`], as a future. Cheaper than a
/// `JsFuture` per request: no closures are made, the host calls one exported function.
pub struct Pending {
    id: u32,
}

struct Slot {
    done: Option<Result<JsValue, JsValue>>,
    waker: Option<Waker>,
}

#[derive(Default)]
struct Slots {
    next: u32,
    map: HashMap<u32, Slot>,
}

thread_local! {
    static SLOTS: RefCell<Slots> = RefCell::new(Slots::default());
    /// The one timer callback: `setTimeout(TICK, ms, id)` settles `id`.
    static TICK: Function = Closure::<dyn Fn(u32)>::new(|id: u32| settle(id, true, JsValue::UNDEFINED))
        .into_js_value()
        .unchecked_into();
}

impl Pending {
    fn new() -> Self {
        SLOTS.with(|s| {
            let mut s = s.borrow_mut();
            let mut id = s.next;
            while s.map.contains_key(&id) {
                id = id.wrapping_add(1);
            }
            s.next = id.wrapping_add(1);
            s.map.insert(
                id,
                Slot {
                    done: None,
                    waker: None,
                },
            );
            Self { id }
        })
    }
}

impl Future for Pending {
    type Output = Result<JsValue, JsValue>;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        SLOTS.with(|s| {
            let mut s = s.borrow_mut();
            let Some(slot) = s.map.get_mut(&self.id) else {
                return Poll::Ready(Err(JsValue::from_str("the outcome was already taken")));
            };
            match slot.done.take() {
                Some(done) => Poll::Ready(done),
                None => {
                    slot.waker = Some(cx.waker().clone());
                    Poll::Pending
                }
            }
        })
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        // `try_with`: the thread-local may be gone at teardown.
        let _ = SLOTS.try_with(|s| s.borrow_mut().map.remove(&self.id));
    }
}

/// Delivers the outcome of request or timer `id`: the reply (`ok`) or the failure. Called by
/// the package's transport wrapper; an id whose future is gone is ignored.
#[wasm_bindgen]
pub fn settle(id: u32, ok: bool, value: JsValue) {
    let waker = SLOTS.with(|s| {
        let mut s = s.borrow_mut();
        let slot = s.map.get_mut(&id)?;
        slot.done = Some(if ok { Ok(value) } else { Err(value) });
        slot.waker.take()
    });
    if let Some(w) = waker {
        w.wake();
    }
}

struct Heard {
    nodes: Vec<bool>,
    /// The waiter's id (empty for a waiter in no line).
    id: String,
    /// `:<client>`, the end of the waiter's named channels (empty for a waiter in no line).
    suffix: String,
    /// Whether a notice since the last reset named this waiter.
    named: bool,
    /// The nodes whose releases popped this waiter from its line (one bit per node).
    popped: u64,
    /// The nodes that granted this waiter the key for its current registration.
    granted: u64,
    /// The number of the waiter's current registration for grants (0: none).
    registration: u64,
    waker: Option<Waker>,
}

thread_local! {
    static LISTENERS: RefCell<HashMap<u32, Heard>> = RefCell::new(HashMap::new());
    static NEXT_LISTENER: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// A message on `channel` (with `message`) for listener `listener` from node `node`: a
/// release notice (REDLOCK.md §9). A message on the waiter's named channel carries the id of
/// the waiter the release popped from the key's line (`<id> g<n>` when it granted that waiter
/// the key for its registration `n`): it counts for that waiter only, while that waiter still
/// listens in this isolate, and as a plain notice otherwise (a grant to a waiter gone from
/// here counts for nobody: its LEAVE hands the key on). A grant counts for the waiter's
/// current registration only. Called by the package's transport wrapper; a listener that is
/// gone is ignored.
#[wasm_bindgen]
pub fn notice(listener: u32, node: u32, channel: JsValue, message: JsValue) {
    let waker = LISTENERS.with(|l| {
        let mut l = l.borrow_mut();
        let me = l.get(&listener)?;
        let named = match (channel.as_string(), message.as_string()) {
            (Some(c), Some(m))
                if !me.suffix.is_empty() && !m.is_empty() && c.ends_with(&me.suffix) =>
            {
                Some(m)
            }
            _ => None,
        };
        let (id, grant) = named.as_deref().map_or((None, None), |m| {
            let (id, grant) = command::read_notice(m.as_bytes());
            (Some(String::from_utf8_lossy(id).into_owned()), grant)
        });
        let mine = id.as_ref().is_some_and(|m| *m == me.id);
        if !mine && (grant.is_some() || id.is_some_and(|m| l.values().any(|h| h.id == m))) {
            // The waiter it names listens here: the notice is that waiter's.
            return None;
        }
        let heard = l.get_mut(&listener)?;
        let slot = heard.nodes.get_mut(usize::try_from(node).ok()?)?;
        *slot = true;
        heard.named |= mine;
        if mine {
            let b = bit(usize::try_from(node).ok()?);
            heard.popped |= b;
            if grant.is_some_and(|n| grants::counts(heard.registration, n)) {
                heard.granted |= b;
            }
        }
        heard.waker.take()
    });
    if let Some(w) = waker {
        w.wake();
    }
}

/// One waiting acquisition's subscriptions to the release channels of its keys (REDLOCK.md
/// §9); unsubscribed when dropped. Notices are hints: a lost one costs a retry delay.
pub struct Listener {
    id: u32,
    host: Transport,
    threshold: usize,
}

impl Listener {
    /// Subscribes every node to `channels` and waits (up to `timeout_us`) until the
    /// subscriptions are live. `waiter` is `(client id, waiter id)` for a waiter standing in
    /// its keys' lines, whose `channels` include its client's named ones. `None` when the
    /// transport has no pub/sub or no node could subscribe: the caller polls. The threshold
    /// is the quorum, or every live node when fewer are live.
    pub async fn start(
        host: &Transport,
        n: usize,
        channels: &[Vec<u8>],
        waiter: Option<(&[u8], &[u8])>,
        quorum: usize,
        timeout_us: u64,
    ) -> Option<Listener> {
        let id = NEXT_LISTENER.with(|c| {
            let id = c.get();
            c.set(id.wrapping_add(1));
            id
        });
        let (suffix, waiter) = waiter.map_or_else(Default::default, |(client, w)| {
            (
                format!(":{}", String::from_utf8_lossy(client)),
                String::from_utf8_lossy(w).into_owned(),
            )
        });
        LISTENERS.with(|l| {
            l.borrow_mut().insert(
                id,
                Heard {
                    nodes: vec![false; n],
                    id: waiter,
                    suffix,
                    named: false,
                    popped: 0,
                    granted: 0,
                    registration: 0,
                    waker: None,
                },
            )
        });
        let mut listener = Listener {
            id,
            host: JsValue::from(host).unchecked_into(),
            threshold: quorum,
        };
        let list: Array = channels.iter().filter_map(|c| text_js(c, false)).collect();
        let mut acks = Vec::new();
        for node in 0..n {
            let ack = Pending::new();
            if let Ok(true) = host.listen(
                u32::try_from(node).unwrap_or(u32::MAX),
                list.clone(),
                id,
                ack.id,
            ) {
                acks.push(ack);
            }
        }
        if acks.is_empty() {
            return None;
        }
        let all = futures_util::future::join_all(acks);
        let deadline = Sleep::until(now_us().saturating_add(timeout_us), false);
        let live = match futures_util::future::select(Box::pin(all), deadline).await {
            futures_util::future::Either::Left((acks, _)) => {
                acks.iter().filter(|a| a.is_ok()).count()
            }
            futures_util::future::Either::Right(_) => 0,
        };
        if live == 0 {
            return None;
        }
        listener.threshold = quorum.min(live);
        Some(listener)
    }

    /// Forgets what was heard: called as an attempt starts. Returns whether a notice since
    /// the last reset named this waiter (the attempt answers a release that popped it from
    /// a line).
    pub fn reset(&self) -> bool {
        LISTENERS.with(|l| {
            let mut l = l.borrow_mut();
            let Some(h) = l.get_mut(&self.id) else {
                return false;
            };
            h.nodes.iter_mut().for_each(|x| *x = false);
            std::mem::take(&mut h.named)
        })
    }

    /// The nodes whose releases popped this waiter from its line.
    pub fn popped(&self) -> u64 {
        LISTENERS.with(|l| l.borrow().get(&self.id).map_or(0, |h| h.popped))
    }

    /// The nodes whose releases granted this waiter the key for its current registration.
    pub fn granted(&self) -> u64 {
        LISTENERS.with(|l| l.borrow().get(&self.id).map_or(0, |h| h.granted))
    }

    /// The waiter's registration for grants is now number `n`: the grants of earlier ones
    /// (given back) are forgotten, and their notices no longer count.
    pub fn expect_grants(&self, n: u64) {
        LISTENERS.with(|l| {
            if let Some(h) = l.borrow_mut().get_mut(&self.id) {
                h.registration = n;
                h.granted = 0;
            }
        });
    }

    /// Ready once notices came from the threshold's number of nodes since the last reset.
    pub fn poll_released(&self, cx: &mut Context<'_>) -> Poll<()> {
        LISTENERS.with(|l| {
            let mut l = l.borrow_mut();
            let Some(h) = l.get_mut(&self.id) else {
                return Poll::Pending;
            };
            if h.nodes.iter().filter(|x| **x).count() >= self.threshold {
                Poll::Ready(())
            } else {
                h.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        })
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        let _ = LISTENERS.try_with(|l| l.borrow_mut().remove(&self.id));
        let _ = self.host.unlisten(self.id);
    }
}

/// A timer (`setTimeout`) as a future; cleared when dropped. A `weak` timer does not keep a
/// Node process alive (`unref`).
pub struct Sleep {
    id: JsValue,
    pending: Pending,
}

/// The longest `setTimeout` delay; longer sleeps end early and are taken again.
const MAX_TIMER_MS: f64 = 2_147_483_647.0;

impl Sleep {
    /// Sleeps until `at_us` on [`now_us`].
    pub fn until(at_us: u64, weak: bool) -> Self {
        let us = at_us.saturating_sub(now_us());
        Self::new((us as f64 / 1000.0).ceil().min(MAX_TIMER_MS), weak)
    }

    fn new(ms: f64, weak: bool) -> Self {
        let pending = Pending::new();
        let id = TICK.with(|tick| set_timeout(tick, ms, pending.id));
        if weak && let Some(unref) = get(&id, "unref").dyn_ref::<Function>() {
            let _ = unref.call0(&id);
        }
        Self { id, pending }
    }
}

impl Future for Sleep {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        Pin::new(&mut self.pending).poll(cx).map(|_| ())
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        clear_timeout(&self.id);
    }
}

/// Completes when an `AbortSignal` aborts; the listener is removed when dropped.
pub struct Aborted {
    signal: JsValue,
    listener: Option<Function>,
    fut: Option<JsFuture>,
}

impl Aborted {
    /// Watches `signal` (`undefined` or `null`: never completes).
    pub fn new(signal: JsValue) -> Self {
        let mut me = Self {
            signal,
            listener: None,
            fut: None,
        };
        if me.signal.is_undefined() || me.signal.is_null() {
            return me;
        }
        let add = get(&me.signal, "addEventListener");
        let Some(add) = add.dyn_ref::<Function>() else {
            return me;
        };
        let mut listener = None;
        let promise = Promise::new(&mut |resolve, _reject| {
            let _ = add.call2(&me.signal, &JsValue::from_str("abort"), &resolve);
            listener = Some(resolve);
        });
        me.listener = listener;
        me.fut = Some(JsFuture::from(promise));
        me
    }

    /// Whether the signal has aborted already.
    pub fn is_aborted(&self) -> bool {
        get(&self.signal, "aborted").is_truthy()
    }
}

impl Future for Aborted {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        match &mut self.fut {
            Some(f) => Pin::new(f).poll(cx).map(|_| ()),
            None => Poll::Pending,
        }
    }
}

impl Drop for Aborted {
    fn drop(&mut self) {
        if let Some(listener) = &self.listener
            && let Some(remove) = get(&self.signal, "removeEventListener").dyn_ref::<Function>()
        {
            let _ = remove.call2(&self.signal, &JsValue::from_str("abort"), listener);
        }
    }
}

impl Transport {
    /// The node addresses the adapter declares.
    pub fn node_addresses(&self) -> Result<Vec<String>, Error> {
        let list = self.addresses();
        if !Array::is_array(&list) {
            return Err(Error::invalid(
                "the transport must have an `addresses` array (one address per node)",
            ));
        }
        Array::from(&list)
            .iter()
            .map(|a| {
                a.as_string()
                    .ok_or_else(|| Error::invalid("transport addresses must be strings"))
            })
            .collect()
    }

    /// Sends `argv` to node `node` now (the request is written before this returns, for
    /// adapters whose clients write synchronously), and returns its reply as a future.
    pub fn request(
        &self,
        node: usize,
        argv: &[Vec<u8>],
    ) -> impl Future<Output = Result<Reply, Failure>> + use<> {
        // A `Vec` crosses to JavaScript as one array in one call (not a call per element).
        let mut args = Vec::with_capacity(argv.len());
        LAST_ARGS.with(|last| {
            let mut last = last.borrow_mut();
            last.truncate(argv.len());
            for (i, a) in argv.iter().enumerate() {
                let v = match last.get(i) {
                    // A round sends the same command to every node: its texts (the keys,
                    // the lock value) are made once for all of them.
                    Some((bytes, v)) if bytes == a => v.clone(),
                    _ => {
                        // The lock value (40 hex characters) looks like a SHA but never
                        // recurs: only the script argument position of EVALSHA is interned.
                        let recurring = if i == 1 {
                            argv[0] == b"EVALSHA"
                        } else {
                            a.len() != 40 && recurring_arg(a)
                        };
                        match text_js(a, recurring) {
                            Some(s) => {
                                // JavaScript strings are immutable: safe to hand out again.
                                let entry = (a.clone(), s.clone());
                                if i < last.len() {
                                    last[i] = entry;
                                } else if i == last.len() {
                                    last.push(entry);
                                }
                                s
                            }
                            // Bytes are a fresh, mutable array for each request.
                            None => Uint8Array::from(a.as_slice()).into(),
                        }
                    }
                };
                args.push(v);
            }
        });
        let pending = Pending::new();
        let sent = self.send(u32::try_from(node).unwrap_or(u32::MAX), args, pending.id);
        async move {
            let value = match sent {
                Ok(()) => pending.await,
                Err(e) => Err(e),
            };
            match value {
                Ok(v) => reply_of(&v),
                Err(e) => Err(failure_of(&e)),
            }
        }
    }
}

/// A reply as JavaScript gave it: `null`, a number or bigint, a string (a status or a
/// text), bytes, or an array of these.
pub fn reply_of(v: &JsValue) -> Result<Reply, Failure> {
    if v.is_null() || v.is_undefined() {
        return Ok(Reply::Nil);
    }
    if let Some(n) = v.as_f64() {
        if n.fract() == 0.0 && n.abs() <= 9_007_199_254_740_991.0 {
            return Ok(Reply::Int(n as i64));
        }
        return Err((
            NodeKind::Protocol,
            format!("a non-integer number in a reply: {n}"),
        ));
    }
    if v.is_bigint() {
        return i64::try_from(js_sys::BigInt::unchecked_from_js_ref(v).clone())
            .map(Reply::Int)
            .map_err(|_| {
                (
                    NodeKind::Protocol,
                    "an integer reply beyond 64 bits".to_owned(),
                )
            });
    }
    if let Some(s) = v.as_string() {
        return Ok(Reply::Status(s.into()));
    }
    if let Some(bytes) = v.dyn_ref::<Uint8Array>() {
        return Ok(Reply::Data(bytes.to_vec()));
    }
    if Array::is_array(v) {
        return Array::from(v)
            .iter()
            .map(|x| reply_of(&x))
            .collect::<Result<Vec<_>, _>>()
            .map(Reply::Array);
    }
    Err((
        NodeKind::Protocol,
        format!(
            "unexpected reply type: {}",
            v.js_typeof().as_string().unwrap_or_default()
        ),
    ))
}

/// A rejection as a node failure: a Redis error reply (`replyError`) by its code, a transport
/// failure by its `kind` (a node kind's name; `ConnectionLost` when absent).
pub fn failure_of(e: &JsValue) -> Failure {
    let text = text_of(e);
    if get(e, "replyError").is_truthy() {
        let code = text.split_whitespace().next().unwrap_or("");
        return (error_kind(code, &text), text);
    }
    let kind = get(e, "kind")
        .as_string()
        .and_then(|k| {
            NodeKind::ALL
                .iter()
                .copied()
                .find(|n| n.as_str() == k && n.is_error() && *n != NodeKind::Pending)
        })
        .unwrap_or(NodeKind::ConnectionLost);
    (kind, text)
}

/// Text as a reply carries it (a status, bytes), for INFO and CONFIG.
pub fn reply_text(r: &Reply) -> Option<String> {
    match r {
        Reply::Status(s) => Some(s.to_string()),
        Reply::Data(d) => Some(String::from_utf8_lossy(d).into_owned()),
        _ => None,
    }
}

fn category_name(c: NodeCategory) -> &'static str {
    match c {
        NodeCategory::Vote => "Vote",
        NodeCategory::Timeout => "Timeout",
        NodeCategory::Connection => "Connection",
        NodeCategory::Auth => "Auth",
        NodeCategory::Script => "Script",
        NodeCategory::Misconfigured => "Misconfigured",
        NodeCategory::Quarantined => "Quarantined",
        NodeCategory::Server => "Server",
        _ => "Other",
    }
}

/// A report as an array of `{ index, address, latencyUs?, kind, category, detail? }`.
pub fn report_js(r: &Report) -> Array {
    r.nodes()
        .iter()
        .map(|n| {
            let o = Object::new();
            set(&o, "index", n.index as f64);
            set(
                &o,
                "address",
                text_js(n.address.as_bytes(), true).unwrap_or(JsValue::UNDEFINED),
            );
            if let Some(l) = n.latency {
                set(&o, "latencyUs", l.as_micros() as f64);
            }
            set(&o, "kind", key(n.kind.as_str()));
            set(&o, "category", key(category_name(n.kind.category())));
            if let Some(d) = &n.detail {
                set(&o, "detail", d.as_str());
            }
            JsValue::from(o)
        })
        .collect()
}

/// An error as `{ qlError: true, code, message, attempts, validityMs, lostReason, nodes,
/// attemptReports }`; the package turns it into a `QuorumlockError`.
pub fn error_js(e: &Error) -> JsValue {
    let o = Object::new();
    set(&o, "qlError", true);
    set(&o, "code", e.kind().as_str());
    set(&o, "message", e.to_string());
    set(&o, "attempts", f64::from(e.attempts()));
    set(
        &o,
        "validityMs",
        e.validity_us()
            .map_or(JsValue::NULL, |us| JsValue::from_f64(us as f64 / 1000.0)),
    );
    set(
        &o,
        "lostReason",
        e.lost_reason()
            .map_or(JsValue::NULL, |r| JsValue::from_str(r.as_str())),
    );
    set(&o, "nodes", report_js(e.report()));
    let history: Array = e
        .attempt_reports()
        .iter()
        .map(|r| JsValue::from(report_js(r)))
        .collect();
    set(&o, "attemptReports", history);
    o.into()
}

/// A release report's counts as `{ releasedCount, wasHeldByQuorum }` (its nodes are made
/// only when read: `LockHandle::release_nodes`).
pub fn release_js(r: &Report) -> JsValue {
    let o = Object::new();
    set(&o, "releasedCount", r.released_count() as f64);
    set(&o, "wasHeldByQuorum", r.was_held_by_quorum());
    o.into()
}

/// Reads field `key` of an options object (`None` when absent or `undefined`).
pub fn field(o: &JsValue, name: &'static str) -> Option<JsValue> {
    let v = get(o, name);
    (!v.is_undefined()).then_some(v)
}
