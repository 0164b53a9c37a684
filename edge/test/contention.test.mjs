// Cross-implementation contention: the CLI (`quorumlock run`, the native engine) and edge
// clients hold one resource in turns. Each holder increments a witness counter on entry and
// decrements it on exit (on a separate key); a holder that sees anything but 1 overlapped.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { Client } from '../src/api.js'
import { NODE_URLS, ioredisClients, quitAll, unique } from './harness.mjs'

const CLI = process.env.QL_CLI ?? new URL('../../target/debug/quorumlock', import.meta.url).pathname

let redis
let witness

before(() => {
  redis = ioredisClients()
  witness = redis[0]
})

after(async () => {
  await quitAll(redis)
})

function cliHolder(name, witnessKey, rounds) {
  const script = `
    for i in $(seq ${rounds}); do
      "$QL_CLI" --nodes "$QL_NODES" run "$NAME" --ttl 5s --wait 30s -- sh -c '
        v=$(redis-cli -u "$W" INCR "$K"); [ "$v" = 1 ] || echo overlap
        sleep 0.03
        redis-cli -u "$W" DECR "$K" >/dev/null; echo held' || exit 1
    done`
  return new Promise((resolve, reject) => {
    execFile('bash', ['-c', script], {
      env: { ...process.env, QL_CLI: CLI, NAME: name, W: NODE_URLS[0], K: witnessKey },
      timeout: 50_000,
    }, (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout)))
  })
}

async function edgeHolder(client, name, witnessKey, rounds) {
  let overlaps = 0
  for (let i = 0; i < rounds; i++) {
    const lock = await client.acquire(name, { ttlMs: 5000, retryCount: Infinity, waitMs: 30_000, retryDelayMs: 50, retryJitterMs: 100 })
    const v = await witness.incr(witnessKey)
    if (v !== 1) overlaps++
    await new Promise((r) => setTimeout(r, 30))
    await witness.decr(witnessKey)
    assert.ok(lock.isHeld, 'still valid at the end of the critical section')
    await lock.release()
  }
  return overlaps
}

test('the CLI and edge clients never hold one resource at the same time', { timeout: 55_000 }, async () => {
  assert.ok(existsSync(CLI), `the CLI binary is needed at ${CLI} (cargo build -p quorumlock-cli)`)
  const name = unique('cross')
  const witnessKey = `witness:${name}`
  const clients = await Promise.all([0, 1, 2].map(() => Client.connect({ nodes: redis })))
  const [cliOut, ...edge] = await Promise.all([
    Promise.all([cliHolder(name, witnessKey, 3), cliHolder(name, witnessKey, 3)]).then((o) => o.join('')),
    ...clients.map((c) => edgeHolder(c, name, witnessKey, 4)),
  ])
  const cliHeld = (cliOut.match(/held/g) ?? []).length
  const cliOverlaps = (cliOut.match(/overlap/g) ?? []).length
  assert.equal(cliHeld, 6, 'every CLI run held the lock')
  assert.equal(cliOverlaps + edge.reduce((a, b) => a + b, 0), 0, 'no overlap')
  assert.equal(await witness.get(witnessKey), '0')
  await Promise.all(clients.map((c) => c.close()))
})
