'use strict'
// quorumlock/compat: the node-redlock v5 API over quorumlock's engine. It translates clients,
// settings, results and errors, and nothing else. ioredis is never a dependency: clients are
// read through their `.options` (host, port, db, username, password, tls, path).

const { EventEmitter } = require('node:events')
const { Client, QuorumlockError } = require('../index.js')

/** A node reported that another owner holds a resource (emitted on 'error'). */
class ResourceLockedError extends Error {
  constructor(message) {
    super(message)
    this.name = 'ResourceLockedError'
  }
}

/** An operation failed to reach a quorum within its retry window. */
class ExecutionError extends Error {
  constructor(message, attempts) {
    super(message)
    this.name = 'ExecutionError'
    this.attempts = attempts
  }
}

const defaultSettings = Object.freeze({
  driftFactor: 0.01,
  retryCount: 10,
  retryDelay: 200,
  retryJitter: 100,
  automaticExtensionThreshold: 500,
})

const QUORUM_CODES = new Set(['QL_BUSY', 'QL_QUORUM', 'QL_VALIDITY', 'QL_LOST', 'QL_EXT_LIMIT'])

function nodeUrl(client, i) {
  if (typeof client === 'string') return client
  if (client !== null && typeof client === 'object') {
    if (client.isCluster === true) {
      throw new QuorumlockError({
        code: 'QL_INVALID',
        message: `QL_INVALID: client #${i} is an ioredis Cluster; Redlock needs independent masters (one client per node)`,
        attempts: 0,
        nodes: [],
      })
    }
    const o = client.options
    if (o !== null && typeof o === 'object') {
      const db = o.db ?? 0
      if (o.path) return `unix://${o.path}?db=${db}`
      const scheme = o.tls ? 'rediss' : 'redis'
      const user = o.username ? encodeURIComponent(o.username) : ''
      const auth = o.password != null && o.password !== '' ? `${user}:${encodeURIComponent(o.password)}@` : user ? `${user}@` : ''
      const host = String(o.host ?? 'localhost')
      return `${scheme}://${auth}${host.includes(':') ? `[${host}]` : host}:${o.port ?? 6379}/${db}`
    }
  }
  throw new TypeError(`client #${i} must be an ioredis client (with .options) or a redis:// URL`)
}

function checkDuration(duration) {
  if (typeof duration !== 'number') throw new TypeError('Duration must be a number of milliseconds.')
  if (Math.floor(duration) !== duration || duration <= 0) {
    throw new RangeError('Duration must be an integer value in milliseconds.')
  }
}

function checkResources(resources) {
  if (!Array.isArray(resources) || !resources.every((r) => typeof r === 'string')) {
    throw new TypeError('resources must be an array of strings')
  }
}

/** The per-attempt statistics node-redlock reports, built from a per-node report. */
function stats(redlock, nodes, resources) {
  const clients = [...redlock.clients]
  const votesFor = new Set()
  const votesAgainst = new Map()
  for (const n of nodes) {
    const client = clients[n.index]
    if (n.kind === 'Ok' || n.kind === 'Released') votesFor.add(client)
    else if (n.kind !== 'Pending') votesAgainst.set(client, nodeError(n, resources))
  }
  return { membershipSize: clients.length, quorumSize: Math.floor(clients.length / 2) + 1, votesFor, votesAgainst }
}

function nodeError(n, resources) {
  if (n.kind === 'HeldByOther') {
    return new ResourceLockedError(`The lock on ${JSON.stringify(resources)} is held by another owner on ${n.address}.`)
  }
  return new Error(`${n.kind} on ${n.address}${n.detail ? `: ${n.detail}` : ''}`)
}

/** A lock in node-redlock's shape; `extend` updates it in place and returns it. */
class Lock {
  constructor(redlock, inner, resources, attempts) {
    this.redlock = redlock
    this.resources = resources
    this.value = inner.value
    this.attempts = attempts
    this.expiration = Date.now() + inner.remainingMs
    Object.defineProperty(this, 'inner', { value: inner })
  }

  async release() {
    return this.redlock.release(this)
  }

  async extend(duration) {
    return this.redlock.extend(this, duration)
  }
}

/** node-redlock v5's `Redlock` class. */
class Redlock extends EventEmitter {
  constructor(clients, settings = {}, scripts = {}) {
    super()
    if (clients === null || typeof clients !== 'object' || typeof clients[Symbol.iterator] !== 'function') {
      throw new TypeError('Redlock needs an iterable of ioredis clients or redis:// URLs')
    }
    void scripts // node-redlock's custom Lua scripts have no equivalent: the engine owns its scripts.
    this.clients = new Set(clients)
    if (this.clients.size === 0) throw new Error('Redlock must be instantiated with at least one redis client.')
    this.settings = { ...defaultSettings, ...settings }
    const urls = [...this.clients].map(nodeUrl)
    Object.defineProperty(this, 'client', {
      // node-redlock locks the bare resource name: share its keys during a migration.
      value: new Client({
        nodes: urls,
        driftFactor: this.settings.driftFactor,
        keyPrefix: '',
        keyFormat: 'bare',
      }),
    })
  }

  #lockOptions(duration, settings) {
    const s = { ...this.settings, ...settings }
    return {
      ttlMs: duration,
      retryCount: s.retryCount < 0 ? Infinity : s.retryCount,
      retryDelayMs: s.retryDelay,
      retryJitterMs: s.retryJitter,
    }
  }

  #emitNodeErrors(nodes, resources) {
    if (this.listenerCount('error') === 0) return
    for (const n of nodes) {
      if (n.kind === 'HeldByOther' || n.category !== 'Vote') this.emit('error', nodeError(n, resources))
    }
  }

  /** Maps a quorum failure to ExecutionError; other errors (bad input) pass unchanged. */
  #fail(e, resources, what) {
    if (!(e instanceof QuorumlockError) || !QUORUM_CODES.has(e.code)) return e
    this.#emitNodeErrors(e.nodes, resources)
    const s = stats(this, e.nodes, resources)
    const attempts = Array.from({ length: Math.max(1, e.attempts) }, () => Promise.resolve(s))
    const error = new ExecutionError(`The operation was unable to achieve a quorum during its ${what}.`, attempts)
    error.cause = e
    return error
  }

  /** Acquires a lock on the resources for `duration` ms. */
  async acquire(resources, duration, settings) {
    checkResources(resources)
    checkDuration(duration)
    return this.#acquire(resources, duration, this.#lockOptions(duration, settings))
  }

  async #acquire(resources, duration, options) {
    let inner
    try {
      inner = await this.client.acquire(resources, options)
    } catch (e) {
      throw this.#fail(e, resources, 'retry window')
    }
    this.#emitNodeErrors(inner.nodes, resources)
    const s = stats(this, inner.nodes, resources)
    const attempts = Array.from({ length: inner.attempts }, () => Promise.resolve(s))
    return new Lock(this, inner, resources, attempts)
  }

  /** Releases the lock on every node. */
  async release(lock) {
    const start = Date.now()
    const report = await lock.inner.release()
    lock.expiration = 0
    return { attempts: [Promise.resolve(stats(this, report.nodes, lock.resources))], start }
  }

  /** Extends the lock to `duration` ms from now; updates `lock` and returns it. */
  async extend(lock, duration) {
    checkDuration(duration)
    if (lock.expiration < Date.now()) throw new ExecutionError('Cannot extend an already-expired lock.', [])
    try {
      await lock.inner.extend(duration)
    } catch (e) {
      throw this.#fail(e, lock.resources, 'extension')
    }
    lock.expiration = Date.now() + lock.inner.remainingMs
    return lock
  }

  /**
   * Runs `routine(signal)` under the lock, extended automatically; `signal.aborted` and
   * `signal.error` tell the routine the lock was lost. Releases afterwards.
   */
  async using(resources, duration, settingsOrRoutine, optionalRoutine) {
    const settings = typeof settingsOrRoutine === 'function' ? {} : (settingsOrRoutine ?? {})
    const routine = typeof settingsOrRoutine === 'function' ? settingsOrRoutine : optionalRoutine
    if (typeof routine !== 'function') throw new TypeError('using() needs a routine: async (signal) => ...')
    checkResources(resources)
    checkDuration(duration)
    const threshold = settings.automaticExtensionThreshold ?? this.settings.automaticExtensionThreshold
    if (threshold > duration - 100) {
      throw new Error('A lock `duration` must be at least 100ms greater than the `automaticExtensionThreshold` setting.')
    }
    const options = {
      ...this.#lockOptions(duration, settings),
      autoExtend: true,
      extendIntervalMs: Math.max(1, Math.min(Math.floor(duration / 3), duration - threshold)),
    }
    const lock = await this.#acquire(resources, duration, options)
    const controller = new AbortController()
    const signal = controller.signal
    signal.error = undefined
    const lost = lock.inner.signal
    const onLost = () => {
      signal.error = lost.reason
      this.#emitNodeErrors(lost.reason.nodes, resources)
      controller.abort(lost.reason)
    }
    if (lost.aborted) onLost()
    else lost.addEventListener('abort', onLost, { once: true })
    try {
      return await routine(signal)
    } finally {
      lost.removeEventListener('abort', onLost)
      await lock.release()
    }
  }

  /** Releases the locks still held and quits the given ioredis clients. */
  async quit() {
    await this.client.close()
    await Promise.all([...this.clients].map((c) => (typeof c?.quit === 'function' ? c.quit() : undefined)))
  }
}

module.exports = Redlock
module.exports.default = Redlock
module.exports.Redlock = Redlock
module.exports.Lock = Lock
module.exports.ResourceLockedError = ResourceLockedError
module.exports.ExecutionError = ExecutionError
