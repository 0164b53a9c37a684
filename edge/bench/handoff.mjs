// Edge hand-off benchmark (make bench-edge-handoff; not a test): how fast one contended lock
// passes between quorumlock-edge clients in separate Node processes (the edge runtime's
// shape: one client per isolate), on the nodes of $QL_NODES (5 local redis-server nodes
// under ql-harness exec). WORKERS child processes (8) each loop { acquire one key, hold
// HOLD_MS (1), release, work OUTSIDE_MS (2) outside the lock } for SECS (6) after a 500 ms
// warm-up. Each records (acquire returned, release called) on the shared clock
// (performance.timeOrigin + performance.now()); the parent sorts all holds by acquire time and
// reports the hand-off gap (the start of the previous holder's release to the next holder's
// acquire returning), acquisitions per second, attempts per acquisition, per-worker counts
// and overlaps (a next holder that returned before the previous release started: must be 0).
//
// QL_EDGE_APIS=label=path,... compares builds in one run, alternating ROUNDS (2) times: each
// path is a copy of edge/src/api.js of another build (default: this one, labelled `this`).
// First, the floor: how soon a process can hear a quorum of nodes publish a granting release
// sent by hand with ioredis from another process (`floor()`).
import { fork } from 'node:child_process'
import { loadavg } from 'node:os'
import { fileURLToPath, pathToFileURL } from 'node:url'

const SECS = Number(process.env.SECS ?? 6)
const WORKERS = Number(process.env.WORKERS ?? 8)
const HOLD_MS = Number(process.env.HOLD_MS ?? 1)
const OUTSIDE_MS = Number(process.env.OUTSIDE_MS ?? 2)
const ROUNDS = Number(process.env.ROUNDS ?? 2)
const URLS = (process.env.QL_NODES ?? '').split(',').filter(Boolean)
const now = () => performance.timeOrigin + performance.now()
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

if (process.argv[2] === 'worker') {
  const [, , , api, key, start, end] = process.argv
  const { Client } = await import(api)
  const { default: IORedis } = await import(process.env.QL_IOREDIS)
  const nodes = URLS.map((u) => new IORedis(u, { maxRetriesPerRequest: 1 }))
  const client = await Client.connect({ nodes, nodeTimeoutMs: 200 })
  await sleep(Number(start) - now())
  const holds = []
  let failed = 0
  while (now() < Number(end)) {
    try {
      const lock = await client.acquire(key, { ttlMs: 10_000, retryCount: 1_000_000, waitMs: 30_000 })
      const acquired = now()
      // The hold: a busy 1 ms (a timer would add the event loop's timer granularity).
      while (now() - acquired < HOLD_MS);
      const released = now()
      await lock.release()
      holds.push([acquired, released, lock.attempts])
    } catch {
      failed++
    }
    await sleep(OUTSIDE_MS)
  }
  await client.close()
  await Promise.allSettled(nodes.map((n) => n.quit()))
  process.send({ holds, failed })
  process.exit(0)
}

// The floor's listener: one ioredis subscriber per node; the time each cycle's quorum-th
// message arrived, by cycle.
if (process.argv[2] === 'floor-listener') {
  const [, , , channel, end] = process.argv
  const { default: IORedis } = await import(process.env.QL_IOREDIS)
  const heard = new Map()
  const quorum = Math.floor(URLS.length / 2) + 1
  const subs = URLS.map((u) => new IORedis(u, { maxRetriesPerRequest: 1 }))
  for (const sub of subs) {
    sub.on('message', (_channel, cycle) => {
      const n = (heard.get(cycle)?.n ?? 0) + 1
      heard.set(cycle, { n, at: n === quorum ? now() : heard.get(cycle)?.at })
    })
  }
  await Promise.all(subs.map((s) => s.subscribe(channel)))
  process.send({ ready: true })
  await sleep(Number(end) - now() + 300)
  await Promise.allSettled(subs.map((s) => s.quit()))
  process.send({ heard: [...heard].filter(([, h]) => h.at !== undefined).map(([c, h]) => [c, h.at]) })
  process.exit(0)
}

const pct = (xs, p) => (xs.length ? xs[Math.min(Math.floor((xs.length * p) / 100), xs.length - 1)] : 0)

/** One run of `api`: WORKERS processes on one fresh key. */
async function runOne(api, run) {
  const key = `edge-handoff:${process.pid}:${run}`
  const start = now() + 1500
  const from = start + 500
  const end = from + SECS * 1000
  const self = fileURLToPath(import.meta.url)
  const results = await Promise.all(Array.from({ length: WORKERS }, () => new Promise((resolve, reject) => {
    const child = fork(self, ['worker', api, key, String(start), String(end)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
    child.on('message', resolve)
    child.on('exit', (code) => code !== 0 && reject(new Error(`worker exited ${code}`)))
  })))
  const holds = results
    .flatMap((r, w) => r.holds.map(([acquired, released, attempts]) => ({ w, acquired, released, attempts })))
    .sort((a, b) => a.acquired - b.acquired)
  const counted = holds.filter((h) => h.acquired >= from && h.acquired < end)
  const gaps = []
  let overlaps = 0
  for (let i = 1; i < holds.length; i++) {
    const [prev, next] = [holds[i - 1], holds[i]]
    if (next.acquired < from || next.acquired >= end) continue
    if (next.acquired < prev.released) overlaps++
    gaps.push((next.acquired - prev.released) * 1000)
  }
  gaps.sort((a, b) => a - b)
  const perWorker = Array.from({ length: WORKERS }, (_, w) => counted.filter((h) => h.w === w).length)
  return {
    acqs: counted.length / SECS,
    gap50: Math.round(pct(gaps, 50)),
    gap99: Math.round(pct(gaps, 99)),
    attempts: counted.reduce((s, h) => s + h.attempts, 0) / Math.max(counted.length, 1),
    perWorker,
    overlaps,
    failed: results.reduce((s, r) => s + r.failed, 0),
  }
}

// A granting release's effect (write the key, publish), as the floor sends it by hand.
const GRANT = "redis.call('SET', KEYS[1], ARGV[1], 'PX', 10000) redis.call('PUBLISH', KEYS[2], ARGV[1]) return 1"

/**
 * The floor of a hand-off on these nodes with Node and ioredis: this process sends a granting
 * release's script to every node (one ioredis client each) and a listener process hears the
 * quorum-th node's message; cycles are a busy hold apart. No edge hand-off can be quicker.
 */
async function floor() {
  const channel = `edge-handoff-floor:{${process.pid}}:released`
  const key = `edge-handoff-floor:{${process.pid}}`
  const from = now() + 1500
  const end = from + Math.min(SECS, 3) * 1000
  const self = fileURLToPath(import.meta.url)
  const child = fork(self, ['floor-listener', channel, String(end)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  const messages = []
  const next = () => new Promise((resolve) => child.once('message', resolve))
  await next()
  const { default: IORedis } = await import(process.env.QL_IOREDIS)
  const nodes = URLS.map((u) => new IORedis(u, { maxRetriesPerRequest: 1 }))
  for (const n of nodes) n.defineCommand('grant', { numberOfKeys: 2, lua: GRANT })
  const sent = new Map()
  for (let cycle = 0; now() < end; cycle++) {
    const t0 = now()
    if (t0 >= from) sent.set(String(cycle), t0)
    await Promise.all(nodes.map((n) => n.grant(key, channel, String(cycle))))
    const held = now()
    while (now() - held < HOLD_MS);
  }
  const { heard } = await next()
  await Promise.allSettled(nodes.map((n) => n.quit()))
  for (const [cycle, at] of heard) if (sent.has(cycle)) messages.push((at - sent.get(cycle)) * 1000)
  messages.sort((a, b) => a - b)
  return { cycles: messages.length, p50: Math.round(pct(messages, 50)), p99: Math.round(pct(messages, 99)) }
}

const here = new URL('../src/api.js', import.meta.url).href
const apis = (process.env.QL_EDGE_APIS ?? `this=${fileURLToPath(here)}`)
  .split(',')
  .map((s) => s.split('='))
  .map(([label, path]) => [label, pathToFileURL(path).href])
process.env.QL_IOREDIS ??= new URL('../../bench/node/node_modules/ioredis/built/index.js', import.meta.url).href
console.log(`edge hand-off: ${URLS.length} nodes, ${WORKERS} worker processes, hold ${HOLD_MS} ms, ` +
  `outside ${OUTSIDE_MS} ms, ${SECS} s per run, ${ROUNDS} rounds; load average ${loadavg().map((x) => x.toFixed(2)).join(' ')}`)
const f = await floor()
console.log(`floor: a granting release's script sent by hand (ioredis) until another process heard the quorum-th ` +
  `node's message, ${f.cycles} cycles: p50 ${f.p50} µs, p99 ${f.p99} µs`)
console.log(`${'build'.padEnd(10)} ${'acq/s'.padStart(6)} ${'gap p50 µs'.padStart(11)} ${'gap p99 µs'.padStart(11)} ${'attempts/acq'.padStart(13)} ${'per worker'.padStart(12)} overlaps failed`)
let run = 0
for (let r = 0; r < ROUNDS; r++) {
  for (const [label, api] of apis) {
    const s = await runOne(api, run++)
    const spread = `${Math.min(...s.perWorker)}..${Math.max(...s.perWorker)}`
    console.log(`${label.padEnd(10)} ${s.acqs.toFixed(0).padStart(6)} ${String(s.gap50).padStart(11)} ${String(s.gap99).padStart(11)} ` +
      `${s.attempts.toFixed(2).padStart(13)} ${spread.padStart(12)} ${String(s.overlaps).padStart(8)} ${String(s.failed).padStart(6)}`)
  }
}
console.log(`load average after: ${loadavg().map((x) => x.toFixed(2)).join(' ')}`)
