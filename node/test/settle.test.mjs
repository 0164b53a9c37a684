// How promises reach the event loop: one threadsafe function per JavaScript environment
// (src/settle.rs). A pending call keeps the process alive, bursts settle, and worker threads
// have environments of their own that can end while their calls are pending.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { once } from 'node:events'
import path from 'node:path'
import { after, before, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { Worker } from 'node:worker_threads'

import { Client } from '../index.mjs'
import { startCluster } from './harness.mjs'

const here = path.dirname(fileURLToPath(import.meta.url))
let cluster
let client

before(async () => {
  cluster = startCluster(3)
  client = await Client.connect({ nodes: cluster.urls })
})

after(async () => {
  await client.close()
  cluster.stop()
})

test('a pending call keeps the process alive until it settles', async () => {
  const held = await client.acquire('settle:held', { ttlMs: 10000 })
  try {
    const started = performance.now()
    const { stdout } = await promisify(execFile)(process.execPath, [path.join(here, 'fixtures', 'pending.mjs')], {
      env: { ...process.env, QL_NODES: cluster.urls.join(','), QL_KEY: 'settle:held' },
      timeout: 10000,
    })
    // Without the reference while the call waits, the process exits at once and prints nothing.
    assert.equal(stdout.trim(), 'QL_BUSY')
    assert.ok(performance.now() - started >= 600, 'the four retries ran')
  } finally {
    await held.release()
  }
})

test('a burst of calls settles, each with its own outcome', async () => {
  const names = Array.from({ length: 300 }, (_, i) => `settle:burst:${i}`)
  const locks = await Promise.all(names.map((n) => client.acquire(n)))
  assert.deepEqual(
    locks.map((l) => l.resources[0]),
    names,
  )
  const busy = await Promise.allSettled(names.slice(0, 20).map((n) => client.acquire(n, { retryCount: 0 })))
  assert.ok(busy.every((r) => r.status === 'rejected' && r.reason.code === 'QL_BUSY'))
  const reports = await Promise.all(locks.map((l) => l.release()))
  assert.ok(reports.every((r) => r.releasedCount === 3))
})

test('worker threads: clients of their own, and a worker ended with a call pending', async () => {
  const cycles = (key) =>
    new Worker(path.join(here, 'fixtures', 'worker.mjs'), {
      workerData: { nodes: cluster.urls, key, mode: 'cycles', cycles: 50 },
    })
  const workers = [cycles('settle:w1'), cycles('settle:w2')]
  // Listening before anything can arrive: an event emitted before `once` is called is missed.
  const messages = workers.map((w) => once(w, 'message'))
  const exits = workers.map((w) => once(w, 'exit'))
  const ownCycles = (async () => {
    for (let i = 0; i < 50; i++) await (await client.acquire('settle:main')).release()
  })()
  for (const message of messages) assert.equal((await message)[0], 'done')
  await ownCycles
  for (const exit of exits) assert.equal((await exit)[0], 0)

  // A worker terminated while its acquisition waits: its outputs have nowhere to go and
  // are dropped, and the other environments go on.
  const held = await client.acquire('settle:wait', { ttlMs: 10000 })
  const waiting = new Worker(path.join(here, 'fixtures', 'worker.mjs'), {
    workerData: { nodes: cluster.urls, key: 'settle:wait', mode: 'wait' },
  })
  assert.equal((await once(waiting, 'message'))[0], 'waiting')
  await new Promise((r) => setTimeout(r, 200))
  await waiting.terminate()
  await held.release()
  const again = cycles('settle:w3')
  const [done] = await once(again, 'message')
  assert.equal(done, 'done')
  await (await client.acquire('settle:wait')).release()
})
