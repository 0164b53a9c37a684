// Shared set-up of the edge tests: the nodes of `ql-harness exec` (QL_NODES), ioredis and
// node-redis clients for them, and the Upstash REST fixture.
import Redis from 'ioredis'
import { createClient } from 'redis'
import { startRestFixture } from './fixtures/upstash.mjs'

export const NODE_URLS = (process.env.QL_NODES ?? '').split(',').filter(Boolean)
if (NODE_URLS.length === 0) {
  throw new Error('QL_NODES is not set: run the tests under `ql-harness exec --nodes 5 -- npm test`')
}

let counter = 0
/** A resource name unique to this process and call. */
export function unique(prefix = 'edge') {
  counter += 1
  return `${prefix}-${process.pid}-${counter}-${Math.random().toString(36).slice(2, 8)}`
}

/** One ioredis client per node (closed with `quitAll`). */
export function ioredisClients(urls = NODE_URLS) {
  return urls.map((u) => new Redis(u, { lazyConnect: false, maxRetriesPerRequest: 1 }))
}

/** One connected node-redis client per node. */
export async function nodeRedisClients(urls = NODE_URLS) {
  const clients = urls.map((url) => createClient({ url }))
  await Promise.all(clients.map((c) => c.connect()))
  return clients
}

export async function quitAll(clients) {
  await Promise.all(
    clients.map(async (c) => {
      try {
        if (typeof c.quit === 'function') await c.quit()
        else await c.close()
      } catch {
        if (typeof c.disconnect === 'function') c.disconnect()
      }
    }),
  )
}

export { startRestFixture }
