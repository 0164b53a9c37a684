// The implementations measured by bench.mjs: one acquire+release operation each.
//
// `create(urls)` resolves to `{ op(key) -> Promise<boolean>, close() }`; `op` resolves true
// on a successful acquire+release. Every lock has a 10 s TTL and no retry, so that an
// operation measures one round of acquire + one release.
import { randomBytes } from 'node:crypto'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'

import IORedis from 'ioredis'

const require = createRequire(import.meta.url)
const TTL_MS = 10_000
const RELEASE_LUA =
  "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end"

// The quorumlock package: a release build copied to .pkg/ by `make bench-node`, or $QL_NODE_PKG.
const PKG = process.env.QL_NODE_PKG ?? fileURLToPath(new URL('./.pkg/quorumlock/', import.meta.url))

/** One ioredis connection per node (auto-pipelining off: the peers use it the same way). */
function connect (urls) {
  return urls.map((u) => new IORedis(u, { maxRetriesPerRequest: 1, enableOfflineQueue: true }))
}

async function quit (clients) {
  await Promise.allSettled(clients.map((c) => c.quit()))
}

/** The raw floor: SET NX PX on every node in parallel, then compare-and-delete everywhere. */
async function floor (urls) {
  const nodes = connect(urls)
  for (const n of nodes) n.defineCommand('qlRelease', { numberOfKeys: 1, lua: RELEASE_LUA })
  return {
    async op (key) {
      const value = randomBytes(20).toString('hex')
      const sets = await Promise.allSettled(nodes.map((n) => n.set(key, value, 'PX', TTL_MS, 'NX')))
      // Release everywhere, even after a partial grant, so that no key lingers.
      const dels = await Promise.allSettled(nodes.map((n) => n.qlRelease(key, value)))
      return sets.every((r) => r.value === 'OK') && dels.every((r) => r.value === 1)
    },
    close: () => quit(nodes)
  }
}

/** quorumlock: the Rust bench's options (no retry, 200 ms per-node deadline). */
async function quorumlock (urls) {
  const { Client } = require(PKG)
  const client = await Client.connect({ nodes: urls, ttlMs: TTL_MS, retryCount: 0, nodeTimeoutMs: 200 })
  return {
    async op (key) {
      const lock = await client.acquire(key)
      const report = await lock.release()
      return report.wasHeldByQuorum
    },
    close: () => client.close()
  }
}

/** node-redlock 4.2.0 (bluebird, callback style, one resource per lock). */
async function redlock4 (urls) {
  const Redlock = require('redlock4')
  const nodes = connect(urls)
  const redlock = new Redlock(nodes, { retryCount: 0 })
  redlock.on('clientError', () => {})
  return {
    async op (key) {
      const lock = await redlock.lock(key, TTL_MS)
      await lock.unlock()
      return true
    },
    close: () => quit(nodes)
  }
}

/** node-redlock 5.0.0-beta.2 and its maintained fork @sesamecare-oss/redlock: same API. */
function redlock5Like (module) {
  return async (urls) => {
    const mod = require(module)
    const Redlock = mod.default ?? mod.Redlock ?? mod
    const nodes = connect(urls)
    const redlock = new Redlock(nodes, { retryCount: 0 })
    redlock.on('error', () => {})
    return {
      async op (key) {
        const lock = await redlock.acquire([key], TTL_MS)
        await lock.release()
        return true
      },
      close: () => quit(nodes)
    }
  }
}

export const IMPLS = [
  { name: 'floor', create: floor },
  { name: 'quorumlock', create: quorumlock },
  { name: 'redlock@4.2.0', create: redlock4 },
  { name: 'redlock@5.0.0-beta.2', create: redlock5Like('redlock5') },
  { name: '@sesamecare/redlock', create: redlock5Like('@sesamecare-oss/redlock') }
]
