// Release notification (REDLOCK.md §9) through the Node package: with `notify` on (the
// default) a release wakes a waiter long before its 2 s retry delay; with it off the waiter
// only comes back after the delay.
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'

import { Client } from '../index.mjs'
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

/** Milliseconds from the holder's release to the waiter's acquisition. */
async function handOff(notify, resource) {
  const opts = { nodes: cluster.urls, notify, nodeTimeoutMs: 250 }
  const holder = await Client.connect(opts)
  const waiter = await Client.connect(opts)
  clients.push(holder, waiter)
  const lock = await holder.acquire([resource], { ttlMs: 10_000 })
  const waiting = waiter
    .acquire([resource], { ttlMs: 10_000, retryCount: 5, retryDelayMs: 2_000, retryJitterMs: 0 })
    .then((l) => [performance.now(), l])
  await sleep(400)
  const releasedAt = performance.now()
  await lock.release()
  const [acquiredAt, got] = await waiting
  await got.release()
  return [acquiredAt - releasedAt, waiter.metrics().wakeups]
}

test('a release wakes the waiter at once', async () => {
  const [gap, wakeups] = await handOff(true, 'notify:on')
  assert.ok(gap < 500, `hand-off took ${gap} ms`)
  assert.equal(wakeups, 1)
})

test('without notification the waiter polls', async () => {
  const [gap, wakeups] = await handOff(false, 'notify:off')
  assert.ok(gap > 1_000, `hand-off took ${gap} ms`)
  assert.equal(wakeups, 0)
})

test('notify must be a boolean', async () => {
  await assert.rejects(Client.connect({ nodes: cluster.urls, notify: 'yes' }), TypeError)
})
