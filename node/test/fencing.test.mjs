// Fencing tokens (bigint), the quarantine / eviction-check client settings and ping(), on real nodes.
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'

import { Client, FENCE_CHECK_SCRIPT, QuorumlockError } from '../index.mjs'
import { startCluster } from './harness.mjs'

let durable
let volatile
let client

before(async () => {
  durable = startCluster(3)
  volatile = startCluster(3, 'none')
  client = await Client.connect({ nodes: durable.urls, nodeTimeoutMs: 250 })
})

after(async () => {
  await client.close()
  durable.stop()
  volatile.stop()
})

test('a fenced lock carries a bigint token above 2^50 that increases', async () => {
  const first = await client.acquire('fence:1', { fenced: true })
  assert.equal(typeof first.token, 'bigint')
  assert.ok(first.token > 2n ** 50n, `${first.token}`)
  assert.deepEqual(first.tokens, [first.token])
  // The counter on the nodes holds exactly the token: no rounding through a double.
  const stored = await Promise.all([0, 1, 2].map((i) => durable.command(i, 'GET', 'quorumlock:{fence:1}:fence')))
  assert.ok(stored.includes(first.token.toString()), JSON.stringify(stored))
  await first.release()
  const second = await client.acquire('fence:1', { fenced: true })
  assert.ok(second.token > first.token, `${second.token} <= ${first.token}`)
  await second.release()
  const plain = await client.acquire('fence:1')
  assert.equal(plain.token, null)
  assert.equal(plain.tokens, null)
  await plain.release()
})

test('multi-resource tokens come one per resource, and client defaults can fence', async () => {
  const c = await Client.connect({ nodes: durable.urls, nodeTimeoutMs: 250, fenced: true, fenceCounterTtlMs: 3_600_000 })
  const lock = await c.acquire(['fence:b', 'fence:a'])
  assert.equal(lock.tokens.length, 2)
  assert.ok(lock.tokens.every((t) => typeof t === 'bigint' && t > 2n ** 50n))
  assert.equal(lock.token, lock.tokens[0])
  await c.close()
})

test('fence options and client settings are checked', async () => {
  await assert.rejects(client.acquire('fence:1', { fenced: 'yes' }), TypeError)
  await assert.rejects(client.acquire('fence:1', { fenced: true, fenceCounterTtlMs: -1 }), RangeError)
  await assert.rejects(Client.connect({ nodes: durable.urls, quarantine: 'maybe' }), RangeError)
  await assert.rejects(Client.connect({ nodes: durable.urls, evictionCheck: true }), TypeError)
  assert.match(FENCE_CHECK_SCRIPT, /redis\.call/)
})

test('the default quarantine refuses fresh non-durable nodes', async () => {
  const c = await Client.connect({ nodes: volatile.urls, nodeTimeoutMs: 250 })
  await assert.rejects(c.acquire('fence:q', { retryCount: 0 }), (e) => {
    assert.ok(e instanceof QuorumlockError)
    assert.equal(e.code, 'QL_QUORUM')
    assert.deepEqual(new Set(e.nodes.map((n) => n.kind)), new Set(['Quarantined']))
    return true
  })
  await c.close()
})

test('quarantine off locks fresh non-durable nodes', async () => {
  const c = await Client.connect({
    nodes: volatile.urls,
    nodeTimeoutMs: 250,
    quarantine: 'off',
    quarantineMarginMs: 1000,
    evictionCheck: 'warn',
  })
  const lock = await c.acquire('fence:q', { retryCount: 0 })
  assert.ok(lock.isHeld)
  await lock.release()
  await c.close()
})

test('ping reports every node', async () => {
  const infos = await client.ping()
  assert.deepEqual(infos.map((i) => i.index), [0, 1, 2])
  for (const info of infos) {
    assert.equal(info.kind, 'Ok')
    assert.ok(info.latencyMs >= 0 && info.uptimeMs >= 0 && typeof info.version === 'string')
    assert.ok(info.durable)
    assert.deepEqual(info.persistence, { appendonly: true, appendfsync: 'always', noAppendfsyncOnRewrite: false })
  }
  const c = await Client.connect({ nodes: volatile.urls, quarantine: 'off' })
  assert.ok((await c.ping()).every((i) => !i.durable))
  await c.close()
})
