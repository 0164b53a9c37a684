//! # quorumlock-edge (WebAssembly)
//!
//! A driver of `quorumlock-proto` for JavaScript runtimes that cannot load a native addon
//! (Cloudflare Workers, Vercel Edge, Deno, Bun, browsers, Node). The protocol decides;
//! this crate sequences its steps over the host's promises: requests go through a
//! JavaScript transport (`send(node, argv)`), time is `performance.now()`, randomness
//! `crypto.getRandomValues`, timers `setTimeout`. The npm package `quorumlock-edge`
//! (`edge/`) wraps it; JavaScript there does argument plumbing and I/O only.
//!
//! Everything is compiled for `wasm32` only; on other targets the crate is empty.
#![cfg(target_arch = "wasm32")]

mod acquire;
mod engine;
mod js;
mod lock;
mod options;
mod waiter;

use std::rc::Rc;
use std::sync::Arc;

use js_sys::{Array, Function, Promise, Uint8Array};
use quorumlock_proto::config::normalize_resources;
use quorumlock_proto::error::{Error, ErrorKind, Result};
use quorumlock_proto::quorum::quorum;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

use crate::engine::Inner;
use crate::js::{Transport, error_js};
pub use crate::lock::LockHandle;

/// The codes of every error kind, in numeric order.
#[wasm_bindgen(js_name = errorCodes)]
pub fn error_codes() -> Vec<String> {
    ErrorKind::ALL
        .iter()
        .map(|k| k.as_str().to_owned())
        .collect()
}

/// The crate version.
#[wasm_bindgen]
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").to_owned()
}

/// The Lua source of the fence check for protected resources kept in Redis.
#[wasm_bindgen(js_name = fenceCheckScript)]
pub fn fence_check_script() -> String {
    quorumlock_proto::scripts::FENCE_CHECK.to_owned()
}

fn resource_list(resources: &JsValue) -> Result<Vec<Vec<u8>>> {
    let one = |v: JsValue| -> Result<Vec<u8>> {
        if let Some(s) = v.as_string() {
            Ok(s.into_bytes())
        } else if let Some(b) = v.dyn_ref::<Uint8Array>() {
            Ok(b.to_vec())
        } else {
            Err(Error::invalid(
                "a resource must be a string or a Uint8Array",
            ))
        }
    };
    let list = if Array::is_array(resources) {
        Array::from(resources)
            .iter()
            .map(one)
            .collect::<Result<Vec<_>>>()?
    } else {
        vec![one(resources.clone())?]
    };
    normalize_resources(list)
}

/// A client over N nodes reached through a transport.
#[wasm_bindgen]
pub struct Engine {
    inner: Rc<Inner>,
}

#[wasm_bindgen]
impl Engine {
    /// Checks `options` (the native package's names) and the transport; sends nothing.
    /// `on_warning(code, node, message)` receives each warning once per kind and node.
    #[wasm_bindgen(constructor)]
    pub fn new(
        options: JsValue,
        transport: Transport,
        on_warning: Option<Function>,
    ) -> std::result::Result<Engine, JsValue> {
        let build = || -> Result<Engine> {
            let s = options::settings(&options)?;
            let addresses = transport.node_addresses()?;
            if addresses.is_empty() {
                return Err(Error::invalid("at least one node is required"));
            }
            Ok(Engine {
                inner: Rc::new(Inner::new(transport, addresses, s, on_warning)),
            })
        };
        build().map_err(|e| error_js(&e))
    }

    /// Probes every node; rejects (with `requireQuorum`) when fewer than a quorum are usable.
    pub fn connect(&self) -> Promise {
        let inner = self.inner.clone();
        future_to_promise(async move {
            inner
                .connect()
                .await
                .map(|()| JsValue::UNDEFINED)
                .map_err(|e| error_js(&e))
        })
    }

    /// Number of nodes N.
    #[wasm_bindgen(getter, js_name = nodeCount)]
    pub fn node_count(&self) -> u32 {
        u32::try_from(self.inner.n()).unwrap_or(u32::MAX)
    }

    /// The quorum N / 2 + 1.
    #[wasm_bindgen(getter)]
    pub fn quorum(&self) -> u32 {
        u32::try_from(quorum(self.inner.n())).unwrap_or(u32::MAX)
    }

    /// The node addresses.
    #[wasm_bindgen(getter)]
    pub fn addresses(&self) -> Vec<String> {
        self.inner
            .members
            .iter()
            .map(|m| m.address.clone())
            .collect()
    }

    /// The Redis key of a resource.
    pub fn key(&self, resource: JsValue) -> std::result::Result<Uint8Array, JsValue> {
        let r = resource_list(&resource).map_err(|e| error_js(&e))?;
        let key = r.first().map(|r| self.inner.key(r)).unwrap_or_default();
        Ok(Uint8Array::from(key.as_slice()))
    }

    /// Acquires `resources` (a name or an array of names) with `options` over the client's
    /// defaults; `signal` (an AbortSignal) cancels; `on_lost(error)` is called once if the
    /// lock is lost while held. Resolves to a [`LockHandle`].
    pub fn acquire(
        &self,
        resources: JsValue,
        options: JsValue,
        signal: JsValue,
        on_lost: Option<Function>,
    ) -> Promise {
        let inner = self.inner.clone();
        future_to_promise(async move {
            let run = async {
                if inner.closed.get() {
                    return Err(Error::invalid("the client is closed"));
                }
                let resources = resource_list(&resources)?;
                let opts = options::lock_options(&options, inner.s.defaults.clone())?;
                let keys: Arc<[Vec<u8>]> = resources.iter().map(|r| inner.key(r)).collect();
                let grant = acquire::acquire(&inner, keys.clone(), opts.clone(), signal).await?;
                Ok(LockHandle::new(inner.clone(), keys, opts, grant, on_lost))
            };
            run.await.map(JsValue::from).map_err(|e| error_js(&e))
        })
    }

    /// Refuses new acquisitions.
    pub fn close(&self) {
        self.inner.closed.set(true);
    }
}
