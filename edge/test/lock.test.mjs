// The lock through ioredis against 5 real redis-server nodes: acquire, busy, release,
// several resources, extend, auto-extension and the lost signal, fencing tokens, abort,
// using() / await using, and per-node reports.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { Client, QuorumlockError } from '../src/api.js'
import { ioredisClients, quitAll, unique } from './harness.mjs'

let redis
let client
let other

before(async () => {
  redis = ioredisClients()
  // Node timeouts well above the default (ttl / 200): the test machine is shared and loaded.
  client = await Client.connect({ nodes: redis, requireQuorum: true, nodeTimeoutMs: 500 })
  other = await Client.connect({ nodes: redis, nodeTimeoutMs: 500 })
})

after(async () => {
  await client.close()
  await other.close()
  await quitAll(redis)
})

async function keysOn(name) {
  const key = Buffer.from(client.key(name)).toString()
  const found = await Promise.all(redis.map((r) => r.get(key)))
  return found
}

test('acquire writes one value on every node and release removes it', async () => {
  assert.equal(client.nodeCount, 5)
  assert.equal(client.quorum, 3)
  const name = unique()
  const lock = await client.acquire(name, { ttlMs: 5000 })
  assert.match(lock.value, /^[0-9a-f]{40}$/)
  assert.ok(lock.remainingMs > 4000 && lock.remainingMs <= 5000, `remaining ${lock.remainingMs}`)
  assert.ok(lock.isHeld)
  assert.equal(lock.attempts, 1)
  assert.equal(lock.nodes.length, 5)
  assert.ok(lock.nodes.filter((n) => n.kind === 'Ok').length >= 3)
  assert.equal(lock.token, null)
  const values = await keysOn(name)
  assert.ok(values.filter((v) => v === lock.value).length >= 3, `values ${values}`)
  const report = await lock.release()
  assert.ok(report.wasHeldByQuorum)
  assert.ok(report.releasedCount >= 3)
  assert.equal(report.nodes.length, 5)
  // The per-node report is made when first read, then the same frozen array.
  assert.ok(report.nodes.every((n) => n.kind === 'Released'), JSON.stringify(report.nodes))
  assert.equal(report.nodes, report.nodes)
  assert.ok(Object.isFrozen(report) && Object.isFrozen(report.nodes))
  assert.deepEqual(Object.keys(report).sort(), ['nodes', 'releasedCount', 'wasHeldByQuorum'])
  assert.deepEqual(await keysOn(name), [null, null, null, null, null])
  assert.equal(lock.remainingMs, 0)
  const again = await lock.release()
  assert.equal(again.releasedCount, report.releasedCount, 'idempotent')
})

test('scripts flushed from the nodes are sent whole again (NOSCRIPT)', async () => {
  const name = unique()
  const lock = await client.acquire([name, unique()], { ttlMs: 5000 })
  await Promise.all(redis.map((r) => r.script('FLUSH')))
  await lock.extend(5000)
  assert.ok(lock.remainingMs > 4000, `remaining ${lock.remainingMs}`)
  await Promise.all(redis.map((r) => r.script('FLUSH')))
  const report = await lock.release()
  assert.equal(report.releasedCount, 5)
  assert.ok(report.nodes.every((n) => n.kind === 'Released'), JSON.stringify(report.nodes))
  assert.deepEqual(await keysOn(name), [null, null, null, null, null])
})

test('a held resource is busy for another client, with per-node detail', async () => {
  const name = unique()
  const lock = await client.acquire(name, { ttlMs: 5000 })
  await assert.rejects(other.acquire(name, { ttlMs: 5000, retryCount: 0 }), (e) => {
    assert.ok(e instanceof QuorumlockError)
    assert.equal(e.code, 'QL_BUSY')
    assert.equal(e.attempts, 1)
    assert.equal(e.nodes.length, 5)
    assert.ok(e.nodes.filter((n) => n.kind === 'HeldByOther').length >= 3)
    assert.equal(e.attemptReports.length, 1)
    assert.match(e.message, /QL_BUSY/)
    return true
  })
  const started = performance.now()
  const waiting = other.acquire(name, { ttlMs: 5000, retryCount: 50, retryDelayMs: 20, retryJitterMs: 10 })
  await new Promise((r) => setTimeout(r, 100))
  await lock.release()
  const second = await waiting
  assert.ok(second.attempts > 1)
  assert.ok(performance.now() - started < 3000)
  await second.release()
})

test('several resources are taken all or nothing', async () => {
  const a = unique('a')
  const b = unique('b')
  const held = await client.acquire(b, { ttlMs: 5000 })
  await assert.rejects(other.acquire([a, b], { retryCount: 0 }), { code: 'QL_BUSY' })
  assert.deepEqual(await keysOn(a), [null, null, null, null, null], 'a failed attempt leaves no key')
  await held.release()
  const both = await other.acquire([b, a, a], { ttlMs: 5000 })
  assert.deepEqual(both.resources, [b, a, a])
  await both.release()
})

test('extend lengthens the deadline and counts; a released lock cannot be extended', async () => {
  const lock = await client.acquire(unique(), { ttlMs: 1000 })
  await new Promise((r) => setTimeout(r, 300))
  const before = lock.remainingMs
  await lock.extend(5000)
  assert.ok(lock.remainingMs > before + 3000, `${before} -> ${lock.remainingMs}`)
  assert.equal(lock.extensions, 1)
  assert.equal(lock.extendNodes.length, 5)
  await lock.release()
  await assert.rejects(lock.extend(), { code: 'QL_INVALID' })
})

test('auto-extension keeps a lock past its TTL; deleting the keys fires the lost signal', async () => {
  const name = unique()
  const lock = await client.acquire(name, { ttlMs: 600, autoExtend: true })
  assert.ok(lock.autoExtending)
  await new Promise((r) => setTimeout(r, 1300))
  assert.ok(lock.isHeld, 'still held after two TTLs')
  assert.ok(lock.extensions >= 2, `extensions ${lock.extensions}`)
  const lost = new Promise((resolve) => lock.signal.addEventListener('abort', () => resolve(lock.signal.reason)))
  const key = Buffer.from(client.key(name)).toString()
  await Promise.all(redis.map((r) => r.del(key)))
  const reason = await lost
  assert.ok(reason instanceof QuorumlockError)
  assert.equal(reason.code, 'QL_LOST')
  assert.equal(reason.lostReason, 'Expired')
  assert.equal(lock.lostError().code, 'QL_LOST')
  assert.equal(lock.isHeld, false)
  await lock.release()
})

test('an expired lock is lost, never revived by extend', async () => {
  const lock = await client.acquire(unique(), { ttlMs: 200 })
  await new Promise((r) => setTimeout(r, 260))
  await assert.rejects(lock.extend(1000), (e) => e.code === 'QL_LOST' && e.lostReason === 'Expired')
  assert.ok(lock.signal.aborted)
})

test('max_extensions caps the extensions', async () => {
  const lock = await client.acquire(unique(), { ttlMs: 5000, maxExtensions: 1 })
  await lock.extend()
  await assert.rejects(lock.extend(), { code: 'QL_EXT_LIMIT' })
  await lock.release()
})

test('fenced locks carry strictly increasing tokens', async () => {
  const name = unique()
  const first = await client.acquire(name, { fenced: true, ttlMs: 5000 })
  assert.equal(typeof first.token, 'bigint')
  await first.release()
  const another = unique()
  const second = await other.acquire([name, another], { fenced: true, ttlMs: 5000 })
  assert.equal(second.tokens.length, 2)
  const mine = second.tokens[[name, another].sort().indexOf(name)]
  assert.ok(mine > first.token, `${mine} > ${first.token}`)
  await second.release()
})

test('an AbortSignal cancels a waiting acquire and leaves no key behind', async () => {
  const name = unique()
  const lock = await client.acquire(name, { ttlMs: 5000 })
  const ac = new AbortController()
  const waiting = other.acquire(name, { retryCount: Infinity, retryDelayMs: 20, signal: ac.signal })
  setTimeout(() => ac.abort(), 100)
  await assert.rejects(waiting, (e) => e.code === 'QL_CANCELLED' && e.attempts >= 1)
  await assert.rejects(other.acquire(name, { signal: AbortSignal.abort() }), { code: 'QL_CANCELLED' })
  const values = await keysOn(name)
  assert.ok(values.every((v) => v === null || v === lock.value), 'only the holder has keys')
  await lock.release()
})

test('using() releases after the body and await using releases at scope end', async () => {
  const name = unique()
  const seen = await client.using(name, { ttlMs: 3000 }, async (lock) => {
    assert.ok(lock.autoExtending)
    return lock.value
  })
  assert.match(seen, /^[0-9a-f]{40}$/)
  assert.deepEqual(await keysOn(name), [null, null, null, null, null])
  {
    const lock = await client.acquire(name, { ttlMs: 3000 })
    await lock[Symbol.asyncDispose]()
  }
  assert.deepEqual(await keysOn(name), [null, null, null, null, null])
})

test('a node that does not answer in time is reported as a timeout, and a quorum still wins', async () => {
  const paused = redis[4]
  const url = paused.options
  const blocker = ioredisClients([`redis://${url.host}:${url.port}`])[0]
  const sleeping = blocker.call('DEBUG', 'SLEEP', '0.5').catch(() => {})
  await new Promise((r) => setTimeout(r, 30))
  try {
    const lock = await client.acquire(unique(), { ttlMs: 5000, nodeTimeoutMs: 50 })
    const kinds = lock.nodes.map((n) => n.kind)
    assert.ok(['Pending', 'Timeout'].includes(kinds[4]), `kinds ${kinds}`)
    await lock.release()
    const busy = await client.acquire(unique(), { ttlMs: 5000, nodeTimeoutMs: 50 })
    await busy.release()
  } finally {
    await sleeping
    await quitAll([blocker])
  }
})

async function connections(r) {
  return (await r.client('LIST')).split('\n').filter(Boolean).length
}

test('a waiter wakes at a release notice, not after its retry delay, and closes its subscriber', async () => {
  const name = unique()
  const before = await connections(redis[0])
  const lock = await client.acquire(name, { ttlMs: 5000 })
  const waiting = other.acquire(name, { ttlMs: 5000, retryCount: 3, retryDelayMs: 3000, retryJitterMs: 0 })
  await new Promise((r) => setTimeout(r, 400))
  const released = performance.now()
  await lock.release()
  const second = await waiting
  const woke = performance.now() - released
  assert.ok(woke < 1500, `woke ${woke.toFixed(0)} ms after the release (retry delay 3000 ms)`)
  assert.equal(second.attempts, 1, 'the release granted it the key: no second attempt')
  await second.release()
  // The notice connection lingers a second after the last wait (for the next one), then closes.
  let now
  for (let i = 0; i < 30 && (now = await connections(redis[0])) !== before; i++) {
    await new Promise((r) => setTimeout(r, 100))
  }
  assert.equal(now, before, 'the subscriber connection is closed again')
})

async function subscribes(r) {
  const m = /cmdstat_subscribe:calls=(\d+)/.exec(await r.info('commandstats'))
  return m ? Number(m[1]) : 0
}

test('waits one after another reuse the notice connection and its subscriptions; close() ends them', async () => {
  const name = unique()
  const mine = await Client.connect({ nodes: redis, nodeTimeoutMs: 500 })
  try {
    // The other clients' notice connections from earlier tests linger a second, then close.
    await new Promise((r) => setTimeout(r, 1300))
    const before = await connections(redis[0])
    let subscribed
    for (let round = 0; round < 3; round++) {
      const lock = await client.acquire(name, { ttlMs: 5000 })
      const waiting = mine.acquire(name, { ttlMs: 5000, retryCount: 3, retryDelayMs: 3000, retryJitterMs: 0 })
      await new Promise((r) => setTimeout(r, 300))
      await lock.release()
      await (await waiting).release()
      if (round === 0) subscribed = await subscribes(redis[0])
    }
    assert.equal(await subscribes(redis[0]), subscribed, 'no SUBSCRIBE for the second and third waits')
    assert.equal(await connections(redis[0]), before + 1, 'one notice connection, still open between waits')
    await mine.close()
    await new Promise((r) => setTimeout(r, 100))
    assert.equal(await connections(redis[0]), before, 'close() ended the notice connection at once')
  } finally {
    await mine.close()
  }
})

/** The line of waiters of resource `name`, and a reader of it on every node. */
function line (name) {
  const queue = `${Buffer.from(client.key(name)).toString()}:q`
  return { queue, lines: () => Promise.all(redis.map((r) => r.zrange(queue, 0, -1))) }
}
const pause = (ms) => new Promise((r) => setTimeout(r, ms))
/** Waits whose retries come long after any notice. */
const slow = { ttlMs: 5000, retryCount: 3, retryDelayMs: 5000, retryJitterMs: 0 }

test('waiters queue in the key line; a release wakes the first by name; ended calls leave the line', async () => {
  const name = unique('queue')
  const { queue, lines } = line(name)
  const holder = await other.acquire(name, { ttlMs: 5000 })
  // Two waiters of one client, then one of another client that gives up.
  const first = client.acquire(name, slow)
  await pause(400)
  const second = client.acquire(name, slow)
  await pause(400)
  const ac = new AbortController()
  const third = other.acquire(name, { ...slow, signal: ac.signal })
  await pause(400)
  const queued = await lines()
  const [a, b, c] = queued[0]
  for (const line of queued) assert.deepEqual(line, [a, b, c], 'one line, in the order they came, on every node')
  const id = /^([0-9a-f]{16})\.(\d+)$/
  const [, ca, na] = a.match(id)
  const [, cb, nb] = b.match(id)
  const [, cc] = c.match(id)
  assert.ok(ca === cb && ca !== cc && Number(na) < Number(nb), `ids ${a} ${b} ${c}`)
  // A call that ends leaves the line before it returns (here: cancelled).
  ac.abort()
  await assert.rejects(third, { code: 'QL_CANCELLED' })
  for (const line of await lines()) assert.deepEqual(line, [a, b])
  // The release names the first waiter: it gets the lock, the second is not woken.
  const released = performance.now()
  await holder.release()
  const lockA = await first
  assert.ok(performance.now() - released < 1500, 'woken by the release, not after its retry delay')
  assert.equal(lockA.attempts, 1, 'granted by the release')
  for (const line of await lines()) assert.deepEqual(line, [b], 'the first waiter is out of the line')
  const stillWaiting = await Promise.race([second.then(() => false), pause(300).then(() => true)])
  assert.ok(stillWaiting, 'the second waiter waits for its turn')
  await lockA.release()
  const lockB = await second
  assert.equal(lockB.attempts, 1, 'granted by the second release: the first named the other waiter')
  await lockB.release()
  assert.deepEqual(await Promise.all(redis.map((r) => r.exists(queue))), [0, 0, 0, 0, 0], 'no line is left')
  const regs = queue.replace(/:q$/, ':g')
  assert.deepEqual(await Promise.all(redis.map((r) => r.exists(regs))), [0, 0, 0, 0, 0], 'no registration is left')
})

test('a release grants the key to the first waiter in line: one value on every node, no attempt of its own', async () => {
  const name = unique('grant')
  const key = Buffer.from(client.key(name)).toString()
  const holder = await other.acquire(name, { ttlMs: 5000 })
  const waiting = client.acquire(name, slow)
  await pause(400)
  const regs = await Promise.all(redis.map((r) => r.hgetall(`${key}:g`)))
  const registered = regs.map((h) => Object.values(h))
  for (const r of registered) assert.equal(r.length, 1, 'one registration on every node')
  // `<node ms>:<ttl>:<n>:<value>`
  const value = registered[0][0].split(':')[3]
  assert.match(registered[0][0], /^\d+:5000:1:[0-9a-f]{40}$/)
  await holder.release()
  const lock = await waiting
  assert.equal(lock.attempts, 1)
  assert.deepEqual(await keysOn(name), Array(5).fill(value), 'the registered value on every node')
  assert.equal(lock.value, value)
  // ttl 5000 - drift 52 from the registration, 400 ms before the grant.
  assert.ok(lock.remainingMs < 5000 - 52 - 400, `valid from the registration (${lock.remainingMs} ms left)`)
  await lock.release()
  assert.deepEqual(await keysOn(name), Array(5).fill(null))
  for (const end of [':q', ':g']) {
    assert.deepEqual(await Promise.all(redis.map((r) => r.exists(key + end))), [0, 0, 0, 0, 0])
  }
})

test('grants short of a quorum go back before the waiter attempts, and it wins by its attempt', async () => {
  const name = unique('split')
  const key = Buffer.from(client.key(name)).toString()
  const holder = await other.acquire(name, { ttlMs: 5000 })
  const waiting = client.acquire(name, { ...slow, retryDelayMs: 1500 })
  await pause(400)
  const value = Object.values(await redis[0].hgetall(`${key}:g`))[0].split(':')[3]
  // A dead waiter registered ahead of it on three nodes: the release grants those to it.
  const dead = 'ffffffffffffffff.1'
  const now = Date.now()
  await Promise.all(redis.slice(0, 3).map(async (r) => {
    const first = Number((await r.zrange(`${key}:q`, 0, 0, 'WITHSCORES'))[1])
    await r.zadd(`${key}:q`, first - 1, dead)
    await r.hset(`${key}:g`, dead, `${now}:5000:1:${'d'.repeat(40)}`)
  }))
  await holder.release()
  await pause(300)
  assert.deepEqual(await keysOn(name), [...Array(3).fill('d'.repeat(40)), value, value], 'two grants: short of a quorum')
  // Its retry (1.5 s after its first attempt) gives them back first, then loses to the dead
  // waiter's keys and cleans up.
  await pause(1600)
  const after = await keysOn(name)
  assert.ok(after.slice(3).every((v) => v !== value), `the minority grants went back: ${after}`)
  await Promise.all(redis.slice(0, 3).map((r) => r.del(key)))
  const lock = await waiting
  assert.ok(lock.attempts >= 2, `won by an attempt (${lock.attempts})`)
  assert.notEqual(lock.value, value)
  assert.deepEqual(await keysOn(name), Array(5).fill(lock.value))
  await lock.release()
})

test('a waiter named by a release whose attempt loses stands first in line again', async () => {
  const name = unique('requeue')
  const key = Buffer.from(client.key(name)).toString()
  const { lines } = line(name)
  const holder = await other.acquire(name, { ttlMs: 5000 })
  const ahead = other.acquire(name, slow)
  await pause(400)
  const behind = client.acquire(name, slow)
  await pause(400)
  const [b, a] = (await lines())[0]
  for (const line of await lines()) assert.deepEqual(line, [b, a])
  // Notices naming the second waiter, as releases that popped it would send: two (below the
  // quorum) that it only notes, then a third that wakes it; it loses to the holder and stands
  // first where it was named. (Its place elsewhere is the one it had: a notice arriving after
  // its woken attempt, as under load a fourth and fifth might, counts only at its next one.)
  const [clientA] = a.split('.')
  const tell = (nodes) => Promise.all(nodes.map((r) => r.publish(`${key}:released:${clientA}`, a)))
  await tell(redis.slice(0, 2))
  await pause(300)
  await tell(redis.slice(2, 3))
  // Woken only once all three were heard: its requeue covers exactly those nodes. Up to 5 s
  // for the attempt and the marks, on a loaded machine.
  let after = await lines()
  for (let i = 0; i < 50 && !after.slice(0, 3).every((l) => l[0] === a); i++) {
    await pause(100)
    after = await lines()
  }
  for (const line of after.slice(0, 3)) assert.deepEqual(line, [a, b], 'first again where it was named')
  for (const line of after.slice(3)) assert.deepEqual(line, [b, a], 'in its place where nothing named it')
  await holder.release()
  const lockA = await behind
  // Its first marks registered it: the release grants it the key on the three nodes where it
  // is first, a quorum, with no third attempt.
  assert.equal(lockA.attempts, 2)
  await lockA.release()
  await (await ahead).release()
  assert.deepEqual(await Promise.all(redis.map((r) => r.exists(`${key}:q`))), [0, 0, 0, 0, 0])
})
