// The Upstash REST transport (plain fetch) against a local fixture speaking the REST protocol
// in front of the real redis-server nodes; and a custom send(node, argv) hook.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import net from 'node:net'
import { Client, ReplyError, TransportError } from '../src/api.js'
import { NODE_URLS, ioredisClients, quitAll, startRestFixture, unique } from './harness.mjs'

const TOKEN = 'test-token-0123456789'
let fixtures
let client

before(async () => {
  fixtures = await Promise.all(NODE_URLS.map((u) => startRestFixture(u, TOKEN)))
  client = await Client.connect({
    nodes: fixtures.map((f) => ({ url: f.url, token: TOKEN })),
    requireQuorum: true,
    nodeTimeoutMs: 500,
  })
})

after(async () => {
  await client.close()
  await Promise.all(fixtures.map((f) => f.close()))
})

test('REST nodes lock, exclude, extend, fence and release', async () => {
  assert.match(client.addresses[0], /^http:\/\/127\.0\.0\.1:\d+$/)
  const name = unique('rest')
  const lock = await client.acquire([name, unique('rest-b')], { ttlMs: 3000 })
  await assert.rejects(client.acquire(name, { retryCount: 0 }), { code: 'QL_BUSY' })
  await lock.extend(5000)
  assert.ok(lock.remainingMs > 4000)
  const report = await lock.release()
  assert.equal(report.releasedCount, 5)
  const fenced = await client.acquire(name, { fenced: true })
  assert.ok(fenced.token > 0n)
  await fenced.release()
})

test('a wrong token is QL_AUTH at connect with requireQuorum, and Auth per node', async () => {
  await assert.rejects(
    Client.connect({ nodes: fixtures.map((f) => ({ url: f.url, token: 'wrong' })), requireQuorum: true }),
    (e) => {
      assert.equal(e.code, 'QL_AUTH')
      assert.equal(e.nodes.length, 5)
      assert.ok(e.nodes.every((n) => n.kind === 'Auth'), JSON.stringify(e.nodes))
      return true
    },
  )
  const c = await Client.connect({ nodes: fixtures.map((f) => ({ url: f.url, token: 'wrong' })) })
  await assert.rejects(c.acquire(unique('rest-auth'), { retryCount: 0 }), (e) => {
    assert.equal(e.code, 'QL_QUORUM')
    // Decided as soon as the quorum became impossible: the rest may still be Pending.
    assert.ok(e.nodes.filter((n) => n.kind === 'Auth').length >= 3, JSON.stringify(e.nodes))
    assert.ok(e.nodes.every((n) => n.kind === 'Auth' || n.kind === 'Pending'))
    return true
  })
})

test('a refused connection is ConnectionRefused per node', async () => {
  const server = net.createServer()
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address()
  await new Promise((resolve) => server.close(resolve))
  const c = await Client.connect({ nodes: [{ url: `http://127.0.0.1:${port}`, token: 'x' }] })
  await assert.rejects(c.acquire(unique('rest-refused'), { retryCount: 0 }), (e) => {
    assert.equal(e.code, 'QL_QUORUM')
    assert.equal(e.nodes[0].kind, 'ConnectionRefused')
    return true
  })
})

test('a custom send(node, argv) hook: replies, ReplyError and TransportError', async () => {
  const redis = ioredisClients()
  let calls = 0
  const transport = {
    addresses: NODE_URLS.map((_, i) => `custom-${i}`),
    async send(node, argv) {
      calls += 1
      if (node === 4) throw new TransportError('node 4 is unplugged', 'NotConnected')
      if (node === 3 && argv[0] === 'SET') throw new ReplyError('READONLY You can\'t write against a read only replica.')
      return redis[node].call(argv[0], ...argv.slice(1))
    },
  }
  try {
    const c = await Client.connect({ transport })
    const lock = await c.acquire(unique('custom'), { ttlMs: 2000 })
    const kinds = lock.nodes.map((n) => n.kind)
    assert.equal(kinds[4], 'NotConnected')
    assert.ok(kinds.filter((k) => k === 'Ok').length >= 3)
    assert.ok(calls > 5)
    await lock.release()
  } finally {
    await quitAll(redis)
  }
})
