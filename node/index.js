'use strict'
// quorumlock: Redlock distributed locks over N independent Redis masters, one engine in Rust.
// This file checks argument types (TypeError; the engine checks values: RangeError), turns
// native `{ value } | { error }` outcomes into values or QuorumlockErrors, and adds
// AbortSignal, `lock.signal`, `using()` and `[Symbol.asyncDispose]`. It holds no lock logic.

const native = (() => {
  try {
    return require('./native.js')
  } catch (e) {
    // No prebuilt addon for this platform (or the optional dependency was skipped): say how
    // to build it from source, then rethrow napi's error with its causes.
    if (e instanceof Error && e.message.startsWith('Cannot find native binding')) {
      e.message +=
        ' quorumlock ships its addon for Linux x64 (glibc) in the optional dependency ' +
        `quorumlock-linux-x64-gnu; for ${process.platform}-${process.arch} without it, build it from a checkout ` +
        'with Rust 1.88+: `cd node && npm ci && npm run build`, then `npm install path/to/node`.'
    }
    throw e
  }
})()

// Node 20.4+ defines Symbol.asyncDispose; older runtimes get the registered symbol that
// Node and TypeScript's downlevel helpers use.
if (typeof Symbol.asyncDispose !== 'symbol') {
  Object.defineProperty(Symbol, 'asyncDispose', { value: Symbol.for('nodejs.asyncDispose') })
}

/** Every `QuorumlockError.code`, one per core error kind (in numeric order) plus QL_INTERNAL. */
const ERROR_CODES = Object.freeze([...native.errorKinds().map((k) => k.code), 'QL_INTERNAL'])

/** A failed quorumlock operation: a stable `code` and the per-node report in `nodes`. */
class QuorumlockError extends Error {
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

function freezeNodes(nodes) {
  return Object.freeze((nodes ?? []).map((n) => Object.freeze({ ...n })))
}

function coded(code, message) {
  return new QuorumlockError({ code, message: `${code}: ${message}`, attempts: 0, nodes: [] })
}

function unwrap(outcome) {
  if (outcome.error) throw new QuorumlockError(outcome.error)
  return outcome.value
}

// ---- argument checks -------------------------------------------------------------------
// The options come from the engine's table (docs/options.md): this file checks each value's
// type by its unit, the engine converts and checks the value (parseOptions), and a value out
// of range becomes a RangeError carrying the engine's message and code QL_INVALID.

const MAX_COUNT = 4294967295

function checkMs(name, v) {
  if (typeof v !== 'number') {
    throw new TypeError(`${name} must be a number of milliseconds (got ${typeof v})`)
  }
  return v
}

function checkBool(name, v) {
  if (typeof v !== 'boolean') throw new TypeError(`${name} must be a boolean (got ${typeof v})`)
  return v
}

/** The native form of one option after checking its type: `{ name, number | flag | text }`. */
function optionValue(spec, v) {
  switch (spec.unit) {
    case 'duration':
      return { name: spec.name, number: checkMs(spec.key, v) }
    case 'count':
    case 'number':
      if (typeof v !== 'number') throw new TypeError(`${spec.key} must be a number (got ${typeof v})`)
      // Infinity is JavaScript's spelling of "no limit" for counts.
      return { name: spec.name, number: spec.unit === 'count' && v === Infinity ? MAX_COUNT : v }
    case 'flag':
      return { name: spec.name, flag: checkBool(spec.key, v) }
    default:
      if (typeof v !== 'string') throw new TypeError(`${spec.key} must be a string (got ${typeof v})`)
      return { name: spec.name, text: v }
  }
}

function table(scope) {
  return Object.freeze(Object.fromEntries(native.optionSpecs().filter((s) => s.scope === scope).map((s) => [s.key, s])))
}

const LOCK_OPTIONS = table('lock')
const CLIENT_OPTIONS = table('client')

/** The engine's checked options for a list of `optionValue`s; a RangeError for a value out of range. */
function nativeOptions(list) {
  const outcome = native.parseOptions(list)
  if (outcome.error != null) {
    const e = new RangeError(outcome.error)
    e.code = 'QL_INVALID'
    throw e
  }
  return outcome.value
}

function checkObject(name, v) {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) {
    throw new TypeError(`${name} must be an object (got ${v === null ? 'null' : typeof v})`)
  }
  return v
}

/** Picks the keys of `table` from `options` and checks their types; returns [list, rest]. */
function pick(table, options) {
  const list = []
  const rest = {}
  for (const [key, value] of Object.entries(options)) {
    if (value === undefined) continue
    if (Object.hasOwn(table, key)) list.push(optionValue(table[key], value))
    else rest[key] = value
  }
  return [list, rest]
}

function refuseUnknown(rest, what) {
  const keys = Object.keys(rest)
  if (keys.length > 0) {
    throw new TypeError(`unknown ${what} option(s): ${keys.join(', ')} (durations end in Ms, e.g. ttlMs)`)
  }
}

let noLockOptions = null

function lockOptions(options) {
  const [list, rest] = pick(LOCK_OPTIONS, checkObject('options', options))
  const { signal, ...unknown } = rest
  refuseUnknown(unknown, 'lock')
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new TypeError('signal must be an AbortSignal')
  }
  // No per-call option (the common case): the client's own options apply, and one checked
  // empty set serves every such call instead of a native parse per call.
  if (list.length === 0) return [(noLockOptions ??= nativeOptions([])), signal]
  return [nativeOptions(list), signal]
}

function clientOptions(options) {
  const opts = Array.isArray(options) ? { nodes: options } : checkObject('options', options)
  const { nodes } = opts
  if (!Array.isArray(nodes) || !nodes.every((n) => typeof n === 'string')) {
    throw new TypeError('nodes must be an array of node URLs (redis://host:port)')
  }
  for (const spec of Object.values(LOCK_OPTIONS)) {
    if (spec.perCall && opts[spec.key] !== undefined) {
      throw new TypeError(`${spec.key} is a lock option (acquire), not a client option`)
    }
  }
  const [client, rest] = pick(CLIENT_OPTIONS, opts)
  const [lock, unknown] = pick(LOCK_OPTIONS, rest)
  delete unknown.nodes
  refuseUnknown(unknown, 'client')
  return { nodes: [...nodes], options: nativeOptions([...client, ...lock]) }
}

function toResources(resources) {
  const list = typeof resources === 'string' || resources instanceof Uint8Array ? [resources] : resources
  if (!Array.isArray(list)) {
    throw new TypeError('resources must be a string, a Buffer, or an array of them')
  }
  const buffers = list.map((r) => {
    if (typeof r === 'string') return Buffer.from(r, 'utf8')
    if (r instanceof Uint8Array) return Buffer.from(r)
    throw new TypeError(`every resource must be a string or a Buffer (got ${r === null ? 'null' : typeof r})`)
  })
  return { buffers, names: Object.freeze([...list]) }
}

// ---- metrics ------------------------------------------------------------------------------

/** Upper bounds of the latency buckets in microseconds; a last bucket holds the rest. */
const LATENCY_BOUNDS_US = Object.freeze(native.latencyBoundsUs())

function counts(entries) {
  return Object.freeze(Object.fromEntries(entries.map(({ name, count }) => [name, count])))
}

function histogram(h) {
  return Object.freeze({
    boundsUs: LATENCY_BOUNDS_US,
    counts: Object.freeze(h.counts),
    sumUs: h.sumUs,
    count: h.count,
    p50Ms: h.p50Ms ?? null,
    p90Ms: h.p90Ms ?? null,
    p99Ms: h.p99Ms ?? null,
  })
}

function opMetrics(m) {
  return Object.freeze({ ok: m.ok, failures: m.failures, failed: counts(m.failed), latency: histogram(m.latency) })
}

/** The native snapshot as frozen plain objects, with records keyed by code and node kind. */
function toMetrics(m) {
  return Object.freeze({
    acquireAttempts: m.acquireAttempts,
    acquire: opMetrics(m.acquire),
    extend: opMetrics(m.extend),
    release: opMetrics(m.release),
    lost: m.lost,
    wakeups: m.wakeups,
    nodes: Object.freeze(
      m.nodes.map((n) =>
        Object.freeze({
          index: n.index,
          address: n.address,
          replies: counts(n.replies),
          requests: n.requests,
          errors: n.errors,
          latency: histogram(n.latency),
        }),
      ),
    ),
  })
}

const warned = new Set()

/**
 * A client warning as a process warning (`process.on('warning')`, code `QL_W_...`), once per
 * process for each code and node address, however many clients see it.
 */
function emitWarning(w) {
  const key = `${w.code} ${w.address ?? ''}`
  if (warned.has(key)) return
  warned.add(key)
  const where = w.node == null ? '' : `node #${w.node} (${w.address}): `
  process.emitWarning(`${where}${w.message}`, { type: 'QuorumlockWarning', code: w.code })
}

// ---- Lock and Client ---------------------------------------------------------------------

const CREATE = Symbol('create')

let sharedNoCancel = null
/** The handle of every acquisition without an AbortSignal; never triggered. */
function neverCancelled() {
  sharedNoCancel ??= new native.CancelHandle()
  return sharedNoCancel
}

/** A held lock. Release it with `release()`, `await using`, or `client.using()`. */
class Lock {
  #native
  #resources
  #onRelease
  #controller = null

  constructor(token, nativeLock, resources, onRelease) {
    if (token !== CREATE) throw new TypeError('locks come from client.acquire()')
    this.#native = nativeLock
    this.#resources = resources
    this.#onRelease = onRelease
  }

  /** The resources as given to acquire(). */
  get resources() {
    return this.#resources
  }
  /** The random value (40 hex characters) stored in the keys. */
  get value() {
    return this.#native.value
  }
  /**
   * The fencing token (a bigint, of the first resource in sorted order) of a lock acquired
   * with `fenced: true`, strictly greater than every token returned before for that
   * resource; null when not fenced.
   */
  get token() {
    return this.#native.token ?? null
  }
  /** The fencing tokens (bigints), one per resource in sorted order; null when not fenced. */
  get tokens() {
    return this.#native.tokens ?? null
  }
  /** The TTL the lock was acquired with, in milliseconds. */
  get ttlMs() {
    return this.#native.ttlMs
  }
  /** Attempts the acquisition took. */
  get attempts() {
    return this.#native.attempts
  }
  /** Validity left now in whole milliseconds; 0 once expired, lost or released. */
  get remainingMs() {
    return this.#native.remainingMs
  }
  /** True while held and within validity. */
  get isHeld() {
    return this.#native.remainingMs > 0
  }
  /** Successful extensions so far. */
  get extensions() {
    return this.#native.extensions
  }
  /** True while the automatic extension runs. */
  get autoExtending() {
    return this.#native.autoExtending
  }
  /** The per-node report of the successful attempt. */
  get nodes() {
    return freezeNodes(this.#native.nodes)
  }
  /** The per-node report of every attempt of the acquisition, oldest first; the last is `nodes`. */
  get attemptReports() {
    return Object.freeze(this.#native.attemptReports.map(freezeNodes))
  }
  /** The per-node report of the last successful extend; null before the first. */
  get extendNodes() {
    const n = this.#native.extendNodes
    return n == null ? null : freezeNodes(n)
  }

  /** An AbortSignal that aborts with a QL_LOST QuorumlockError when the lock is lost. */
  get signal() {
    if (this.#controller === null) {
      const controller = new AbortController()
      this.#controller = controller
      const lost = this.#native.lostError()
      if (lost) {
        controller.abort(new QuorumlockError(lost))
      } else {
        const failed = this.#native.onLost((e) => controller.abort(new QuorumlockError(e)))
        if (failed) throw new QuorumlockError(failed)
      }
    }
    return this.#controller.signal
  }

  /** The QL_LOST error if the lock is lost now, else null. Never blocks. */
  lostError() {
    const lost = this.#native.lostError()
    return lost ? new QuorumlockError(lost) : null
  }

  /** Starts or stops the automatic extension (every ttl / 3 by default). */
  setAutoExtend(on) {
    const failed = this.#native.setAutoExtend(checkBool('on', on))
    if (failed) throw new QuorumlockError(failed)
  }

  /** Extends the lock to `ttlMs` (default: its TTL) from now; resolves to this lock. */
  async extend(ttlMs = this.ttlMs) {
    nativeOptions([optionValue(LOCK_OPTIONS.ttlMs, ttlMs)])
    unwrap(await this.#native.extend(ttlMs))
    return this
  }

  /** Releases the lock on every node; idempotent. Resolves to the per-node report. */
  async release() {
    const native = this.#native
    const { releasedCount, wasHeldByQuorum } = unwrap(await native.release())
    this.#onRelease(this)
    // The per-node entries become JavaScript objects only when read (about 2 µs per node of
    // the event loop's time): most callers look at the counts alone.
    let nodes = null
    return Object.freeze({
      releasedCount,
      wasHeldByQuorum,
      get nodes() {
        return (nodes ??= freezeNodes(native.releaseNodes()))
      },
    })
  }

  async [Symbol.asyncDispose]() {
    await this.release()
  }
}

/** A Redlock client over N independent Redis masters. */
class Client {
  #ready
  #native = null
  #locks = new Set()
  #closed = false

  /** Checks the options at once and starts connecting in the background. */
  constructor(options) {
    const { nodes, options: opts } = clientOptions(options)
    this.#ready = native.connect(nodes, opts, emitWarning).then((outcome) => {
      this.#native = unwrap(outcome)
      return this.#native
    })
    // A failure surfaces on the first acquire (or from Client.connect).
    this.#ready.catch(() => {})
  }

  /** Connects and resolves once the client is usable; rejects with a QuorumlockError. */
  static async connect(options) {
    const client = new Client(options)
    await client.#ready
    return client
  }

  #connected() {
    if (this.#native === null) throw coded('QL_INVALID', 'the client is not connected yet; use await Client.connect(...)')
    return this.#native
  }
  /** Number of configured nodes N. */
  get nodeCount() {
    return this.#connected().nodeCount
  }
  /** The quorum N / 2 + 1. */
  get quorum() {
    return this.#connected().quorum
  }
  /** Node addresses (host:port/db), in configuration order. */
  get addresses() {
    return this.#connected().addresses
  }
  /**
   * Pings every node and reads its settings (latency, version, uptime, persistence, eviction
   * policy, warnings); rejects with a QuorumlockError when fewer than a quorum answer.
   */
  async ping() {
    const client = await this.#ready
    return unwrap(await client.ping())
  }
  /** The Redis key of a resource. */
  key(resource) {
    if (typeof resource !== 'string' && !(resource instanceof Uint8Array)) {
      throw new TypeError(`resource must be a string or a Buffer (got ${resource === null ? 'null' : Array.isArray(resource) ? 'an array' : typeof resource})`)
    }
    return this.#connected().key(toResources(resource).buffers[0])
  }

  /**
   * A snapshot of the client's counters and latency histograms (frozen plain objects). No I/O;
   * counters only grow, so subtract two snapshots for a rate. Throws QL_INVALID before the
   * client is connected.
   */
  metrics() {
    return toMetrics(this.#connected().metrics())
  }
  /** The same snapshot in the Prometheus text exposition format (0.0.4), names `quorumlock_*`. */
  metricsPrometheus() {
    return this.#connected().metricsPrometheus()
  }

  /** Acquires a lock on one or more resources; `signal` cancels a pending acquisition. */
  async acquire(resources, options = {}) {
    const { buffers, names } = toResources(resources)
    const [opts, signal] = lockOptions(options)
    if (this.#closed) throw coded('QL_INVALID', 'the client is closed')
    if (signal?.aborted) throw coded('QL_CANCELLED', 'the signal was already aborted; nothing was sent')
    // Once connected, no extra turn of the microtask queue per call.
    const client = this.#native ?? (await this.#ready)
    // Without a signal nothing can trigger the handle: one shared handle saves a native
    // object (and its finalizer) per call.
    const cancel = signal ? new native.CancelHandle() : neverCancelled()
    const onAbort = () => cancel.trigger()
    signal?.addEventListener('abort', onAbort, { once: true })
    let outcome
    try {
      outcome = await client.acquire(buffers, opts, cancel)
    } finally {
      signal?.removeEventListener('abort', onAbort)
    }
    const lock = new Lock(CREATE, unwrap(outcome), names, (l) => this.#locks.delete(l))
    if (this.#closed) {
      await lock.release()
      throw coded('QL_INVALID', 'the client was closed during the acquisition; the lock was released')
    }
    this.#locks.add(lock)
    return lock
  }

  /**
   * Acquires with auto-extension, runs `fn(lock)`, and releases. Rejects with the QL_LOST
   * error if the lock was lost while `fn` ran; `lock.signal` aborts at that moment.
   */
  async using(resources, options, fn) {
    if (typeof options === 'function' && fn === undefined) return this.using(resources, {}, options)
    if (typeof fn !== 'function') throw new TypeError('using() needs a function: (lock) => ...')
    const lock = await this.acquire(resources, { autoExtend: true, ...checkObject('options', options ?? {}) })
    let result
    try {
      result = await fn(lock)
    } catch (e) {
      await lock.release()
      throw e
    }
    const lost = lock.lostError()
    await lock.release()
    if (lost) throw lost
    return result
  }

  /** Releases every lock of this client still held and refuses new acquisitions. */
  async close() {
    this.#closed = true
    await Promise.all([...this.#locks].map((l) => l.release()))
  }

  async [Symbol.asyncDispose]() {
    await this.close()
  }
}

module.exports = {
  Client,
  Lock,
  QuorumlockError,
  ERROR_CODES,
  VERSION: native.version(),
  FENCE_CHECK_SCRIPT: native.fenceCheckScript(),
  LATENCY_BOUNDS_US,
}
