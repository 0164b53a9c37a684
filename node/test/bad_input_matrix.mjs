// The bad-input matrix (TESTING.md §8.1, Node), run as its own process by
// matrix.test.mjs so a crash of the process shows as an exit status: every public call and
// constructor gets each wrong value in each argument, the others valid. Each case must throw or
// reject with a TypeError, a RangeError or a QuorumlockError (with a QL_ code) or, for a value
// the argument accepts, succeed; anything else fails its case. Prints one line per failure and
// `cases: N`; exits 1 when a case failed.
//
// Usage: node bad_input_matrix.mjs redis://...,redis://...  (nodes with durable writes)
import { Client, QuorumlockError } from '../index.mjs'

const VALUES = [
  ['null', null],
  ['undefined', undefined],
  ['true', true],
  ['0', 0],
  ['-1', -1],
  ['-0', -0],
  ['2**64', 2 ** 64],
  ['MAX_SAFE+2', Number.MAX_SAFE_INTEGER + 2],
  ['1.5', 1.5],
  ['NaN', NaN],
  ['Infinity', Infinity],
  ['-Infinity', -Infinity],
  ['1e308', 1e308],
  ["''", ''],
  ["'x'", 'x'],
  ['lone surrogate', '\ud800'],
  ['NUL string', 'a\0b'],
  ['empty Uint8Array', new Uint8Array(0)],
  ['invalid UTF-8 Buffer', Buffer.from([0xff, 0xfe, 0xfd])],
  ['BigInt', 1n],
  ['Symbol', Symbol('s')],
  ['{}', {}],
  ['[]', []],
  ['[null]', [null]],
  ['[1]', [1]],
  ["['\\ud800']", ['\ud800']],
  ['function', () => 1],
  ['Date', new Date(0)],
  ['null prototype', Object.create(null)],
  ['1025 bytes', Buffer.alloc(1025, 120)],
  ['10 MB string', 'x'.repeat(10_000_000)],
]

// Values an argument of each kind may accept (returning normally is then right too).
// Strings become UTF-8 (a lone surrogate as U+FFFD), so every string is a valid name.
const NAMES = ["'x'", 'lone surrogate', 'NUL string', 'invalid UTF-8 Buffer', "['\\ud800']"]
const ACCEPTS = {
  resource: new Set(NAMES),
  // key() only formats: any bytes, also empty or long ones.
  keyResource: new Set([...NAMES, "''", 'empty Uint8Array', '1025 bytes', '10 MB string']),
  millisOrUndefined: new Set(['undefined', '0', '-0']),
  // A count where Infinity means no limit (retryCount: until waitMs; maxExtensions).
  count: new Set(['undefined', '0', '-0', 'Infinity']),
  ratio: new Set(['undefined', '0', '-0']),
  flag: new Set(['undefined', 'true']),
  optional: new Set(['undefined']),
  prefix: new Set(['undefined', "''", "'x'", 'lone surrogate', 'NUL string', '10 MB string']),
  // The options object: any object without unknown keys.
  options: new Set(['undefined', '{}', 'empty Uint8Array', 'Date', 'null prototype']),
  // The constructor checks types only; values are checked by connect (its promise).
  constructor: new Set(['[]', "['\\ud800']"]),
  callback: new Set(['function']),
  // A given value is 16+ printable ASCII characters, with no upper bound: 10 MB is valid
  // (or too slow to keep its validity, a QuorumlockError).
  value: new Set(['undefined', '10 MB string']),
  none: new Set(),
}

// Known defects, each reported: a case listed here must still fail (else remove it).
const KNOWN = new Map([])

let cases = 0
const failures = []

function typed(e) {
  return (
    e instanceof TypeError ||
    e instanceof RangeError ||
    (e instanceof QuorumlockError && typeof e.code === 'string' && e.code.startsWith('QL_'))
  )
}

const known = []

async function check(call, kind, name, fn) {
  cases++
  const id = `${call} with ${name}`
  let result
  try {
    result = await fn()
  } catch (e) {
    if (typed(e)) {
      if (KNOWN.has(id)) failures.push(`${id}: listed as known but passes now; remove it from KNOWN`)
    } else if (KNOWN.has(id)) {
      known.push(`${id}: ${e?.constructor?.name}: ${String(e?.message ?? e).slice(0, 120)} (${KNOWN.get(id)})`)
    } else {
      failures.push(`${id}: ${e?.constructor?.name}: ${String(e?.message ?? e).slice(0, 200)}`)
    }
    return
  }
  // A lock a case acquired is released (the held lock itself comes back from extend()).
  if (result && result !== held && typeof result.release === 'function') await result.release().catch(() => {})
  if (result instanceof Client) await result.close().catch(() => {})
  if (!ACCEPTS[kind].has(name)) failures.push(`${id}: accepted`)
}

const nodes = process.argv[2].split(',')
// A generous node timeout: the matrix is about arguments, and the machine may be loaded.
const base = { nodes, quarantine: 'off', nodeTimeoutMs: 1000, retryCount: 0 }
const client = await Client.connect(base)
const held = await client.acquire('matrix:held', { ttlMs: 30_000 })

const CLIENT_SETTINGS = [
  ['driftFactor', 'ratio'],
  ['driftConstantMs', 'millisOrUndefined'],
  ['maxTtlMs', 'optional'],
  ['connectTimeoutMs', 'millisOrUndefined'],
  ['reprobeEveryMs', 'optional'],
  ['keyPrefix', 'prefix'],
  ['keyFormat', 'optional'],
  ['requireQuorum', 'flag'],
  ['quarantine', 'optional'],
  ['quarantineMarginMs', 'millisOrUndefined'],
  ['evictionCheck', 'optional'],
  ['notify', 'flag'],
  ['ttlMs', 'optional'],
]
const LOCK_OPTIONS = [
  ['ttlMs', 'optional'],
  ['retryCount', 'count'],
  ['retryDelayMs', 'millisOrUndefined'],
  ['retryJitterMs', 'millisOrUndefined'],
  ['waitMs', 'millisOrUndefined'],
  ['minValidityMs', 'millisOrUndefined'],
  ['nodeTimeoutMs', 'optional'],
  ['autoExtend', 'flag'],
  ['extendIntervalMs', 'optional'],
  ['maxExtensions', 'count'],
  ['maxHoldMs', 'optional'],
  ['fenced', 'flag'],
  ['fenceCounterTtlMs', 'optional'],
  ['value', 'value'],
  ['signal', 'optional'],
]

for (const [name, v] of VALUES) {
  await check('new Client(options)', 'constructor', name, () => new Client(v))
  await check('Client.connect(options)', 'none', name, () => Client.connect(v))
  await check('Client.connect({nodes})', 'none', name, () => Client.connect({ ...base, nodes: v }))
  await check('Client.connect({nodes: [v]})', 'none', name, () => Client.connect({ ...base, nodes: [v] }))
  for (const [setting, kind] of CLIENT_SETTINGS) {
    await check(`Client.connect({${setting}})`, kind, name, () => Client.connect({ ...base, [setting]: v }))
  }
  await check('acquire(resources)', 'resource', name, () => client.acquire(v, { ttlMs: 5000 }))
  await check('acquire([ok, v])', 'resource', name, () => client.acquire(['matrix:ok', v], { ttlMs: 5000 }))
  await check('acquire(r, options)', 'options', name, () => client.acquire('matrix:o', v))
  for (const [option, kind] of LOCK_OPTIONS) {
    await check(`acquire({${option}})`, kind, name, () => client.acquire('matrix:opt', { ttlMs: 5000, [option]: v }))
  }
  await check('using(resources)', 'resource', name, () => client.using(v, { ttlMs: 5000 }, () => 1))
  await check('using(r, options, fn)', 'callback', name, () => client.using('matrix:u', { ttlMs: 5000 }, v))
  await check('using(r, fn)', 'callback', name, () => client.using('matrix:u', v))
  await check('key(resource)', 'keyResource', name, () => client.key(v))
  await check('Lock.extend(ttlMs)', 'millisOrUndefined', name, () => held.extend(v === undefined || v === 0 ? 30_000 : v))
  await check('Lock.setAutoExtend(on)', 'flag', name, () => held.setAutoExtend(v))
  held.setAutoExtend(false)
}
if (!held.isHeld) failures.push('the held lock was lost during the matrix')
// A node error on this last release is no argument's fault; it is reported, not fatal.
await held.release().catch((e) => console.log('release of the held lock:', e.code, e.message))
await client.close()
for (const k of known) console.log('KNOWN', k)
for (const f of failures) console.log('FAIL', f)
console.log(`cases: ${cases}, known: ${known.length}, failures: ${failures.length}`)
process.exit(failures.length ? 1 : 0)
