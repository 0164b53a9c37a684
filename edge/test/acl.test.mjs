// Releases under an ACL rule without MGET (the minimal rule before waiter flags, REDLOCK.md §9):
// the release that reads the waiter flags is refused before it writes anything, the package
// releases those nodes again without flags (and every later release too), and a waiter is
// still woken by the notice.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import Redis from 'ioredis'
import { Client } from '../src/api.js'
import { NODE_URLS, ioredisClients, quitAll, unique } from './harness.mjs'

const USER = `edge-old-rule-${process.pid}`
const PASSWORD = 'Edge-0ld-rule-pw'
const OLD_RULE = [
  'resetkeys', '~quorumlock:*', 'resetchannels', '&quorumlock:*', '-@all', '+set', '+exists',
  '+evalsha', '+eval', '+get', '+del', '+pexpire', '+pttl', '+time', '+publish', '+subscribe',
  '+unsubscribe', '+ping', '+info', '+config|get', '+client',
]

let admin
let users
let holder
let waiter

before(async () => {
  admin = ioredisClients()
  await Promise.all(admin.map((r) => r.call('ACL', 'SETUSER', USER, 'reset', 'on', `>${PASSWORD}`, ...OLD_RULE)))
  users = NODE_URLS.map((u) => {
    const url = new URL(u)
    url.username = USER
    url.password = PASSWORD
    return new Redis(url.toString(), { maxRetriesPerRequest: 1 })
  })
  holder = await Client.connect({ nodes: users, nodeTimeoutMs: 500 })
  waiter = await Client.connect({ nodes: users, nodeTimeoutMs: 500 })
})

after(async () => {
  await holder?.close()
  await waiter?.close()
  await quitAll(users ?? [])
  await Promise.all(admin.map((r) => r.call('ACL', 'DELUSER', USER)))
  await quitAll(admin)
})

test('without MGET a release still deletes on every node and wakes a waiter', async () => {
  const name = unique('acl')
  const lock = await holder.acquire(name, { ttlMs: 5000 })
  const waiting = waiter.acquire(name, { ttlMs: 5000, retryCount: 3, retryDelayMs: 3000, retryJitterMs: 0 })
  await new Promise((r) => setTimeout(r, 400))
  const released = performance.now()
  const report = await lock.release()
  assert.equal(report.releasedCount, 5)
  const second = await waiting
  const woke = performance.now() - released
  assert.ok(woke < 1500, `woke ${woke.toFixed(0)} ms after the release (retry delay 3000 ms)`)
  // (The waiter may have won on a quorum only: woken by three notices, it can reach a node
  // before the holder's release there.)
  assert.ok((await second.release()).wasHeldByQuorum)
  const again = await holder.acquire(unique('acl'), { ttlMs: 5000 })
  assert.equal((await again.release()).releasedCount, 5)
  // At most one refusal per node and client (holder, waiter), not one per release. The
  // package remembers a refusal per client, not per node: a waiter whose woken attempt lost
  // and was cleaned on some nodes is refused there only, and releases elsewhere without flags.
  for (const r of admin) {
    const mine = (await r.call('ACL', 'LOG')).filter((e) => e[e.indexOf('username') + 1] === USER)
    assert.equal(mine.length, 1, JSON.stringify(mine))
    const entry = mine[0]
    assert.equal(entry[entry.indexOf('object') + 1], 'mget')
    const count = Number(entry[entry.indexOf('count') + 1])
    assert.ok(count >= 1 && count <= 2, `${count} refusals`)
  }
})
