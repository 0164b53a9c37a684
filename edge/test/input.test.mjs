// Bad input gets a QuorumlockError with code QL_INVALID (never a crash), before anything is sent.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { Client, QuorumlockError } from '../src/api.js'
import { ioredisClients, quitAll, unique } from './harness.mjs'

let redis
let client

before(async () => {
  redis = ioredisClients()
  client = await Client.connect({ nodes: redis })
})

after(async () => {
  await client.close()
  await quitAll(redis)
})

const invalid = (e) => e instanceof QuorumlockError && e.code === 'QL_INVALID' && e.attempts === 0

test('bad client options are QL_INVALID', async () => {
  for (const options of [
    { nodes: redis, ttlMs: -1 },
    { nodes: redis, ttlMs: 'ten' },
    { nodes: redis, ttlMs: 1.5 },
    { nodes: redis, driftFactor: 0.7 },
    { nodes: redis, maxTtlMs: 0 },
    { nodes: redis, keyFormat: 'curly' },
    { nodes: redis, quarantine: 'maybe' },
    { nodes: redis, evictionCheck: true },
    { nodes: redis, requireQuorum: 'yes' },
    { nodes: redis, connectTimeoutMs: 0 },
    { nodes: redis, ttlMs: 120000 },
    { nodes: [] },
    { nodes: ['redis://127.0.0.1:6379'] },
    { nodes: [42] },
    { transport: { send() {} } },
    {},
  ]) {
    assert.throws(() => new Client(options), invalid, JSON.stringify(Object.keys(options)))
  }
  assert.throws(() => new Client(null), invalid)
  assert.throws(() => new Client(['redis://x']), invalid)
  await assert.rejects(Client.connect({ nodes: redis, retryCount: -2 }), invalid)
})

test('bad acquire arguments are QL_INVALID and send nothing', async () => {
  for (const [resources, options] of [
    ['', {}],
    [[], {}],
    [['ok', ''], {}],
    ['x'.repeat(1025), {}],
    [42, {}],
    [[{}], {}],
    [unique(), { ttlMs: 0 }],
    [unique(), { ttlMs: 70000 }],
    [unique(), { retryCount: 1.5 }],
    [unique(), { retryDelayMs: NaN }],
    [unique(), { autoExtend: 'yes' }],
    [unique(), { maxExtensions: -1 }],
    [unique(), { fenceCounterTtlMs: 1000 }],
    [unique(), { nodeTimeoutMs: 0 }],
    [unique(), { signal: 'stop' }],
    [unique(), 'options'],
  ]) {
    await assert.rejects(client.acquire(resources, options), invalid, JSON.stringify([String(resources).slice(0, 20), options]))
  }
  assert.throws(() => client.key(''), invalid)
})

test('bad lock calls are QL_INVALID', async () => {
  const lock = await client.acquire(unique(), { ttlMs: 2000 })
  await assert.rejects(lock.extend(-5), invalid)
  await assert.rejects(lock.extend('long'), invalid)
  await assert.rejects(lock.extend(600000), invalid)
  await lock.release()
  assert.throws(() => lock.setAutoExtend(true), invalid)
})

test('a closed client refuses new acquisitions', async () => {
  const c = await Client.connect({ nodes: redis })
  await c.close()
  await assert.rejects(c.acquire(unique()), invalid)
})
