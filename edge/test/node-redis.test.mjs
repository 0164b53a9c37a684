// The same engine through node-redis clients: acquire, busy, extend, release, fencing, and
// a Redis error reply mapped to its node kind.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { Client, transports } from '../src/api.js'
import { nodeRedisClients, quitAll, unique } from './harness.mjs'

let redis
let client

before(async () => {
  redis = await nodeRedisClients()
  client = await Client.connect({ nodes: redis, requireQuorum: true, nodeTimeoutMs: 500 })
})

after(async () => {
  await client.close()
  await quitAll(redis)
})

test('node-redis clients lock, exclude, extend and release', async () => {
  assert.equal(client.addresses.length, 5)
  assert.match(client.addresses[0], /^127\.0\.0\.1:\d+\/0$/)
  const name = unique('nr')
  const lock = await client.acquire(name, { ttlMs: 2000 })
  await assert.rejects(client.acquire(name, { retryCount: 0 }), { code: 'QL_BUSY' })
  await lock.extend(4000)
  assert.ok(lock.remainingMs > 3000)
  const key = Buffer.from(client.key(name)).toString()
  const values = await Promise.all(redis.map((r) => r.get(key)))
  assert.ok(values.filter((v) => v === lock.value).length >= 3)
  const report = await lock.release()
  assert.ok(report.wasHeldByQuorum)
  const fenced = await client.acquire(name, { fenced: true })
  assert.equal(typeof fenced.token, 'bigint')
  await fenced.release()
})

test('a Redis error reply becomes its node kind (WRONGTYPE: Misconfigured category)', async () => {
  const name = unique('nr-wrongtype')
  const key = Buffer.from(client.key(name)).toString()
  await Promise.all(redis.map((r) => r.sendCommand(['LPUSH', key, 'x'])))
  try {
    await assert.rejects(client.acquire([name, unique('nr-other')], { retryCount: 0 }), (e) => {
      assert.ok(['QL_QUORUM', 'QL_BUSY'].includes(e.code), e.code)
      assert.ok(e.nodes.some((n) => n.kind === 'WrongType' || n.kind === 'HeldByOther'), JSON.stringify(e.nodes))
      return true
    })
  } finally {
    await Promise.all(redis.map((r) => r.del(key)))
  }
})

test('a node adapter can be given explicitly', async () => {
  const c = await Client.connect({ transport: transports.transport(redis.map(transports.nodeRedisNode)) })
  const lock = await c.acquire(unique('nr-explicit'))
  await lock.release()
  await c.close()
})

test('node-redis: a release notice wakes a waiter before its retry delay', async () => {
  const name = unique('nr-notify')
  const lock = await client.acquire(name, { ttlMs: 5000 })
  const waiting = client.acquire(name, { ttlMs: 5000, retryCount: 3, retryDelayMs: 3000, retryJitterMs: 0 })
  await new Promise((r) => setTimeout(r, 400))
  const released = performance.now()
  await lock.release()
  const second = await waiting
  const woke = performance.now() - released
  assert.ok(woke < 1500, `woke ${woke.toFixed(0)} ms after the release`)
  await second.release()
})
