// Acquire, busy, extend, release, [Symbol.asyncDispose] and mutual exclusion on 5 real nodes.
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'

import { Client, QuorumlockError } from '../index.mjs'
import { settledPttl, sleep, startCluster, valuesOn } from './harness.mjs'

// A generous node timeout keeps these tests steady on a loaded machine (as in core's tests).
let cluster
let client

before(async () => {
  cluster = startCluster(5)
  client = await Client.connect({ nodes: cluster.urls, nodeTimeoutMs: 250 })
})

after(async () => {
  await client.close()
  cluster.stop()
})

test('acquire writes the value on a quorum and release deletes it', async () => {
  const lock = await client.acquire('invoice:1', { ttlMs: 5000 })
  assert.match(lock.value, /^[0-9a-f]{40}$/)
  assert.equal(lock.ttlMs, 5000)
  assert.equal(lock.attempts, 1)
  assert.ok(lock.isHeld)
  assert.ok(lock.remainingMs > 4000 && lock.remainingMs <= 5000, `${lock.remainingMs}`)
  assert.deepEqual(lock.resources, ['invoice:1'])
  assert.equal(lock.nodes.length, 5)
  assert.deepEqual(lock.attemptReports, [lock.nodes])
  assert.equal(lock.extendNodes, null)
  await lock.extend(6000)
  assert.ok(lock.extendNodes.filter((n) => n.kind === 'Ok').length >= 3, JSON.stringify(lock.extendNodes))
  const key = client.key('invoice:1').toString()
  assert.equal(key, 'quorumlock:{invoice:1}')
  await sleep(50) // replies still in flight at the decision land on the remaining nodes
  const values = await valuesOn(cluster, key)
  assert.ok(values.filter((v) => v === lock.value).length >= 3, JSON.stringify(values))
  const report = await lock.release()
  assert.ok(report.wasHeldByQuorum)
  assert.ok(report.releasedCount >= 3)
  // The per-node entries are built when first read, then the same frozen array each time.
  assert.equal(report.nodes.length, 5)
  assert.deepEqual(report.nodes.map((n) => n.index), [0, 1, 2, 3, 4])
  assert.equal(report.nodes.filter((n) => n.kind === 'Released').length, report.releasedCount)
  assert.equal(report.nodes, report.nodes)
  assert.ok(Object.isFrozen(report) && Object.isFrozen(report.nodes) && Object.isFrozen(report.nodes[0]))
  assert.deepEqual(Object.keys(report), ['releasedCount', 'wasHeldByQuorum', 'nodes'])
  assert.equal(JSON.parse(JSON.stringify(report)).nodes.length, 5)
  assert.deepEqual(await valuesOn(cluster, key), [null, null, null, null, null])
  assert.equal(lock.remainingMs, 0)
  assert.equal(lock.isHeld, false)
  assert.equal((await lock.release()).releasedCount, report.releasedCount, 'release is idempotent')
})

test('a held resource is busy for another owner', async () => {
  const lock = await client.acquire(['a', 'b'], { ttlMs: 5000 })
  await assert.rejects(client.acquire('b', { ttlMs: 1000, retryCount: 1, retryDelayMs: 10, retryJitterMs: 0 }), (e) => {
    assert.ok(e instanceof QuorumlockError)
    assert.ok(e instanceof Error)
    assert.equal(e.code, 'QL_BUSY')
    assert.equal(e.attempts, 2)
    assert.equal(e.nodes.length, 5)
    assert.ok(e.nodes.filter((n) => n.kind === 'HeldByOther').length >= 3, JSON.stringify(e.nodes))
    assert.ok(Object.isFrozen(e.nodes[0]))
    return true
  })
  await lock.release()
  const again = await client.acquire('b', { ttlMs: 1000 })
  await again.release()
})

test('extend lengthens the keys and the validity', async () => {
  const lock = await client.acquire('ext', { ttlMs: 1000 })
  assert.equal(await lock.extend(8000), lock)
  assert.ok(lock.remainingMs > 7000, `${lock.remainingMs}`)
  assert.equal(lock.extensions, 1)
  const pttl = await settledPttl(cluster, 0, client.key('ext').toString(), (t) => t > 7000)
  assert.ok(pttl > 7000, `${pttl}`)
  await lock.release()
  await assert.rejects(lock.extend(1000), { code: 'QL_INVALID' })
})

test('[Symbol.asyncDispose] releases the lock', async () => {
  const lock = await client.acquire('dispose', { ttlMs: 5000 })
  assert.equal(typeof lock[Symbol.asyncDispose], 'function')
  await lock[Symbol.asyncDispose]()
  assert.equal(lock.isHeld, false)
  assert.deepEqual(await valuesOn(cluster, client.key('dispose').toString()), [null, null, null, null, null])
})

test('disposing a client releases its locks and refuses new acquisitions', async () => {
  const other = await Client.connect({ nodes: cluster.urls, nodeTimeoutMs: 250 })
  const lock = await other.acquire('client-dispose', { ttlMs: 5000 })
  await other[Symbol.asyncDispose]()
  assert.equal(lock.isHeld, false)
  await assert.rejects(other.acquire('x'), { code: 'QL_INVALID' })
  const mine = await client.acquire('client-dispose', { ttlMs: 1000, retryCount: 0 })
  await mine.release()
})

test('concurrent acquisitions never overlap', async () => {
  const clients = await Promise.all([1, 2, 3, 4].map(() => Client.connect({ nodes: cluster.urls, nodeTimeoutMs: 250 })))
  let inside = 0
  let maxInside = 0
  let done = 0
  const worker = async (c) => {
    for (let i = 0; i < 5; i++) {
      await c.using('counter', { ttlMs: 2000, retryCount: Infinity, retryDelayMs: 5, retryJitterMs: 10 }, async () => {
        inside += 1
        maxInside = Math.max(maxInside, inside)
        await sleep(5)
        inside -= 1
        done += 1
      })
    }
  }
  await Promise.all(clients.flatMap((c) => [worker(c), worker(c)]))
  assert.equal(done, 40)
  assert.equal(maxInside, 1)
  await Promise.all(clients.map((c) => c.close()))
})
