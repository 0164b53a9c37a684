// Releases and waits under ACL rules (REDLOCK.md §9, docs/SECURITY.md §4). The rule with the
// sorted-set commands lets waiters mark the key's flag (`<key>:w`) and stand in its line
// (`<key>:q`, a sorted set of waiter ids) and a release wake the first by name, with nothing
// refused; with the hash commands too, a waiter registers for grants. Under the rule before
// lines (no ZSET commands) a waiter's mark sets the flag only,
// a release still deletes on every node and wakes the waiter with a plain notice, and only
// the refused sorted-set and hash commands show in ACL LOG.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import Redis from 'ioredis'
import { Client } from '../src/api.js'
import { NODE_URLS, ioredisClients, quitAll, unique } from './harness.mjs'

const PASSWORD = 'Edge-acl-rule-pw'
const OLD_RULE = [
  'resetkeys', '~quorumlock:*', 'resetchannels', '&quorumlock:*', '-@all', '+set', '+exists',
  '+evalsha', '+eval', '+get', '+mget', '+del', '+pexpire', '+pttl', '+time', '+publish', '+subscribe',
  '+unsubscribe', '+ping', '+info', '+config|get', '+client',
]
// The lines' sorted-set commands, and the hash commands of native waiters' registrations for
// grants, which every release looks up (docs/SECURITY.md).
const QUEUE_RULE = [...OLD_RULE, '+zadd', '+zrange', '+zpopmin', '+zrem', '+hset', '+hget', '+hdel']
// What the rule before lines refuses: the lines' sorted-set commands, and the hash commands
// of a waiter's LEAVE (its registering mark stops at the refused ZRANGE).
const LINE_COMMANDS = new Set(['zadd', 'zrange', 'zpopmin', 'zrem', 'hset', 'hget', 'hdel'])

let admin

before(async () => {
  admin = ioredisClients()
})

after(async () => {
  await quitAll(admin)
})

/** Runs `body(holder, waiter, users)` with two clients of an ACL user with `rule`. */
async function asUser(user, rule, body) {
  await Promise.all(admin.map((r) => r.call('ACL', 'SETUSER', user, 'reset', 'on', `>${PASSWORD}`, ...rule)))
  const users = NODE_URLS.map((u) => {
    const url = new URL(u)
    url.username = user
    url.password = PASSWORD
    return new Redis(url.toString(), { maxRetriesPerRequest: 1 })
  })
  const holder = await Client.connect({ nodes: users, nodeTimeoutMs: 500 })
  const waiter = await Client.connect({ nodes: users, nodeTimeoutMs: 500 })
  try {
    await body(holder, waiter, users)
  } finally {
    await holder.close()
    await waiter.close()
    await quitAll(users)
    await Promise.all(admin.map((r) => r.call('ACL', 'DELUSER', user)))
  }
}

/** The objects of the ACL LOG entries of `user` on every node. */
async function refused(user) {
  const all = await Promise.all(admin.map((r) => r.call('ACL', 'LOG')))
  return all.flat().filter((e) => e[e.indexOf('username') + 1] === user).map((e) => e[e.indexOf('object') + 1])
}

/** A waiter behind a held lock of `name`: woken by the release well before its retry delay. */
async function handOff(holder, waiter, whileWaiting, name = unique('acl')) {
  const lock = await holder.acquire(name, { ttlMs: 5000 })
  const waiting = waiter.acquire(name, { ttlMs: 5000, retryCount: 3, retryDelayMs: 3000, retryJitterMs: 0 })
  await new Promise((r) => setTimeout(r, 400))
  await whileWaiting(`${Buffer.from(holder.key(name)).toString()}:q`)
  const released = performance.now()
  const report = await lock.release()
  assert.equal(report.releasedCount, 5)
  const second = await waiting
  const woke = performance.now() - released
  assert.ok(woke < 1500, `woke ${woke.toFixed(0)} ms after the release (retry delay 3000 ms)`)
  // (The waiter may have won on a quorum only: woken by three notices, it can reach a node
  // before the holder's release there.)
  assert.ok((await second.release()).wasHeldByQuorum)
  return name
}

test('with the sorted-set commands a waiter stands in line and nothing is refused', async () => {
  const user = `edge-queue-rule-${process.pid}`
  await asUser(user, QUEUE_RULE, async (holder, waiter) => {
    await handOff(holder, waiter, async (line) => {
      const types = await Promise.all(admin.map((r) => r.type(line)))
      assert.deepEqual(types, ['zset', 'zset', 'zset', 'zset', 'zset'])
      const regs = await Promise.all(admin.map((r) => r.type(line.replace(/:q$/, ':g'))))
      assert.deepEqual(regs, ['hash', 'hash', 'hash', 'hash', 'hash'], 'registered for grants')
    })
    const again = await holder.acquire(unique('acl'), { ttlMs: 5000 })
    assert.equal((await again.release()).releasedCount, 5)
    assert.deepEqual(await refused(user), [])
  })
})

test('without the sorted-set commands marks are plain flags, and releases delete and wake', async () => {
  const user = `edge-old-rule-${process.pid}`
  await asUser(user, OLD_RULE, async (holder, waiter) => {
    await handOff(holder, waiter, async (line) => {
      const types = await Promise.all(admin.map((r) => r.type(line)))
      assert.deepEqual(types, ['none', 'none', 'none', 'none', 'none'], 'no line, the flag only')
      const flags = await Promise.all(admin.map((r) => r.type(line.replace(/:q$/, ':w'))))
      assert.deepEqual(flags, ['string', 'string', 'string', 'string', 'string'])
    })
    const again = await holder.acquire(unique('acl'), { ttlMs: 5000 })
    assert.equal((await again.release()).releasedCount, 5)
    const objects = await refused(user)
    assert.ok(objects.length > 0 && objects.every((o) => LINE_COMMANDS.has(o)), JSON.stringify(objects))
  })
})

test('a subscription the ACL refused is asked for again by the next wait on the same key', async () => {
  const user = `edge-no-channels-${process.pid}`
  const noChannels = QUEUE_RULE.filter((r) => r !== '&quorumlock:*')
  await asUser(user, noChannels, async (holder, waiter) => {
    const name = unique('acl')
    // Refused channels: the waiter polls, after its 300 ms retry delay.
    const lock = await holder.acquire(name, { ttlMs: 5000 })
    const polling = waiter.acquire(name, { ttlMs: 5000, retryCount: 20, retryDelayMs: 300, retryJitterMs: 0 })
    await new Promise((r) => setTimeout(r, 400))
    await lock.release()
    await (await polling).release()
    // Channels allowed now: the same key's next wait subscribes and is woken by the release.
    await Promise.all(admin.map((r) => r.call('ACL', 'SETUSER', user, '&quorumlock:*')))
    await handOff(holder, waiter, async () => {}, name)
  })
})
