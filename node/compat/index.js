'use strict'
// quorumlock/compat: node-redlock v5's API over quorumlock's engine. It converts clients,
// settings, results and errors, and nothing else: retries, validity, cleanup and the
// automatic extension are the engine's. ioredis is never a dependency.

const { EventEmitter } = require('node:events')
const { Client, QuorumlockError } = require('../index.js')
const { nodesOf } = require('./clients.js')
const { ResourceLockedError, ExecutionError, statsOf, QUORUM_MESSAGE, EXPIRED_MESSAGE } = require('./errors.js')
const { defaultSettings, extraDefaults, mergeSettings, clientOptions, lockOptions } = require('./settings.js')

// Engine failures that node-redlock reports as an ExecutionError: no quorum in the window.
const QUORUM_CODES = new Set(['QL_BUSY', 'QL_QUORUM', 'QL_VALIDITY', 'QL_TIMEOUT', 'QL_LOST', 'QL_EXT_LIMIT'])

const INNER = Symbol('quorumlock lock')

function invalid(message) {
  return new QuorumlockError({ code: 'QL_INVALID', message: `QL_INVALID: ${message}`, attempts: 0, nodes: [] })
}

function checkDuration(duration) {
  if (typeof duration !== 'number' || Math.floor(duration) !== duration) {
    const E = typeof duration === 'number' ? RangeError : TypeError
    throw new E('Duration must be an integer value in milliseconds.')
  }
  if (duration <= 0) throw new RangeError(`Duration must be a positive integer value in milliseconds (got ${duration}).`)
}

function checkResources(resources) {
  if (!Array.isArray(resources) || resources.length === 0 || !resources.every((r) => typeof r === 'string')) {
    throw new TypeError('resources must be a non-empty array of strings')
  }
}

/** A held lock, node-redlock's class: `extend` returns a new Lock and zeroes this one's expiration. */
class Lock {
  constructor(redlock, resources, value, attempts, expiration) {
    this.redlock = redlock
    this.resources = resources
    this.value = value
    this.attempts = attempts
    this.expiration = expiration
  }

  async release() {
    return this.redlock.release(this)
  }

  async extend(duration) {
    return this.redlock.extend(this, duration)
  }
}

function innerOf(lock) {
  const inner = lock instanceof Lock ? lock[INNER] : undefined
  if (inner === undefined) throw invalid('this Lock was not acquired through quorumlock/compat')
  return inner
}

/** node-redlock v5's Redlock. */
class Redlock extends EventEmitter {
  #client
  #clients
  #nodeTimeout
  #quit = false

  constructor(clients, settings = {}, scripts = {}) {
    super()
    // As node-redlock does: an 'error' event without listeners must not crash.
    this.on('error', () => {})
    if (clients === null || typeof clients !== 'object' || typeof clients[Symbol.iterator] !== 'function') {
      throw new TypeError('Redlock needs an iterable of ioredis clients or redis:// URLs')
    }
    refuseScripts(scripts)
    this.clients = new Set(clients)
    if (this.clients.size === 0) throw new Error('Redlock must be instantiated with at least one redis client.')
    this.settings = mergeSettings(defaultSettings, settings, Object.keys(extraDefaults))
    this.#clients = [...this.clients]
    this.#nodeTimeout = settings?.nodeTimeout
    const { urls, keyPrefix } = nodesOf(this.#clients)
    this.#client = new Client(clientOptions(settings ?? {}, urls, keyPrefix))
  }

  #open() {
    if (this.#quit) throw invalid('this Redlock was quit; create a new one')
  }

  /** node-redlock's stats of each attempt's node entries, emitting every vote against on 'error'. */
  #attempts(reports, keyCount) {
    const all = reports.map((nodes) => statsOf(this.#clients, nodes, keyCount))
    for (const s of all) for (const error of s.votesAgainst.values()) this.emit('error', error)
    return all.map((s) => Promise.resolve(s))
  }

  /** An engine failure as node-redlock reports it; other errors (bad input) pass unchanged. */
  #executionError(e, keyCount) {
    if (!(e instanceof QuorumlockError) || !QUORUM_CODES.has(e.code)) return e
    const expired = e.code === 'QL_LOST' && e.lostReason !== 'Taken'
    const error = expired
      ? new ExecutionError(EXPIRED_MESSAGE, [])
      : new ExecutionError(QUORUM_MESSAGE, this.#attempts(e.attemptReports.length > 0 ? e.attemptReports : [e.nodes], keyCount))
    error.cause = e
    return error
  }

  #wrap(inner, resources, attempts) {
    const lock = new Lock(this, resources, inner.value, attempts, Date.now() + inner.remainingMs)
    // With the `fenced` setting: the fencing token (a bigint), else null.
    lock.token = inner.token
    Object.defineProperty(lock, INNER, { value: inner })
    return lock
  }

  async #acquire(resources, options) {
    this.#open()
    let inner
    try {
      inner = await this.#client.acquire(resources, options)
    } catch (e) {
      throw this.#executionError(e, resources.length)
    }
    return this.#wrap(inner, resources, this.#attempts(inner.attemptReports, resources.length))
  }

  /** Locks the resources for `duration` ms; rejects with ExecutionError when no quorum agreed. */
  async acquire(resources, duration, settings) {
    checkDuration(duration)
    checkResources(resources)
    return this.#acquire(resources, lockOptions(this.settings, duration, settings, this.#nodeTimeout).options)
  }

  /** Releases the lock on every node; rejects with ExecutionError if fewer than a quorum still held it. */
  async release(lock, settings) {
    mergeSettings(this.settings, settings)
    const inner = innerOf(lock)
    lock.expiration = 0
    const start = Date.now()
    const report = await inner.release()
    const attempts = this.#attempts([report.nodes], lock.resources.length)
    const stats = await attempts[0]
    if (stats.votesFor.size < stats.quorumSize) throw new ExecutionError(QUORUM_MESSAGE, attempts)
    return { attempts, start }
  }

  /** Extends a valid lock to `duration` ms from now; returns a new Lock and zeroes `existing.expiration`. */
  async extend(existing, duration, settings) {
    checkDuration(duration)
    mergeSettings(this.settings, settings)
    const inner = innerOf(existing)
    this.#open()
    if (existing.expiration < Date.now()) throw new ExecutionError(EXPIRED_MESSAGE, [])
    try {
      await inner.extend(duration)
    } catch (e) {
      throw this.#executionError(e, existing.resources.length)
    }
    existing.expiration = 0
    const report = inner.extendNodes
    return this.#wrap(inner, existing.resources, report ? this.#attempts([report], existing.resources.length) : [])
  }

  /**
   * Runs `routine(signal)` under the lock, extended automatically `automaticExtensionThreshold`
   * ms before it expires; `signal` aborts, with `signal.error`, when the lock is lost. Releases
   * afterwards.
   */
  async using(resources, duration, settingsOrRoutine, optionalRoutine) {
    checkDuration(duration)
    const settingsArg = typeof settingsOrRoutine === 'function' ? undefined : settingsOrRoutine
    const routine = optionalRoutine ?? settingsOrRoutine
    if (typeof routine !== 'function') throw new Error('INVARIANT: routine is not a function.')
    checkResources(resources)
    const { settings, options } = lockOptions(this.settings, duration, settingsArg, this.#nodeTimeout)
    if (settings.automaticExtensionThreshold > duration - 100) {
      throw new Error('A lock `duration` must be at least 100ms greater than the `automaticExtensionThreshold` setting.')
    }
    // node-redlock extends when `threshold` ms are left of `duration - drift`.
    const drift = Math.round(settings.driftFactor * duration) + 2
    const interval = Math.max(1, Math.round(duration - drift - settings.automaticExtensionThreshold))
    const lock = await this.#acquire(resources, { ...options, autoExtend: true, extendIntervalMs: interval })
    const controller = new AbortController()
    const signal = controller.signal
    const lost = lock[INNER].signal
    const onLost = () => {
      signal.error = this.#executionError(lost.reason, resources.length)
      controller.abort(signal.error)
    }
    if (lost.aborted) onLost()
    else lost.addEventListener('abort', onLost, { once: true })
    try {
      return await routine(signal)
    } finally {
      lost.removeEventListener('abort', onLost)
      await this.release(lock)
    }
  }

  /**
   * Stops new acquisitions and extensions. The ioredis clients stay open: they are the
   * caller's, and the compat layer never used them. Locks still held are not released (as in
   * node-redlock, they expire); `release()` still works.
   */
  async quit() {
    this.#quit = true
  }
}

function refuseScripts(scripts) {
  if (scripts === undefined || scripts === null) return
  if (typeof scripts !== 'object') throw new TypeError('scripts must be an object')
  const given = Object.keys(scripts).filter((k) => scripts[k] !== undefined)
  if (given.length > 0) {
    throw invalid(
      `custom scripts (${given.join(', ')}) cannot be honored: quorumlock's engine runs its own Lua ` +
        '(with fencing, release notification and per-node reports); use the ioredis keyPrefix option to prefix keys',
    )
  }
}

module.exports = Redlock
module.exports.default = Redlock
module.exports.Redlock = Redlock
module.exports.Lock = Lock
module.exports.ResourceLockedError = ResourceLockedError
module.exports.ExecutionError = ExecutionError
