// client.metrics() and client.metricsPrometheus() against 3 real nodes: exact client totals at
// return, per-node replies (polled: late replies are counted when they land), a killed node.
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'

import { Client, LATENCY_BOUNDS_US } from '../index.mjs'
import { sleep, startCluster } from './harness.mjs'

let cluster
const clients = []

before(() => {
  cluster = startCluster(3)
})

after(async () => {
  for (const c of clients) await c.close()
  cluster.stop()
})

/** A fresh client, so that every test starts from zero (the connect round aside). */
async function connect() {
  const client = await Client.connect({ nodes: cluster.urls, retryCount: 0, nodeTimeoutMs: 250 })
  clients.push(client)
  return client
}

/** Snapshots until `done(m)` holds (at most ~5 s), and returns the last one. */
async function pollMetrics(client, done) {
  let m = client.metrics()
  for (let i = 0; i < 100 && !done(m); i++) {
    await sleep(50)
    m = client.metrics()
  }
  return m
}

function assertEmptyHistogram(h) {
  assert.equal(h.boundsUs, LATENCY_BOUNDS_US)
  assert.equal(h.counts.length, LATENCY_BOUNDS_US.length + 1)
  assert.ok(h.counts.every((c) => c === 0))
  assert.deepEqual([h.count, h.sumUs, h.p50Ms, h.p90Ms, h.p99Ms], [0, 0, null, null, null])
}

test('LATENCY_BOUNDS_US: 16 ascending bounds from 100 us to 10 s, frozen', () => {
  assert.equal(LATENCY_BOUNDS_US.length, 16)
  assert.equal(LATENCY_BOUNDS_US[0], 100)
  assert.equal(LATENCY_BOUNDS_US.at(-1), 10_000_000)
  assert.ok(LATENCY_BOUNDS_US.every((b, i) => i === 0 || b > LATENCY_BOUNDS_US[i - 1]))
  assert.ok(Object.isFrozen(LATENCY_BOUNDS_US))
})

test('metrics() before the client is connected throws QL_INVALID', async () => {
  const client = new Client(cluster.urls)
  assert.throws(() => client.metrics(), { name: 'QuorumlockError', code: 'QL_INVALID' })
  assert.throws(() => client.metricsPrometheus(), { code: 'QL_INVALID' })
  await client.close()
})

test('a fresh client counts nothing but the connect round', async () => {
  const client = await connect()
  const m = client.metrics()
  assert.ok(Object.isFrozen(m) && Object.isFrozen(m.acquire) && Object.isFrozen(m.nodes[0].replies))
  assert.deepEqual([m.acquireAttempts, m.lost, m.wakeups], [0, 0, 0])
  for (const op of [m.acquire, m.extend, m.release]) {
    assert.deepEqual([op.ok, op.failures, op.failed], [0, 0, {}])
    assertEmptyHistogram(op.latency)
  }
  assert.deepEqual(m.nodes.map((n) => n.index), [0, 1, 2])
  assert.deepEqual(m.nodes.map((n) => n.address), client.addresses)
  for (const n of m.nodes) {
    assert.deepEqual(n.replies, { Ok: 1 })
    assert.deepEqual([n.requests, n.errors, n.latency.count], [1, 0, 1])
  }
  assert.deepEqual(JSON.parse(JSON.stringify(m)), m)
})

test('acquire, extend, a busy acquire and release are counted exactly, per client and per node', async () => {
  const client = await connect()
  const lock = await client.acquire('metrics:a')
  await lock.extend(10_000)
  await assert.rejects(client.acquire('metrics:a'), { code: 'QL_BUSY' })
  await lock.release()

  // Client-level totals are exact as soon as the calls have returned.
  const m = client.metrics()
  assert.equal(m.acquireAttempts, 2, 'retryCount: 0, so one round per call')
  assert.deepEqual([m.acquire.ok, m.acquire.failures, m.acquire.failed], [1, 1, { QL_BUSY: 1 }])
  assert.equal(m.acquire.latency.count, 2)
  assert.ok(m.acquire.latency.sumUs > 0)
  assert.ok(LATENCY_BOUNDS_US.includes(m.acquire.latency.p50Ms * 1000), `${m.acquire.latency.p50Ms}`)
  assert.ok(m.acquire.latency.p99Ms >= m.acquire.latency.p50Ms)
  assert.deepEqual([m.extend.ok, m.extend.failures, m.extend.latency.count], [1, 0, 1])
  assert.deepEqual([m.release.ok, m.release.failures, m.release.latency.count], [1, 0, 1])
  assert.deepEqual([m.lost, m.wakeups], [0, 0])

  // Per node: the connect round, the acquire, the extend, the busy attempt and the release;
  // the busy attempt's cleanup only where the round was decided before the node answered (a
  // node that refused is not cleaned). Replies after a quorum decision land later.
  await pollMetrics(client, (s) => s.nodes.every((n) => n.replies.Ok === 3 && n.replies.Released === 1))
  await sleep(200) // a cleanup still in flight lands within this
  for (const n of client.metrics().nodes) {
    const held = n.replies.HeldByOther
    assert.ok(held === 1 || held === 2, `${n.address}: ${JSON.stringify(n.replies)}`)
    assert.deepEqual(n.replies, { Ok: 3, HeldByOther: held, Released: 1 }, n.address)
    assert.deepEqual([n.requests, n.errors, n.latency.count], [4 + held, 0, 4 + held], n.address)
  }
})

test('a lost lock counts once in lost and as QL_LOST in extend', async () => {
  const client = await connect()
  const lock = await client.acquire('metrics:lost', { ttlMs: 1000 })
  const key = client.key('metrics:lost').toString()
  await Promise.all(cluster.addrs.map((_, i) => cluster.command(i, 'DEL', key)))
  await assert.rejects(lock.extend(1000), { code: 'QL_LOST' })
  const m = client.metrics()
  assert.equal(m.lost, 1)
  assert.deepEqual([m.extend.ok, m.extend.failed], [0, { QL_LOST: 1 }])
})

test('metricsPrometheus() renders the same counters as Prometheus text', async () => {
  const client = await connect()
  const lock = await client.acquire('metrics:prom')
  await lock.release()
  const text = client.metricsPrometheus()
  assert.ok(text.includes('quorumlock_acquire_total{outcome="ok"} 1\n'), text)
  assert.ok(text.includes('quorumlock_release_total{outcome="ok"} 1\n'), text)
  assert.ok(text.includes('# TYPE quorumlock_acquire_duration_seconds histogram\n'), text)
  assert.ok(text.includes('quorumlock_acquire_duration_seconds_count 1\n'), text)
  for (const address of client.addresses) {
    assert.ok(text.includes(`quorumlock_node_requests_total{node="${address}",kind="Ok"} `), text)
  }
  for (const line of text.split('\n').filter((l) => l && !l.startsWith('#'))) {
    assert.ok(Number.isFinite(Number(line.split(' ').at(-1))), line)
  }
})

// Kills node 2, so it runs last.
test('requests to a killed node are counted as errors on that node only', async () => {
  const client = await connect()
  await cluster.ctl({ op: 'kill', node: 2 })
  const lock = await client.acquire('metrics:b')
  await lock.release()
  const m = await pollMetrics(client, (s) => s.nodes[2].errors === 2 && s.nodes.slice(0, 2).every((n) => n.requests === 3))
  assert.deepEqual([m.acquire.ok, m.release.ok], [1, 1])
  const dead = m.nodes[2]
  // The connect round answered Ok; the acquire and the release found the node gone.
  assert.deepEqual([dead.requests, dead.errors], [3, 2], JSON.stringify(dead.replies))
  assert.equal(dead.replies.Ok, 1)
  for (const n of m.nodes.slice(0, 2)) {
    assert.deepEqual(n.replies, { Ok: 2, Released: 1 }, n.address)
    assert.equal(n.errors, 0)
  }
})
