'use strict'
// node-redlock's settings and quorumlock's extra ones, checked and mapped to engine options.

const { QuorumlockError } = require('../index.js')

/** node-redlock v5's defaults. */
const defaultSettings = Object.freeze({
  driftFactor: 0.01,
  retryCount: 10,
  retryDelay: 200,
  retryJitter: 100,
  automaticExtensionThreshold: 500,
})

/** The largest maxTtl the engine accepts (its MAX_TTL_LIMIT): 2^53 - 1 ms. */
const MAX_TTL = Number.MAX_SAFE_INTEGER

// quorumlock's settings beyond node-redlock's, given to the constructor only. The defaults are
// node-redlock's behavior: no restart quarantine and no TTL cap below the engine's largest.
const extraDefaults = Object.freeze({
  quarantine: 'off',
  maxTtl: MAX_TTL,
  evictionCheck: 'refuse',
  notify: true,
  fenced: false,
  nodeTimeout: undefined,
})

function number(name, v, min) {
  if (typeof v !== 'number' || !Number.isFinite(v)) {
    throw new TypeError(`settings.${name} must be a finite number (got ${typeof v === 'number' ? v : typeof v})`)
  }
  if (v < min) throw new RangeError(`settings.${name} must be >= ${min} (got ${v})`)
  return v
}

const CHECKS = {
  driftFactor: (v) => number('driftFactor', v, 0),
  retryCount: (v) => {
    number('retryCount', v, -1)
    if (!Number.isInteger(v)) throw new RangeError(`settings.retryCount must be a whole number or -1 (got ${v})`)
    return v
  },
  retryDelay: (v) => number('retryDelay', v, 0),
  retryJitter: (v) => number('retryJitter', v, 0),
  automaticExtensionThreshold: (v) => number('automaticExtensionThreshold', v, 0),
}

function checkObject(settings) {
  if (settings === undefined) return {}
  if (settings === null || typeof settings !== 'object') {
    throw new TypeError(`settings must be an object (got ${settings === null ? 'null' : typeof settings})`)
  }
  return settings
}

/** Checks node-redlock settings (undefined values keep `base`); refuses unknown keys. */
function mergeSettings(base, settings, extraKeys = []) {
  const merged = { ...base }
  for (const [key, value] of Object.entries(checkObject(settings))) {
    if (value === undefined || extraKeys.includes(key)) continue
    if (!Object.hasOwn(CHECKS, key)) {
      const known = [...Object.keys(CHECKS), ...extraKeys].join(', ')
      throw new TypeError(`unknown setting ${JSON.stringify(key)} (known: ${known})`)
    }
    merged[key] = CHECKS[key](value)
  }
  return Object.freeze(merged)
}

/** The engine client's options for the constructor's settings. */
function clientOptions(settings, urls, keyPrefix) {
  const extra = { ...extraDefaults }
  for (const key of Object.keys(extraDefaults)) {
    if (settings[key] !== undefined) extra[key] = settings[key]
  }
  return {
    nodes: urls,
    driftFactor: mergeSettings(defaultSettings, settings, Object.keys(extraDefaults)).driftFactor,
    keyPrefix,
    // node-redlock locks the bare resource name: keys are shared during a migration.
    keyFormat: 'bare',
    quarantine: extra.quarantine,
    maxTtlMs: extra.maxTtl,
    evictionCheck: extra.evictionCheck,
    notify: extra.notify,
    fenced: extra.fenced,
    nodeTimeoutMs: extra.nodeTimeout,
  }
}

/**
 * Engine lock options for node-redlock settings. node-redlock waits `retryDelay ± retryJitter`
 * (uniform, at least 0) between attempts; the engine waits `delay + [0, jitter)`. node-redlock
 * has no per-node deadline (it waits for ioredis); unless `nodeTimeout` is set, a node gets
 * `duration / 10` clamped to 50..1000 ms, not the engine's tighter `duration / 200` (5..50 ms).
 */
function lockOptions(redlockSettings, duration, settings, nodeTimeout) {
  const s = mergeSettings(redlockSettings, settings)
  if (s.driftFactor !== redlockSettings.driftFactor) {
    throw new QuorumlockError({
      code: 'QL_INVALID',
      message: 'QL_INVALID: settings.driftFactor can only be set in the Redlock constructor (the engine uses one drift factor per client)',
      attempts: 0,
      nodes: [],
    })
  }
  const low = Math.max(0, Math.round(s.retryDelay - s.retryJitter))
  return {
    settings: s,
    options: {
      ttlMs: duration,
      retryCount: s.retryCount === -1 ? Infinity : s.retryCount,
      retryDelayMs: low,
      retryJitterMs: Math.round(s.retryDelay + s.retryJitter) - low,
      nodeTimeoutMs: nodeTimeout ?? Math.min(1000, Math.max(50, Math.floor(duration / 10))),
    },
  }
}

module.exports = { defaultSettings, extraDefaults, mergeSettings, clientOptions, lockOptions }
