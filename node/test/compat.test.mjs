// quorumlock/compat: node-redlock v5's README examples and behaviors, over objects shaped like
// ioredis clients (ioredis is not a dependency), on plain ql-harness nodes (persist none).
import assert from 'node:assert/strict'
import net from 'node:net'
import { after, before, test } from 'node:test'

import Redlock, { ExecutionError, Lock, ResourceLockedError } from 'quorumlock/compat'
import { settledPttl, settledValuesOn, sleep, startCluster, valuesOn } from './harness.mjs'

const QUORUM_MESSAGE = 'The operation was unable to achieve a quorum during its retry window.'

let cluster
let redisA
let redisB
let redisC

/** The part of an ioredis client that the compat layer reads (plus `quit`, to see it unused). */
class Client {
  constructor(options) {
    this.options = { host: 'localhost', port: 6379, db: 0, keyPrefix: '', ...options }
    this.quitCalls = 0
  }

  async quit() {
    this.quitCalls += 1
    return 'OK'
  }
}

function hostPort(addr) {
  const i = addr.lastIndexOf(':')
  return { host: addr.slice(0, i), port: Number(addr.slice(i + 1)) }
}

const something = async () => {}
const somethingElse = async () => {}

before(() => {
  // Fresh plain servers, as in node-redlock's CI and `docker run redis`.
  cluster = startCluster(3, 'none')
  ;[redisA, redisB, redisC] = cluster.addrs.map((addr) => new Client(hostPort(addr)))
})

after(() => cluster.stop())

const pttl = (i, key) => cluster.command(i, 'PTTL', key)

/** The process warnings with `code` seen while `fn` runs. */
async function warningsDuring(code, fn) {
  const seen = []
  const listener = (w) => w.code === code && seen.push(w)
  process.on('warning', listener)
  try {
    await fn()
    await sleep(50)
  } finally {
    process.off('warning', listener)
  }
  return seen
}

test('fresh plain servers lock at once, with a restart warning; quarantine is opt-in', async () => {
  const fresh = startCluster(3, 'none')
  try {
    const clients = fresh.addrs.map((addr) => new Client(hostPort(addr)))
    const warnings = await warningsDuring('QL_W_NOT_DURABLE', async () => {
      const lock = await new Redlock(clients).acquire(['fresh'], 1000)
      assert.equal(lock.attempts.length, 1)
      await lock.release()
    })
    assert.equal(warnings.length, 3, `${warnings}`)
    assert.equal(warnings[0].name, 'QuorumlockWarning')
    assert.match(warnings[0].message, /restart.*appendfsync always.*quarantine/)
    const strict = new Redlock(clients, { quarantine: 'on', retryCount: 0 })
    await assert.rejects(strict.acquire(['fresh'], 1000), (e) => {
      assert.ok(e instanceof ExecutionError)
      assert.equal(e.cause.code, 'QL_QUORUM')
      assert.ok(e.cause.nodes.every((n) => n.kind === 'Quarantined'), JSON.stringify(e.cause.nodes))
      return true
    })
  } finally {
    fresh.stop()
  }
})

test('README: error handler, using() and acquire/extend/release run unchanged', async () => {
  // ---- from node-redlock v5's README ----
  const redlock = new Redlock(
    // You should have one client for each independent redis node
    // or cluster.
    [redisA, redisB, redisC],
    {
      driftFactor: 0.01, // multiplied by lock ttl to determine drift time
      retryCount: 10,
      retryDelay: 200, // time in ms
      retryJitter: 200, // time in ms
      automaticExtensionThreshold: 500, // time in ms
    },
  )
  const errors = []
  redlock.on('error', (error) => {
    // Ignore cases where a resource is explicitly marked as locked on a client.
    if (error instanceof ResourceLockedError) {
      return
    }
    // Log all other errors.
    errors.push(error)
  })

  let ran = false
  await redlock.using(['sender', 'recipient'], 5000, async (signal) => {
    await something()
    if (signal.aborted) {
      throw signal.error
    }
    await somethingElse()
    ran = true
  })
  assert.ok(ran)

  let lock = await redlock.acquire(['a'], 5000)
  const first = lock
  try {
    await something()
    // Extend the lock. Note that this returns a new `Lock` instance.
    lock = await lock.extend(5000)
    await somethingElse()
  } finally {
    await lock.release()
  }
  assert.notEqual(lock, first)
  assert.ok(lock instanceof Lock)
  assert.deepEqual(errors, [])
  assert.deepEqual(await valuesOn(cluster, 'a'), [null, null, null])
})

test('settings: node-redlock defaults; unknown keys and a per-call driftFactor are refused', async () => {
  const redlock = new Redlock([redisA, redisB, redisC])
  assert.deepEqual(redlock.settings, {
    driftFactor: 0.01,
    retryCount: 10,
    retryDelay: 200,
    retryJitter: 100,
    automaticExtensionThreshold: 500,
  })
  assert.equal(new Redlock([redisA], { retryCount: 3, maxTtl: 1000 }).settings.retryCount, 3)
  assert.throws(() => new Redlock([redisA], { retryCont: 3 }), (e) => e instanceof TypeError && /retryCont/.test(e.message))
  assert.throws(() => new Redlock([redisA], { retryDelay: '200' }), TypeError)
  assert.throws(() => new Redlock([redisA], { quarantine: 'sometimes' }), RangeError)
  await assert.rejects(redlock.acquire(['s'], 1000, { driftFactor: 0.1 }), { code: 'QL_INVALID', message: /driftFactor/ })
  await assert.rejects(redlock.acquire(['s'], 1000, { retryCont: 1 }), TypeError)
})

test('durations: node-redlock messages; up to 2^53 - 1 ms by default; maxTtl is opt-in', async () => {
  const redlock = new Redlock([redisA, redisB, redisC])
  await assert.rejects(redlock.acquire(['d'], Number.MAX_SAFE_INTEGER / 10), {
    message: 'Duration must be an integer value in milliseconds.',
  })
  await assert.rejects(redlock.acquire(['d'], 0), RangeError)
  // node-redlock's own suite locks for floor(MAX_SAFE_INTEGER / 10) ms and extends to 3x that.
  const huge = Math.floor(Number.MAX_SAFE_INTEGER / 10)
  const long = await redlock.acquire(['d'], huge)
  assert.ok(Math.abs((await settledPttl(cluster, 0, 'd', (t) => Math.abs(t - huge) < 1000)) - huge) < 1000)
  const longer = await long.extend(huge * 3)
  assert.ok(Math.abs((await settledPttl(cluster, 1, 'd', (t) => Math.abs(t - huge * 3) < 1000)) - huge * 3) < 1000)
  await longer.release()
  await assert.rejects(redlock.acquire(['d'], Number.MAX_SAFE_INTEGER + 2), RangeError)
  const capped = new Redlock([redisA, redisB, redisC], { maxTtl: 60_000 })
  await assert.rejects(capped.acquire(['d'], 60_001), { code: 'QL_INVALID' })
})

test('a busy resource: one ExecutionAttempt per attempt, ResourceLockedError votes and error events', async () => {
  const redlock = new Redlock([redisA, redisB, redisC], { retryCount: 2, retryDelay: 10, retryJitter: 0 })
  const events = []
  redlock.on('error', (e) => events.push(e))
  const lock = await redlock.acquire(['busy'], 5000)
  await assert.rejects(redlock.acquire(['busy', 'busy-2'], 1000), (e) => {
    assert.ok(e instanceof ExecutionError)
    assert.equal(e.message, QUORUM_MESSAGE)
    assert.equal(e.attempts.length, 3)
    assert.equal(e.cause.code, 'QL_BUSY')
    return true
  })
  const error = await redlock.acquire(['busy'], 1000).catch((e) => e)
  const attempts = await Promise.all(error.attempts)
  assert.equal(new Set(attempts).size, 3, 'one ExecutionStats per attempt, not one shared')
  for (const stats of attempts) {
    assert.equal(stats.membershipSize, 3)
    assert.equal(stats.quorumSize, 2)
    assert.ok(stats.votesAgainst.size >= 2)
    for (const [client, v] of stats.votesAgainst) {
      assert.ok([redisA, redisB, redisC].includes(client))
      assert.ok(v instanceof ResourceLockedError)
      assert.equal(v.message, 'The operation was applied to: 0 of the 1 requested resources.')
    }
  }
  assert.ok(events.length >= 6 && events.every((e) => e instanceof ResourceLockedError), `${events}`)
  assert.equal(await cluster.command(0, 'GET', 'busy-2'), null)
  await lock.release()
})

test('an unreachable node votes against with ioredis\'s "Connection is closed."', async () => {
  const closed = await new Promise((resolve) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address()
      server.close(() => resolve(port))
    })
  })
  const down = new Client({ host: '127.0.0.1', port: closed })
  const redlock = new Redlock([down], { retryCount: 2, retryDelay: 10, retryJitter: 0 })
  const e = await redlock.acquire(['unreachable'], 1000).catch((error) => error)
  assert.ok(e instanceof ExecutionError, `${e}`)
  assert.equal(e.attempts.length, 3)
  for (const stats of await Promise.all(e.attempts)) {
    assert.equal(stats.votesAgainst.get(down).message, 'Connection is closed.')
  }
})

test('a minority holding another value: acquire, extend and release still succeed', async () => {
  const redlock = new Redlock([redisA, redisB, redisC])
  await cluster.command(2, 'SET', 'minority', 'other')
  let lock = await redlock.acquire(['minority'], 10_000)
  const votes = await lock.attempts[0]
  assert.ok(votes.votesFor.has(redisA) && votes.votesFor.has(redisB))
  lock = await lock.extend(20_000)
  assert.ok((await pttl(0, 'minority')) > 15_000)
  assert.equal(await pttl(2, 'minority'), -1)
  const result = await lock.release()
  assert.ok(result.attempts.length === 1 && typeof result.start === 'number')
  assert.deepEqual(await valuesOn(cluster, 'minority'), [null, null, 'other'])
  await cluster.command(2, 'DEL', 'minority')
})

test('extend returns a new Lock and zeroes the old one; an expired Lock cannot be extended', async () => {
  const redlock = new Redlock([redisA, redisB, redisC])
  const old = await redlock.acquire(['ext'], 2000)
  const renewed = await redlock.extend(old, 6000)
  assert.notEqual(renewed, old)
  assert.equal(old.expiration, 0)
  assert.equal(renewed.value, old.value)
  assert.deepEqual(renewed.resources, ['ext'])
  assert.ok(renewed.expiration > Date.now() + 5000)
  assert.ok((await settledPttl(cluster, 0, 'ext', (t) => t > 5000)) > 5000)
  await assert.rejects(old.extend(1000), (e) => e instanceof ExecutionError && e.message === 'Cannot extend an already-expired lock.')
  await renewed.release()
  assert.equal(renewed.expiration, 0)
  await assert.rejects(redlock.release(new Lock(redlock, ['ext'], old.value, [], 0)), { code: 'QL_INVALID' })
})

test('release fails with ExecutionError when fewer than a quorum still held the lock', async () => {
  const redlock = new Redlock([redisA, redisB, redisC])
  const lock = await redlock.acquire(['gone'], 5000)
  await Promise.all([0, 1].map((i) => cluster.command(i, 'DEL', 'gone')))
  const e = await lock.release().catch((error) => error)
  assert.ok(e instanceof ExecutionError, `${e}`)
  assert.equal(e.message, QUORUM_MESSAGE)
  const [stats] = await Promise.all(e.attempts)
  assert.equal(stats.votesFor.size, 1)
  assert.equal(lock.expiration, 0)
})

test('overlapping multi-resource locks are exclusive', async () => {
  const redlock = new Redlock([redisA, redisB, redisC], { retryCount: 1, retryDelay: 10, retryJitter: 0 })
  const lock = await redlock.acquire(['m1', 'm2'], 5000)
  await assert.rejects(redlock.acquire(['m2', 'm3'], 5000), ExecutionError)
  assert.deepEqual(await valuesOn(cluster, 'm3'), [null, null, null])
  await lock.release()
})

test('using(): extended threshold ms before expiry, released after; threshold checked', async () => {
  const redlock = new Redlock([redisA, redisB, redisC])
  const value = await redlock.using(['u'], 500, { automaticExtensionThreshold: 200 }, async (signal) => {
    const before = await cluster.command(0, 'GET', 'u')
    await sleep(700)
    assert.equal(signal.aborted, false)
    assert.equal(signal.error, undefined)
    assert.equal(await cluster.command(0, 'GET', 'u'), before)
    return before
  })
  assert.match(value, /^[0-9a-f]{40}$/)
  assert.deepEqual(await valuesOn(cluster, 'u'), [null, null, null])
  await assert.rejects(
    redlock.using(['u'], 500, async () => {}),
    { message: 'A lock `duration` must be at least 100ms greater than the `automaticExtensionThreshold` setting.' },
  )
  await assert.rejects(redlock.using(['u'], 1000, {}), { message: 'INVARIANT: routine is not a function.' })
})

test('using(): a lost lock aborts the signal with signal.error; the final release then fails', async () => {
  const redlock = new Redlock([redisA, redisB, redisC])
  let seen
  await assert.rejects(
    redlock.using(['lost'], 900, { automaticExtensionThreshold: 600 }, async (signal) => {
      await Promise.all([0, 1, 2].map((i) => cluster.command(i, 'DEL', 'lost')))
      for (let i = 0; i < 100 && !signal.aborted; i++) await sleep(20)
      seen = signal.error
    }),
    (e) => e instanceof ExecutionError && e.message === QUORUM_MESSAGE,
  )
  assert.ok(seen instanceof ExecutionError, `${seen}`)
  assert.equal(seen.cause.code, 'QL_LOST')
})

test('ioredis keyPrefix prefixes the keys; different prefixes are refused', async () => {
  const prefixed = [redisA, redisB, redisC].map((c) => new Client({ ...c.options, keyPrefix: 'app:' }))
  const lock = await new Redlock(prefixed).acquire(['kp'], 2000)
  assert.deepEqual(await settledValuesOn(cluster, 'app:kp', lock.value), [lock.value, lock.value, lock.value])
  assert.deepEqual(await valuesOn(cluster, 'kp'), [null, null, null])
  await lock.release()
  assert.throws(() => new Redlock([prefixed[0], redisB, redisC]), { code: 'QL_INVALID', message: /keyPrefix/ })
})

test('what cannot be honored is refused by name: sentinels, natMap, TLS certificates, scripts', () => {
  const refused = (clients, pattern, scripts) =>
    assert.throws(() => new Redlock(clients, {}, scripts), (e) => e.code === 'QL_INVALID' && pattern.test(e.message))
  refused([new Client({ sentinels: [{ host: 's', port: 26379 }], name: 'mymaster' })], /options\.sentinels.*list the masters/)
  refused([new Client({ natMap: { '10.0.0.1:6379': { host: 'a', port: 1 } } })], /options\.natMap/)
  refused([new Client({ tls: { ca: 'PEM', rejectUnauthorized: false } })], /options\.tls\.ca, options\.tls\.rejectUnauthorized/)
  refused([redisA], /custom scripts \(acquireScript\)/, { acquireScript: (s) => s })
  refused([{ isCluster: true, options: {}, startupNodes: [] }], /no startup nodes/)
  assert.doesNotThrow(() => new Redlock([new Client({ tls: {} })]))
  assert.throws(() => new Redlock([42]), TypeError)
  assert.throws(() => new Redlock([]), { message: 'Redlock must be instantiated with at least one redis client.' })
})

test('quit() leaves the caller\'s clients open, refuses new locks, and release still works', async () => {
  const redlock = new Redlock([redisA, redisB, redisC])
  const lock = await redlock.acquire(['q'], 5000)
  await redlock.quit()
  assert.equal(redisA.quitCalls + redisB.quitCalls + redisC.quitCalls, 0)
  await assert.rejects(redlock.acquire(['q2'], 1000), { code: 'QL_INVALID', message: /quit/ })
  await assert.rejects(lock.extend(1000), { code: 'QL_INVALID' })
  await lock.release()
  assert.deepEqual(await valuesOn(cluster, 'q'), [null, null, null])
})

test('one server given twice counts once, with a warning', async () => {
  const twin = new Client(redisA.options)
  const warnings = await warningsDuring('QL_W_DUPLICATE_NODE', async () => {
    const lock = await new Redlock([redisA, twin, redisB]).acquire(['twice'], 2000)
    await lock.release()
  })
  assert.equal(warnings.length, 1)
})

test('an ioredis Cluster is one member: its startup nodes and credentials become a redis+cluster:// URL', async () => {
  const rc = startCluster(0, 'none', { redisCluster: 3 })
  try {
    const seeds = rc.redisCluster.addrs.slice(0, 2).map(hostPort)
    const ioredisCluster = { isCluster: true, options: { redisOptions: { tls: undefined } }, startupNodes: seeds }
    const redlock = new Redlock([ioredisCluster], { retryCount: 0 })
    // Resources in different hash slots, all or nothing.
    const lock = await redlock.acquire(['{a}1', '{b}2', '{c}3'], 5000)
    await assert.rejects(redlock.acquire(['{c}3'], 1000), ExecutionError)
    const extended = await lock.extend(10_000)
    await extended.release()
    const again = await redlock.acquire(['{c}3'], 1000)
    await again.release()
    const wrong = { ...ioredisCluster, options: { redisOptions: { password: 'wrong' } } }
    await assert.rejects(new Redlock([wrong], { retryCount: 0 }).acquire(['x'], 1000), ExecutionError)
    assert.throws(() => new Redlock([{ ...ioredisCluster, options: { natMap: {} } }]), { code: 'QL_INVALID', message: /natMap/ })
  } finally {
    rc.stop()
  }
})

test('the fenced setting gives every lock a growing fencing token', async () => {
  const redlock = new Redlock([redisA, redisB, redisC], { fenced: true })
  const first = await redlock.acquire(['fenced'], 2000)
  await first.release()
  const second = await redlock.acquire(['fenced'], 2000)
  assert.equal(typeof first.token, 'bigint')
  assert.ok(second.token > first.token)
  await second.release()
  assert.equal((await new Redlock([redisA]).acquire(['plain'], 1000)).token, null)
})

test('node URLs are clients too', async () => {
  const redlock = new Redlock(cluster.urls)
  const lock = await redlock.acquire(['by-url'], 1000)
  await lock.release()
  await assert.rejects(redlock.acquire('not-an-array', 1000), TypeError)
})
