// quorumlock-edge: the public API over the WebAssembly engine (bindings/wasm). This file turns
// engine outcomes into values or QuorumlockErrors and adds AbortSignal, `lock.signal`,
// `using()` and `[Symbol.asyncDispose]`. The lock logic (votes, validity, retries, cleanup,
// extension, fencing, node checks) is the engine's; nothing here decides.

// The runtime's loader (package.json "imports": node, workerd, edge-light or web) runs first.
import '#init'
import { Engine, errorCodes, version, fenceCheckScript, notice, settle } from '../wasm/quorumlock_edge.js'
import { transportOf } from './transports.js'

export * as transports from './transports.js'

if (typeof Symbol.asyncDispose !== 'symbol') {
  Object.defineProperty(Symbol, 'asyncDispose', { value: Symbol.for('nodejs.asyncDispose') })
}

/** Every `QuorumlockError.code`: the engine's kinds in numeric order, then QL_INTERNAL. */
export const ERROR_CODES = Object.freeze([...errorCodes(), 'QL_INTERNAL'])

/** The package version. */
export const VERSION = version()

/** Lua source of the fence check for a protected resource kept in Redis. */
export const FENCE_CHECK_SCRIPT = fenceCheckScript()

function freezeNodes(nodes) {
  return Object.freeze((nodes ?? []).map((n) => Object.freeze({ ...n })))
}

/** A failed quorumlock operation: a stable `code` and the per-node report in `nodes`. */
export class QuorumlockError extends Error {
  constructor(detail) {
    super(detail.message)
    this.name = 'QuorumlockError'
    this.code = detail.code
    this.attempts = detail.attempts ?? 0
    this.validityMs = detail.validityMs ?? null
    this.lostReason = detail.lostReason ?? null
    this.nodes = freezeNodes(detail.nodes)
    this.attemptReports = Object.freeze((detail.attemptReports ?? []).map(freezeNodes))
  }
}

/** A Redis error reply (`ERR ...`, `NOSCRIPT ...`) from a custom transport's `send`. */
export class ReplyError extends Error {
  constructor(message) {
    super(message)
    this.name = 'ReplyError'
    this.replyError = true
  }
}

/**
 * A transport failure from a custom transport's `send`; `kind` is a node kind such as
 * `'ConnectionRefused'`, `'ConnectionLost'` (the default), `'NotConnected'`, `'Timeout'`,
 * `'Auth'`.
 */
export class TransportError extends Error {
  constructor(message, kind = 'ConnectionLost') {
    super(message)
    this.name = 'TransportError'
    this.kind = kind
  }
}

// Engine rejections are plain `{ qlError: true, ... }` objects; a trap of the WebAssembly
// module (a bug) becomes QL_INTERNAL.
function toError(e) {
  if (e instanceof QuorumlockError) return e
  if (e && e.qlError) return new QuorumlockError(e)
  return new QuorumlockError({
    code: 'QL_INTERNAL',
    message: `QL_INTERNAL: ${e && e.message ? e.message : String(e)}`,
    nodes: [],
  })
}

function call(fn) {
  try {
    return fn()
  } catch (e) {
    throw toError(e)
  }
}

async function wait(promise) {
  try {
    return await promise
  } catch (e) {
    throw toError(e)
  }
}

// The engine sends through `send(node, argv, id)` and learns the outcome from `settle(id,
// ok, value)`: one plain callback per request instead of a Promise wrapper on each side.
// Release notices (transports with `subscribe`) reach it through `notice(listener, node,
// channel, message)`.
function hostOf(transport) {
  const subscriptions = new Map()
  const canListen = typeof transport.subscribe === 'function'
  return {
    addresses: transport.addresses,
    listen(node, channels, listener, ack) {
      if (!canListen) return false
      let live
      try {
        live = Promise.resolve(
          transport.subscribe(node, channels, (channel, message) => notice(listener, node, channel, message)),
        )
      } catch (e) {
        live = Promise.reject(e)
      }
      let list = subscriptions.get(listener)
      if (!list) subscriptions.set(listener, (list = []))
      list.push(live)
      live.then(() => settle(ack, true, true), (e) => settle(ack, false, e))
      return true
    },
    unlisten(listener) {
      const list = subscriptions.get(listener)
      if (!list) return
      subscriptions.delete(listener)
      for (const live of list) {
        live.then((unsubscribe) => (typeof unsubscribe === 'function' ? unsubscribe() : undefined)).catch(() => {})
      }
    },
    send(node, argv, id) {
      let reply
      try {
        reply = transport.send(node, argv)
      } catch (e) {
        reply = Promise.reject(e)
      }
      Promise.resolve(reply).then(
        (value) => settle(id, true, value),
        (error) => settle(id, false, error),
      )
    },
  }
}

function emitWarning(code, node, message) {
  if (typeof process !== 'undefined' && typeof process.emitWarning === 'function') {
    process.emitWarning(message, { type: 'QuorumlockWarning', code })
  } else if (typeof console !== 'undefined') {
    console.warn(`QuorumlockWarning ${code}: ${message}`)
  }
}

/** A held lock. Release it with `release()`, `await using`, or `client.using()`. */
export class Lock {
  #handle
  #controller
  #resources
  #tokens
  #forget

  /** @internal */
  constructor(handle, controller, resources, forget) {
    this.#handle = handle
    this.#forget = forget
    this.#controller = controller
    this.#resources = Object.freeze([...resources])
    const t = handle.tokens
    this.#tokens = t ? Object.freeze(t.map((s) => BigInt(s))) : null
  }

  /** The resources as given to acquire(). */
  get resources() { return this.#resources }
  /** The random value (40 hex characters) stored in the keys. */
  get value() { return this.#handle.value }
  /** The fencing token of the first resource in sorted order; null when not fenced. */
  get token() { return this.#tokens ? this.#tokens[0] : null }
  /** The fencing tokens, one per resource in sorted order; null when not fenced. */
  get tokens() { return this.#tokens ? [...this.#tokens] : null }
  /** The TTL the lock was acquired with. */
  get ttlMs() { return this.#handle.ttlMs }
  /** Attempts the acquisition took. */
  get attempts() { return this.#handle.attempts }
  /** Validity left now in whole milliseconds; 0 once expired, lost or released. */
  get remainingMs() { return this.#handle.remainingMs }
  /** True while held and within validity. */
  get isHeld() { return this.#handle.remainingMs > 0 }
  /** Successful extensions so far. */
  get extensions() { return this.#handle.extensions }
  /** True while the automatic extension runs. */
  get autoExtending() { return this.#handle.autoExtending }
  /** The per-node report of the successful attempt. */
  get nodes() { return freezeNodes(this.#handle.nodes) }
  /** The per-node report of every attempt, oldest first. */
  get attemptReports() { return Object.freeze(this.#handle.attemptReports.map(freezeNodes)) }
  /** The per-node report of the last successful extend; null before the first. */
  get extendNodes() {
    const n = this.#handle.extendNodes
    return n ? freezeNodes(n) : null
  }
  /** Aborts with a QL_LOST QuorumlockError when the lock is lost; never after a release. */
  get signal() { return this.#controller.signal }

  /** The QL_LOST error if the lock is lost now, else null. */
  lostError() {
    const e = this.#handle.lostError()
    return e ? toError(e) : null
  }

  /** Starts or stops the automatic extension. */
  setAutoExtend(on) {
    call(() => this.#handle.setAutoExtend(on === true))
  }

  /** Extends the lock to `ttlMs` (default: its TTL) from now. */
  async extend(ttlMs) {
    await wait(this.#handle.extend(ttlMs))
    return this
  }

  /** Releases the lock on every node; idempotent. */
  async release() {
    const r = await wait(this.#handle.release())
    this.#forget(this)
    // The per-node report crosses from the engine only when read.
    const handle = this.#handle
    let nodes
    return Object.freeze({
      ...r,
      get nodes() {
        nodes ??= freezeNodes(handle.releaseNodes())
        return nodes
      },
    })
  }

  async [Symbol.asyncDispose]() {
    await this.release()
  }
}

function splitUsing(options, fn) {
  if (typeof options === 'function') return [{}, options]
  return [options ?? {}, fn]
}

/** A Redlock client over N independent Redis masters reached through a transport. */
export class Client {
  #engine
  #ready
  #transport
  #locks = new Set()

  /**
   * Checks the options at once and starts probing the nodes. `options.nodes` lists clients
   * (ioredis, node-redis, `{ url, token }` for Upstash REST) or `options.transport` is a
   * transport (see `transports`).
   */
  constructor(options) {
    if (options === null || typeof options !== 'object' || Array.isArray(options)) {
      throw new QuorumlockError({ code: 'QL_INVALID', message: 'QL_INVALID: the client options must be an object', nodes: [] })
    }
    const transport = call(() => transportOf(options, QuorumlockError))
    // Only a transport the package built from `nodes` is closed with the client.
    this.#transport = options.transport === undefined ? transport : null
    const onWarning = typeof options.onWarning === 'function' ? options.onWarning : emitWarning
    this.#engine = call(() => new Engine(options, hostOf(transport), onWarning))
    this.#ready = wait(this.#engine.connect())
    this.#ready.catch(() => {})
  }

  /** Creates a client and waits for the first probe of every node. */
  static async connect(options) {
    const c = new Client(options)
    await c.#ready
    return c
  }

  /** Number of configured nodes N. */
  get nodeCount() { return this.#engine.nodeCount }
  /** The quorum N / 2 + 1. */
  get quorum() { return this.#engine.quorum }
  /** Node addresses. */
  get addresses() { return this.#engine.addresses }

  /** The Redis key of a resource. */
  key(resource) {
    return call(() => this.#engine.key(resource))
  }

  /** Acquires a lock on one or more resources (all or nothing). */
  async acquire(resources, options = {}) {
    const signal = options && typeof options === 'object' ? options.signal : undefined
    if (signal !== undefined && signal !== null && typeof signal.aborted !== 'boolean') {
      throw new QuorumlockError({ code: 'QL_INVALID', message: 'QL_INVALID: signal must be an AbortSignal', nodes: [] })
    }
    let lockOptions = options
    if (options && typeof options === 'object') {
      const { signal: _signal, ...rest } = options
      lockOptions = Object.keys(rest).length > 0 ? rest : undefined
    }
    const controller = new AbortController()
    const onLost = (e) => controller.abort(toError(e))
    const handle = await wait(this.#engine.acquire(resources, lockOptions, signal, onLost))
    const forget = (l) => this.#locks.delete(l)
    const lock = new Lock(handle, controller, Array.isArray(resources) ? resources : [resources], forget)
    this.#locks.add(lock)
    return lock
  }

  /** Acquires with auto-extension, runs `fn`, releases; rejects with QL_LOST if the lock was lost. */
  async using(resources, options, fn) {
    const [opts, body] = splitUsing(options, fn)
    if (typeof body !== 'function') {
      throw new QuorumlockError({ code: 'QL_INVALID', message: 'QL_INVALID: using() needs a function', nodes: [] })
    }
    const lock = await this.acquire(resources, { autoExtend: true, ...opts })
    let result
    try {
      result = await body(lock)
    } finally {
      const lost = lock.lostError()
      await lock.release()
      if (lost) throw lost
    }
    return result
  }

  /**
   * Releases every lock of this client still held, refuses new acquisitions, and closes the
   * connections the package opened for release notices.
   */
  async close() {
    this.#engine.close()
    const locks = [...this.#locks]
    this.#locks.clear()
    await Promise.all(locks.map((l) => l.release().catch(() => {})))
    // The package's own notice connections (lingering after the last wait) end now.
    await this.#transport?.close?.()
  }

  async [Symbol.asyncDispose]() {
    await this.close()
  }
}
