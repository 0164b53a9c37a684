// Lost locks, cancellation and node failures on 5 real nodes.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { once } from 'node:events'
import path from 'node:path'
import { after, before, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'

import { Client } from '../index.mjs'
import { allKeys, sleep, startCluster, valuesOn } from './harness.mjs'

const here = path.dirname(fileURLToPath(import.meta.url))
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

const deleteEverywhere = (key) => Promise.all(cluster.addrs.map((_, i) => cluster.command(i, 'DEL', key)))

test('using(): lock.signal aborts with QL_LOST when the keys vanish, and using rejects', async () => {
  let reason
  const run = client.using('lost', { ttlMs: 600 }, async (lock) => {
    assert.ok(lock.autoExtending)
    assert.equal(lock.signal.aborted, false)
    await deleteEverywhere(client.key('lost').toString())
    // The lost callback never keeps the process alive by itself, so the wait has a timer.
    await Promise.race([once(lock.signal, 'abort'), sleep(5000)])
    assert.ok(lock.signal.aborted)
    reason = lock.signal.reason
    return 'finished'
  })
  await assert.rejects(run, { name: 'QuorumlockError', code: 'QL_LOST' })
  assert.equal(reason.code, 'QL_LOST')
  assert.equal(reason.lostReason, 'Expired')
})

test('using() keeps the lock alive past its TTL and releases it afterwards', async () => {
  const result = await client.using('long', { ttlMs: 300 }, async (lock) => {
    await sleep(700)
    assert.ok(lock.isHeld)
    assert.ok(lock.extensions >= 2, `${lock.extensions}`)
    return lock.value
  })
  assert.match(result, /^[0-9a-f]{40}$/)
  assert.deepEqual(await valuesOn(cluster, client.key('long').toString()), [null, null, null, null, null])
})

test('a released lock never aborts its signal', async () => {
  const lock = await client.acquire('released-signal', { ttlMs: 300 })
  const { signal } = lock
  await lock.release()
  await sleep(400)
  assert.equal(signal.aborted, false)
})

test('a held lock with a lost signal does not keep the process alive', async () => {
  const script = path.join(here, 'fixtures', 'hold.mjs')
  const started = performance.now()
  const { stdout } = await promisify(execFile)(process.execPath, [script], {
    env: { ...process.env, QL_NODES: cluster.urls.join(',') },
    timeout: 10000,
  })
  assert.equal(stdout.trim(), 'held')
  assert.ok(performance.now() - started < 5000)
})

test('an already aborted signal rejects at once with QL_CANCELLED and sends nothing', async () => {
  const controller = new AbortController()
  controller.abort()
  await assert.rejects(client.acquire('never', { signal: controller.signal }), (e) => {
    assert.equal(e.code, 'QL_CANCELLED')
    assert.equal(e.attempts, 0)
    return true
  })
  assert.deepEqual(await valuesOn(cluster, client.key('never').toString()), [null, null, null, null, null])
})

test('aborting a pending acquisition cancels it and leaves no keys behind', async () => {
  const paused = [2, 3, 4]
  for (const node of paused) await cluster.ctl({ op: 'pause', node })
  const controller = new AbortController()
  // Without the abort this would end after 5 s with QL_QUORUM.
  const pending = client.acquire('cancel', { ttlMs: 20000, nodeTimeoutMs: 5000, retryCount: 0, signal: controller.signal })
  const rejected = assert.rejects(pending, { code: 'QL_CANCELLED' })
  let resumed = false
  try {
    await sleep(200)
    const aborted = performance.now()
    controller.abort()
    // The rejection waits for the attempt's cleanup (bounded by nodeTimeoutMs), which
    // reaches the paused nodes once they resume.
    await sleep(300)
    for (const node of paused) await cluster.ctl({ op: 'resume', node })
    resumed = true
    await rejected
    assert.ok(performance.now() - aborted < 4000, `${performance.now() - aborted} ms`)
  } finally {
    if (!resumed) for (const node of paused) await cluster.ctl({ op: 'resume', node })
  }
  // This call's keys only: the fixture of "a held lock with a lost signal" exits holding
  // 'hold' (ttl 5 s), which may still stand.
  const mine = async () => (await allKeys(cluster)).filter((k) => k.includes('{cancel}'))
  let keys = await mine()
  for (let i = 0; i < 20 && keys.length > 0; i++) {
    await sleep(100)
    keys = await mine()
  }
  assert.deepEqual(keys, [])
})

test('without a quorum of live nodes the acquisition fails with QL_QUORUM', async () => {
  for (const node of [0, 1, 2]) await cluster.ctl({ op: 'kill', node })
  await assert.rejects(client.acquire('quorum', { ttlMs: 1000, retryCount: 1, retryDelayMs: 10 }), (e) => {
    assert.equal(e.code, 'QL_QUORUM')
    assert.equal(e.attempts, 2)
    const kinds = e.nodes.map((n) => n.kind)
    assert.equal(kinds.length, 5)
    assert.ok(e.nodes.slice(0, 3).every((n) => n.category !== 'Vote'), kinds.join())
    return true
  })
})
