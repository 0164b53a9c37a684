//! The driver of `quorumlock_proto::acquisition::Acquisition` over the host's promises: it
//! writes each round's requests before reading any reply, feeds the machine replies, timer
//! ends, cleanup ends, release notices and the caller's abort, and returns its grant. Waits
//! between attempts are the retry delay with jitter; when the transport has pub/sub, the
//! first wait subscribes to the keys' release channels (`Output::Listen`), checks once with
//! `EXISTS` that the keys were not released before the subscription was live, and a notice
//! from a quorum of nodes cuts the wait short (REDLOCK.md §9). For braced keys the call
//! also stands in the keys' lines ([`Waiter`]) and hears releases that name it; for one
//! unfenced braced key it registers for grants ([`Grants`]): a release that pops it sets the
//! key to its registered value, and a quorum of such grants between attempts wins the call
//! without an attempt of its own.

use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::Poll;

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use quorumlock_proto::acquire::vacant;
use quorumlock_proto::acquisition::{Acquisition, Grant, Output, Request};
use quorumlock_proto::command;
use quorumlock_proto::config::LockOptions;
use quorumlock_proto::error::Result;
use quorumlock_proto::fencing;
use quorumlock_proto::grants::{End, Grants, Step};
use quorumlock_proto::line::{Line, bit};
use quorumlock_proto::quorum::{Decide, quorum};
use quorumlock_proto::report::NodeKind;
use quorumlock_proto::round::Answer;
use wasm_bindgen::JsValue;

use crate::engine::{Inner, Local, Traffic};
use crate::js::{Aborted, Crypto, Listener, Sleep, now_us};
use crate::waiter::Waiter;

type Reply = (u64, usize, Answer, Option<Vec<u64>>);
/// Reads one reply of a round over `n` keys: the answer and any fencing counters.
type Read = fn(&command::Reply, usize) -> (Answer, Option<Vec<u64>>);

enum Event {
    Reply(Reply),
    Timer,
    Cleaned,
    Listened(Option<Listener>, bool),
    Released,
    Cancelled,
}

/// Runs one acquire call: the machine's result, once every cleanup it started has ended
/// when the caller aborted.
pub async fn acquire(
    inner: &Rc<Inner>,
    keys: Arc<[Vec<u8>]>,
    opts: LockOptions,
    signal: JsValue,
) -> Result<Grant> {
    let mut m = Acquisition::new(inner.members.clone(), opts, &inner.s.timing, now_us())?;
    let fenced = m.options().get_fenced();
    let all_keys: Arc<[Vec<u8>]> = if fenced {
        fencing::with_counters(&keys).into()
    } else {
        keys.clone()
    };
    let counter_ttl_ms = m
        .options()
        .get_fence_counter_ttl()
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    let ttl_ms = m.ttl_ms();
    let timeout = m.node_timeout();
    let mut line = Line::new(m.options(), timeout, keys.len(), inner.n());
    // A place in the keys' lines only where releases wake waiters in line (braced keys,
    // notification on), taken at the first wait: most calls never wait.
    let mut waiter: Option<Rc<Waiter>> = None;
    let mut abort = Aborted::new(signal);
    if abort.is_aborted() {
        return Err(m.cancel().error);
    }
    let mut inflight: FuturesUnordered<Local<Reply>> = FuturesUnordered::new();
    let mut cleanup: Option<Local<()>> = None;
    let mut timer: Option<(u64, Sleep)> = None;
    let mut listening: Option<Local<(Option<Listener>, bool)>> = None;
    let mut listener: Option<Listener> = None;
    let mut grants = Grants::new();
    let n = inner.n();
    loop {
        // Grants heard while no attempt is in flight: a quorum wins the call; with too little
        // validity left they go back, and the call attempts at once.
        if let Some(l) = &listener {
            let now = now_us();
            if grants.check(&mut m, l.granted(), n, now) == Step::Again {
                register_again(&mut grants, waiter.as_deref(), l, &mut line, ttl_ms);
                m.handle_vacant(now);
            }
        }
        while let Some(out) = m.poll_output(now_us(), &mut Crypto) {
            match out {
                Output::Attempt { .. } => {
                    // Notices from before this attempt are answered by it.
                    let named = listener.as_ref().is_some_and(Listener::reset);
                    // Grants short of a quorum go back first; the call registers again,
                    // first in line.
                    if let Some(l) = &listener
                        && grants.before_attempt(l.granted())
                    {
                        register_again(&mut grants, waiter.as_deref(), l, &mut line, ttl_ms);
                    }
                    line.attempt(now_us(), listener.is_some(), named);
                }
                Output::Listen => {
                    if inner.s.notify {
                        waiter = Waiter::new(inner, &keys, line.ttl_ms());
                        // The first marks register a fresh value for grants, where eligible.
                        let reg = waiter
                            .as_ref()
                            .filter(|_| Grants::eligible(&keys, m.options(), false))
                            .and_then(|w| {
                                let r = grants.register(now_us(), &mut Crypto).ok()?;
                                Some((w.registering(r, ttl_ms, false)?, r.number))
                            });
                        listening = Some(listen(inner, &keys, waiter.clone(), reg, timeout));
                        if waiter.is_some() {
                            line.join(now_us());
                        }
                    }
                }
                Output::Send {
                    round,
                    node,
                    request,
                } => {
                    let traffic = if fenced {
                        Traffic::Fenced
                    } else {
                        Traffic::Lock
                    };
                    let n = all_keys.len();
                    let (cmd, read): (_, Read) = match &request {
                        Request::Acquire { value } => {
                            (command::acquire(&keys, value, ttl_ms), |r, _| {
                                (command::read_acquire(r), None)
                            })
                        }
                        Request::FencedAcquire { value } => (
                            command::fenced_acquire(&all_keys, value, ttl_ms, counter_ttl_ms),
                            |r, n| match command::read_fenced_acquire(r, n) {
                                Ok(Some(c)) => (Ok(NodeKind::Ok), Some(c)),
                                Ok(None) => (Ok(NodeKind::HeldByOther), None),
                                Err(f) => (Err(f), None),
                            },
                        ),
                        Request::Raise { value, tokens } => (
                            command::raise(&all_keys, value, tokens, counter_ttl_ms),
                            |r, _| (command::read_raise(r), None),
                        ),
                    };
                    // While subscribed, an attempt first renews the marks of the keys' waiter
                    // flags when they could lapse before the next one (REDLOCK.md §9).
                    if let Some(w) = &waiter
                        && line.sends_marks(node, matches!(request, Request::Raise { .. }))
                    {
                        w.mark(bit(node), false, traffic);
                    }
                    let sent = inner.request(node, &cmd, traffic);
                    inflight.push(Box::pin(async move {
                        let (answer, counters) = match sent.await {
                            Ok(r) => read(&r, n),
                            Err(f) => (Err(f), None),
                        };
                        (round, node, answer, counters)
                    }));
                }
                Output::Clean { nodes, value } => {
                    cleanup = Some(start_cleanup(inner, nodes, &keys, &value, timeout));
                }
                Output::Done(result) => {
                    if let Ok(g) = &result {
                        grants.won_with(&g.value);
                    }
                    leave(&mut grants, waiter.as_deref(), &mut line, &listener);
                    return result;
                }
            }
        }
        if line.woken() && cleanup.is_none() && m.wants_release_notice() {
            // Popped from the lines by the release its attempt lost, and its cleanup (whose
            // release pops the first in line) ended: first in line again where it was popped.
            let r = line.requeue(now_us(), popped(&listener));
            if let Some(w) = &waiter {
                w.mark(r.popped, r.front, Traffic::Any);
                w.mark(r.renew, false, Traffic::Any);
            }
        }
        let deadline = m.poll_timeout();
        if timer.as_ref().map(|(at, _)| *at) != deadline {
            timer = deadline.map(|at| (at, Sleep::until(at, false)));
        }
        let event = std::future::poll_fn(|cx| {
            if let Poll::Ready(Some(r)) = inflight.poll_next_unpin(cx) {
                return Poll::Ready(Event::Reply(r));
            }
            if let Some(c) = cleanup.as_mut()
                && c.as_mut().poll(cx).is_ready()
            {
                return Poll::Ready(Event::Cleaned);
            }
            if let Some(f) = listening.as_mut()
                && let Poll::Ready((l, vacant)) = f.as_mut().poll(cx)
            {
                return Poll::Ready(Event::Listened(l, vacant));
            }
            if let Some(l) = &listener
                && m.wants_release_notice()
                && l.poll_released(cx).is_ready()
            {
                return Poll::Ready(Event::Released);
            }
            if let Some((_, t)) = timer.as_mut()
                && Pin::new(t).poll(cx).is_ready()
            {
                return Poll::Ready(Event::Timer);
            }
            if Pin::new(&mut abort).poll(cx).is_ready() {
                return Poll::Ready(Event::Cancelled);
            }
            Poll::Pending
        })
        .await;
        let now = now_us();
        match event {
            Event::Reply((round, node, answer, counters)) => {
                m.handle_batch(round, vec![(node, answer, counters)], now);
            }
            Event::Timer => {
                timer = None;
                m.handle_timeout(now);
            }
            Event::Cleaned => {
                cleanup = None;
                m.handle_cleaned(now);
            }
            Event::Listened(l, vacant) => {
                listening = None;
                if l.is_none() {
                    // No subscription, so no marks were sent: nothing is registered.
                    grants.forget();
                }
                listener = l;
                if vacant {
                    m.handle_vacant(now);
                }
            }
            Event::Released => {
                m.handle_released(now);
            }
            Event::Cancelled => {
                // Out of the lines first: the cleanup's release then wakes the next waiter.
                leave(&mut grants, waiter.as_deref(), &mut line, &listener);
                let c = m.cancel();
                if let Some((nodes, value)) = c.clean {
                    // The caller may move on at once: it leaves no key behind.
                    start_cleanup(inner, nodes, &keys, &value, timeout).await;
                } else if let Some(c) = cleanup.take() {
                    c.await;
                }
                return Err(c.error);
            }
        }
    }
}

/// The call ends, won or not: it leaves the lines [`Line::leave`] names, or, registered for
/// grants, sends LEAVE: to every node with its value unless it won with it (a grant may
/// still be on its way), else without to the lines it still stands in.
fn leave(grants: &mut Grants, waiter: Option<&Waiter>, line: &mut Line, l: &Option<Listener>) {
    let end = grants.end();
    let Some(w) = waiter else {
        return;
    };
    match end {
        End::GiveBack(value) => {
            w.leave_registered(u64::MAX, Some(&value));
            line.leave(0);
        }
        End::Won => w.leave_registered(line.leave(popped(l)), None),
        End::Unregistered => w.leave(line.leave(popped(l))),
    }
}

/// Gives the keys granted so far back (LEAVE with the value, on every node, ahead of the
/// call's next request there) and registers anew with a fresh value, first in line on every
/// node.
fn register_again(
    grants: &mut Grants,
    waiter: Option<&Waiter>,
    listener: &Listener,
    line: &mut Line,
    ttl_ms: u64,
) {
    let (Some(w), Some(value)) = (waiter, grants.give_back()) else {
        return;
    };
    w.leave_registered(u64::MAX, Some(&value));
    let Ok(r) = grants.register(now_us(), &mut Crypto) else {
        return;
    };
    if let Some(mark) = w.registering(r, ttl_ms, true) {
        // Before the marks go out: a grant of the new registration may come at once.
        listener.expect_grants(r.number);
        w.send(u64::MAX, mark);
        line.remark(u64::MAX);
    }
}

/// Subscribes to the release channels of `keys` on every node (with a `waiter`, to this
/// client's named channels too, and marks its place in the lines: with `reg`, the registering
/// mark and its number), then checks with one `EXISTS` round whether a quorum no longer holds
/// them (a release that came before the subscription was live).
fn listen(
    inner: &Rc<Inner>,
    keys: &Arc<[Vec<u8>]>,
    waiter: Option<Rc<Waiter>>,
    reg: Option<(command::Command, u64)>,
    timeout: std::time::Duration,
) -> Local<(Option<Listener>, bool)> {
    let (inner, keys) = (inner.clone(), keys.clone());
    Box::pin(async move {
        let client = waiter.as_ref().map(|_| inner.client.as_slice());
        let channels = command::release_channels(&keys, client);
        let named = waiter.as_ref().map(|w| (inner.client.as_slice(), w.id()));
        let n = inner.n();
        let timeout_us = u64::try_from(timeout.as_micros()).unwrap_or(u64::MAX);
        let Some(l) =
            Listener::start(&inner.transport, n, &channels, named, quorum(n), timeout_us).await
        else {
            return (None, false);
        };
        // The marks go out before the check on each node: a release after them wakes the
        // first in line.
        if let Some(w) = &waiter {
            match reg {
                Some((mark, number)) => {
                    l.expect_grants(number);
                    w.send(u64::MAX, mark);
                }
                None => w.mark(u64::MAX, false, Traffic::Any),
            }
        }
        let round = inner
            .round(
                &inner.all(),
                Decide::All,
                timeout,
                Traffic::Any,
                &command::vacant(&keys),
                command::read_vacant,
            )
            .await;
        (Some(l), vacant(&round, n))
    })
}

/// The nodes whose releases popped this waiter from its line.
fn popped(listener: &Option<Listener>) -> u64 {
    listener.as_ref().map_or(0, Listener::popped)
}

/// Starts releasing `value` on `nodes` now; the future ends when every node answered or
/// timed out. The requests are written even if the future is never awaited.
fn start_cleanup(
    inner: &Rc<Inner>,
    nodes: Vec<usize>,
    keys: &Arc<[Vec<u8>]>,
    value: &str,
    timeout: std::time::Duration,
) -> Local<()> {
    let (inner, keys, value) = (inner.clone(), keys.clone(), value.to_owned());
    let mut fut: Local<()> = Box::pin(async move {
        let _ = inner.release_on(&nodes, &keys, &value, timeout).await;
    });
    // Poll once so that the requests are written now, behind the attempt's own requests.
    let waker = futures_util::task::noop_waker();
    let mut cx = std::task::Context::from_waker(&waker);
    if fut.as_mut().poll(&mut cx).is_ready() {
        return Box::pin(async {});
    }
    fut
}
