// Where the time of one call goes: acquire and release at c=1 through the Node package, split
// into stages by marks the addon records (built with the cargo feature `stages`: `make
// bench-stages`).
//
//   node bench/node/stages.mjs [--calls 2000]
//
// Stages (medians over the calls, µs): `js-in` the JavaScript side before the native method
// (index.js, argument conversion), `entry` native entry to the engine future's first poll on a
// runtime worker (the hand-off), `engine` the engine future itself (its I/O), `back` from the
// output being ready to the event loop's thread holding it (the threadsafe-function wake-up),
// `js-out` from there to the caller's `await` resuming (the outcome becoming a JS object,
// index.js, the promise's reactions). The marks are placed on this process's clock by
// `stageOrigin()`, the marks' clock read between two reads of this one (the midpoint; they
// are about 1 µs apart). Nodes: $QL_NODES, else 5 started with
// ql-harness (persist always). The addon: $QL_NODE_PKG or bench/node/.pkg/quorumlock.
import { createRequire } from 'node:module'
import { loadavg } from 'node:os'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'

import { startNodes, stopNodes } from './nodes.mjs'

const require = createRequire(import.meta.url)
const PKG = process.env.QL_NODE_PKG ?? fileURLToPath(new URL('./.pkg/quorumlock/', import.meta.url))
const STAGES = ['js-in', 'entry', 'engine', 'back', 'js-out']

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.floor(s.length / 2)]
}

// One call's stages in µs; `origin` places the marks on the clock of `t0` and `t1` (ns).
function split (t0, t1, m, origin) {
  const [m0, m3] = [m[0] + origin, m[3] + origin]
  return [(m0 - t0) / 1e3, (m[1] - m[0]) / 1e3, (m[2] - m[1]) / 1e3, (m[3] - m[2]) / 1e3,
    (t1 - m3) / 1e3]
}

async function main () {
  const { values } = parseArgs({ options: { calls: { type: 'string', default: '2000' } } })
  const calls = Number(values.calls)
  const native = require(`${PKG}/native.js`)
  if (typeof native.stageMarks !== 'function') {
    console.error('this addon was built without the `stages` feature (make bench-stages)')
    process.exit(2)
  }
  const { Client } = require(PKG)
  const [urls, runDir] = startNodes()
  const rows = { acquire: [], release: [] }
  const now = process.hrtime.bigint
  native.stageOrigin() // the first call pays for setting up the function
  const h0 = now()
  const o = native.stageOrigin()
  const origin = Number(h0 + now()) / 2 - o
  try {
    const client = await Client.connect({ nodes: urls, ttlMs: 10_000, retryCount: 0, nodeTimeoutMs: 200 })
    for (let i = 0; i < calls + 200; i++) {
      const t0 = now()
      const lock = await client.acquire(`stages:${i % 16}`)
      const t1 = now()
      const ma = native.stageMarks()
      const t2 = now()
      await lock.release()
      const t3 = now()
      const mr = native.stageMarks()
      if (i >= 200) {
        rows.acquire.push(split(Number(t0), Number(t1), ma, origin))
        rows.release.push(split(Number(t2), Number(t3), mr, origin))
      }
    }
    await client.close()
  } finally {
    stopNodes(runDir)
  }
  console.log(`stages of one call at c=1, medians of ${calls} calls (µs), load average ` +
    loadavg().map((x) => x.toFixed(2)).join(' '))
  for (const [op, samples] of Object.entries(rows)) {
    const med = STAGES.map((_, i) => median(samples.map((s) => s[i])))
    const total = median(samples.map((s) => s.reduce((a, b) => a + b, 0)))
    console.log(`node     ${op.padEnd(8)} total ${total.toFixed(1).padStart(6)} µs  ` +
      STAGES.map((st, i) => `${st} ${med[i].toFixed(1).padStart(6)}`).join('  '))
  }
}

await main()
