// Bad input: TypeError / RangeError before anything is sent, or a coded QuorumlockError;
// never a crash.
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'

import { Client, QuorumlockError } from '../index.mjs'
import { settledValuesOn, startCluster, valuesOn } from './harness.mjs'

// A generous node timeout keeps these tests steady on a loaded machine (as in core's tests).
let cluster
let client

before(async () => {
  cluster = startCluster(3)
  client = await Client.connect({ nodes: cluster.urls, nodeTimeoutMs: 250 })
})

after(async () => {
  await client.close()
  cluster.stop()
})

test('wrong types are TypeErrors', async () => {
  const badResources = [42, null, undefined, {}, [1], ['a', null], [Symbol('s')]]
  for (const [i, resources] of badResources.entries()) {
    await assert.rejects(client.acquire(resources), TypeError, `bad resources #${i}`)
  }
  for (const options of [null, 5, 'ttl', [], { ttlMs: '100' }, { autoExtend: 1 }, { signal: {} }, { ttl: 100 }]) {
    await assert.rejects(client.acquire('r', options), TypeError, JSON.stringify(options))
  }
  await assert.rejects(client.using('r', { ttlMs: 100 }), TypeError)
  const lock = await client.acquire('typed', { ttlMs: 2000 })
  await assert.rejects(lock.extend('1000'), TypeError)
  assert.throws(() => lock.setAutoExtend('yes'), TypeError)
  await lock.release()
  assert.throws(() => new Client('redis://x'), TypeError)
  assert.throws(() => new Client({ nodes: [1] }), TypeError)
  assert.throws(() => new Client({ nodes: cluster.urls, keyPrefix: 7 }), TypeError)
  assert.throws(() => new Client({ nodes: cluster.urls, retries: 3 }), TypeError)
})

test('out-of-range numbers are RangeErrors', async () => {
  for (const ttlMs of [-1, 0, NaN, 1.5, Infinity, 2 ** 60]) {
    await assert.rejects(client.acquire('r', { ttlMs }), RangeError, String(ttlMs))
  }
  for (const retryCount of [-1, 0.5, NaN, 2 ** 32]) {
    await assert.rejects(client.acquire('r', { retryCount }), RangeError, String(retryCount))
  }
  await assert.rejects(client.acquire('r', { retryDelayMs: -5 }), RangeError)
  const lock = await client.acquire('ranged', { ttlMs: 2000 })
  await assert.rejects(lock.extend(-1), RangeError)
  await assert.rejects(lock.extend(NaN), RangeError)
  await lock.release()
  assert.throws(() => new Client({ nodes: cluster.urls, driftFactor: 0.7 }), RangeError)
  assert.throws(() => new Client({ nodes: cluster.urls, maxTtlMs: -1 }), RangeError)
  assert.deepEqual(await valuesOn(cluster, client.key('r').toString()), [null, null, null])
})

test('range errors are the engine checks: its message, by Node key, and code QL_INVALID', async () => {
  const engine = (pattern) => (e) => e instanceof RangeError && e.code === 'QL_INVALID' && pattern.test(e.message)
  await assert.rejects(client.acquire('r', { ttlMs: 0 }), engine(/^ttlMs must be at least 1 ms \(got 0 ms\)$/))
  await assert.rejects(client.acquire('r', { retryCount: 0.5 }), engine(/^retryCount must be a whole number/))
  await assert.rejects(client.acquire('r', { value: 'short' }), engine(/16 printable/))
  assert.throws(() => new Client({ nodes: cluster.urls, quarantine: 'maybe' }), engine(/^quarantine must be one of on, strict, off/))
  assert.throws(() => new Client({ nodes: cluster.urls, reprobeEveryMs: 0 }), engine(/^reprobeEveryMs must be at least 1 ms/))
  // Every option of the engine's table is accepted, with its Node key.
  const all = await Client.connect({ nodes: cluster.urls, driftConstantMs: 3, reprobeEveryMs: 30000, quarantineMarginMs: 0, nodeTimeoutMs: 250, retryCount: Infinity, waitMs: 5000 })
  await (await all.acquire('all-options', { retryCount: 0 })).release()
  await all.close()
})

test('a given lock value, per acquisition only', async () => {
  const value = 'my-own-value-0123456789'
  const lock = await client.acquire('given', { ttlMs: 2000, value })
  assert.equal(lock.value, value)
  assert.deepEqual(await settledValuesOn(cluster, client.key('given').toString(), value), [value, value, value])
  await lock.release()
  await assert.rejects(client.acquire('given', { value: 42 }), TypeError)
  assert.throws(() => new Client({ nodes: cluster.urls, value }), (e) => e instanceof TypeError && /value/.test(e.message))
})

test('values the engine refuses are QL_INVALID errors', async () => {
  const invalid = (e) => e instanceof QuorumlockError && e.code === 'QL_INVALID' && e.attempts === 0
  await assert.rejects(client.acquire([]), invalid)
  await assert.rejects(client.acquire(''), invalid)
  await assert.rejects(client.acquire('x'.repeat(1025)), invalid)
  await assert.rejects(client.acquire('r', { ttlMs: 61000 }), invalid)
  await assert.rejects(client.acquire('r', { ttlMs: 2 }), invalid)
  await assert.rejects(Client.connect({ nodes: [] }), invalid)
  await assert.rejects(Client.connect({ nodes: ['http://localhost:1'] }), invalid)
  // One server listed twice counts once, with a QL_W_DUPLICATE_NODE warning (not refused).
  await Client.connect({ nodes: [cluster.urls[0], cluster.urls[0]] })
  const unconnected = new Client({ nodes: [] })
  assert.throws(() => unconnected.quorum, invalid)
  await assert.rejects(unconnected.acquire('r'), invalid)
})

test('binary resource names work', async () => {
  const name = Buffer.from([0xff, 0x00, 0x01])
  const lock = await client.acquire([name, 'text'], { ttlMs: 2000 })
  assert.deepEqual(lock.resources, [name, 'text'])
  assert.deepEqual(client.key(name), Buffer.concat([Buffer.from('quorumlock:{'), name, Buffer.from('}')]))
  await lock.release()
})

test('connect with requireQuorum fails with a connection code when nodes are down', async () => {
  await assert.rejects(
    Client.connect({ nodes: ['redis://127.0.0.1:1', 'redis://127.0.0.1:2', 'redis://127.0.0.1:3'], requireQuorum: true, connectTimeoutMs: 300 }),
    (e) => {
      assert.equal(e.code, 'QL_CONNECTION')
      assert.equal(e.nodes.length, 3)
      assert.ok(e.nodes.every((n) => n.category === 'Connection'), JSON.stringify(e.nodes))
      return true
    },
  )
})
