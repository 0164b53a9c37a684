// quorumlock/compat: node-redlock v5's README examples, unchanged apart from the import, over
// objects shaped like ioredis clients (ioredis is not a dependency).
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'

import Redlock, { ExecutionError, Lock, ResourceLockedError } from 'quorumlock/compat'
import { startCluster, valuesOn } from './harness.mjs'

let cluster
let redisA
let redisB
let redisC

/** The part of an ioredis client that the compat layer reads. */
class Client {
  constructor(options) {
    this.options = { host: 'localhost', port: 6379, db: 0, ...options }
    this.quitCalls = 0
  }

  async quit() {
    this.quitCalls += 1
    return 'OK'
  }
}

const something = async () => {}
const somethingElse = async () => {}

before(() => {
  cluster = startCluster(3)
  const [a, b, c] = cluster.addrs.map((addr) => {
    const i = addr.lastIndexOf(':')
    return { host: addr.slice(0, i), port: Number(addr.slice(i + 1)) }
  })
  redisA = new Client(a)
  redisB = new Client(b)
  redisC = new Client(c)
})

after(() => cluster.stop())

function readmeRedlock() {
  // ---- from node-redlock v5's README ----
  const redlock = new Redlock(
    // You should have one client for each independent redis node
    // or cluster.
    [redisA, redisB, redisC],
    {
      // The expected clock drift; for more details see:
      // http://redis.io/topics/distlock
      driftFactor: 0.01, // multiplied by lock ttl to determine drift time

      // The max number of times Redlock will attempt to lock a resource
      // before erroring.
      retryCount: 10,

      // the time in ms between attempts
      retryDelay: 200, // time in ms

      // the max time in ms randomly added to retries
      // to improve performance under high contention
      // see https://www.awsarchitectureblog.com/2015/03/backoff.html
      retryJitter: 200, // time in ms

      // The minimum remaining time on a lock before an extension is automatically
      // attempted with the `using` API.
      automaticExtensionThreshold: 500, // time in ms
    }
  )
  return redlock
}

test('README: error handler, using() and acquire/extend/release run unchanged', async () => {
  const redlock = readmeRedlock()
  const errors = []
  const senderId = 'sender'
  const recipientId = 'recipient'

  redlock.on('error', (error) => {
    // Ignore cases where a resource is explicitly marked as locked on a client.
    if (error instanceof ResourceLockedError) {
      return
    }

    // Log all other errors.
    errors.push(error)
  })

  let ran = false
  await redlock.using([senderId, recipientId], 5000, async (signal) => {
    // Do something...
    await something()

    // Make sure any attempted lock extension has not failed.
    if (signal.aborted) {
      throw signal.error
    }

    // Do something else...
    await somethingElse()
    ran = true
  })
  assert.ok(ran)

  // Acquire a lock.
  let lock = await redlock.acquire(['a'], 5000)
  const first = lock
  try {
    // Do something...
    await something()

    // Extend the lock. Note that this returns a new `Lock` instance.
    lock = await lock.extend(5000)

    // Do something else...
    await somethingElse()
  } finally {
    // Release the lock.
    await lock.release()
  }
  assert.equal(lock, first, 'extend updates the handle in place (ARCHITECTURE.md §5.3)')
  assert.ok(lock instanceof Lock)
  assert.deepEqual(errors, [])
  assert.deepEqual(await valuesOn(cluster, 'a'), [null, null, null])
  await redlock.quit()
  assert.equal(redisA.quitCalls, 1)
})

test('lock fields follow node-redlock: resources, value, attempts, expiration', async () => {
  const redlock = new Redlock([redisA, redisB, redisC])
  const lock = await redlock.acquire(['fields'], 2000)
  assert.deepEqual(lock.resources, ['fields'])
  assert.match(lock.value, /^[0-9a-f]{40}$/)
  // The bare resource name is the key, as in node-redlock.
  const held = (await valuesOn(cluster, 'fields')).filter((v) => String(v) === lock.value)
  assert.ok(held.length >= 2, `bare keys held on ${held.length} nodes`)
  // Usually one attempt; a loaded machine can time one out (node timeout 10 ms at ttl 2 s).
  assert.ok(lock.attempts.length >= 1)
  const stats = await lock.attempts[lock.attempts.length - 1]
  assert.equal(stats.membershipSize, 3)
  assert.equal(stats.quorumSize, 2)
  assert.ok(stats.votesFor.size >= 2)
  assert.ok(lock.expiration > Date.now() + 1500 && lock.expiration <= Date.now() + 2000)
  await redlock.release(lock)
  await assert.rejects(redlock.extend(lock, 1000), ExecutionError)
})

test('a busy resource throws ExecutionError with attempts and emits ResourceLockedError', async () => {
  const redlock = new Redlock([redisA, redisB, redisC], { retryCount: 2, retryDelay: 10, retryJitter: 0 })
  const events = []
  redlock.on('error', (e) => events.push(e))
  const lock = await redlock.acquire(['busy'], 5000)
  await assert.rejects(redlock.acquire(['busy'], 1000), (e) => {
    assert.ok(e instanceof ExecutionError)
    assert.equal(e.attempts.length, 3)
    assert.equal(e.cause.code, 'QL_BUSY')
    return true
  })
  assert.ok(events.length >= 2 && events.every((e) => e instanceof ResourceLockedError), `${events}`)
  await lock.release()
})

test('using() aborts its signal with signal.error when the lock is lost', async () => {
  const redlock = new Redlock([redisA, redisB, redisC])
  const seen = await redlock.using(['compat-lost'], 900, { automaticExtensionThreshold: 600 }, async (signal) => {
    await Promise.all([0, 1, 2].map((i) => cluster.command(i, 'DEL', 'compat-lost')))
    for (let i = 0; i < 100 && !signal.aborted; i++) await new Promise((r) => setTimeout(r, 20))
    return { aborted: signal.aborted, code: signal.error?.code }
  })
  assert.deepEqual(seen, { aborted: true, code: 'QL_LOST' })
})

test('clients: URLs work, a Cluster is refused with QL_INVALID, junk is a TypeError', async () => {
  const urls = cluster.urls
  const redlock = new Redlock(urls)
  const lock = await redlock.acquire(['by-url'], 1000)
  await lock.release()
  assert.throws(() => new Redlock([{ isCluster: true, options: {} }]), { code: 'QL_INVALID' })
  assert.throws(() => new Redlock([42]), TypeError)
  assert.throws(() => new Redlock([]), /at least one redis client/)
  await assert.rejects(redlock.acquire('not-an-array', 1000), TypeError)
  await assert.rejects(redlock.acquire(['x'], 1.5), RangeError)
})
