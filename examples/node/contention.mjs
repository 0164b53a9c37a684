// Four workers, each with its own client, contend for one lock on the nodes in QL_NODES
// (run it with: ql-harness exec --nodes 5 -- node examples/node/contention.mjs).
import { Client, QuorumlockError } from '../../node/index.mjs'

const nodes = (process.env.QL_NODES ?? '').split(',').filter(Boolean)
if (nodes.length === 0) {
  console.error('set QL_NODES=redis://host:port,... (ql-harness exec does)')
  process.exit(2)
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
let holders = 0

async function worker(id) {
  const client = await Client.connect({ nodes })
  for (let turn = 0; turn < 2; turn++) {
    try {
      await client.using('demo:invoice', { ttlMs: 2000, retryCount: 50, retryDelayMs: 20, fenced: true }, async (lock) => {
        holders += 1
        if (holders !== 1) throw new Error('two holders at once')
        console.log(`node worker ${id}: holds the lock (token ${lock.token}, attempts ${lock.attempts}, ${lock.remainingMs} ms left)`)
        await sleep(50)
        holders -= 1
      })
    } catch (e) {
      if (!(e instanceof QuorumlockError)) throw e
      console.log(`node worker ${id}: ${e.code} after ${e.attempts} attempts`)
    }
  }
  await client.close()
}

await Promise.all([1, 2, 3, 4].map(worker))
console.log('node: 4 workers took turns; never two holders at once')
