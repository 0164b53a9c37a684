// Edge benchmark (make bench-edge; not a test): the .wasm size (raw and gzipped), and
// acquire+release latency and throughput of quorumlock-edge through ioredis against
// node-redlock 5.0.0-beta.2 and a raw ioredis floor on the nodes of $QL_NODES (5 local
// redis-server nodes under ql-harness exec). Each of `conc` async loops works on its own key
// for a 500 ms warm-up and SECS measured seconds; implementations alternate for ROUNDS rounds
// and the best run of each by throughput is shown, with this process's CPU time per operation
// (user + system; the least load-dependent number on a shared machine). Peers come from bench/node/node_modules.
// With QL_BENCH_RUST_BIN (bench/rust's release quorumlock-bench), the c=1 rows are also given
// as ratios to the Rust engine's c=1 p50 on the same nodes, run once before each round.
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { loadavg } from 'node:os'
import { gzipSync } from 'node:zlib'
import { randomBytes } from 'node:crypto'

import { Client } from '../src/api.js'

const require = createRequire(new URL('../../bench/node/package.json', import.meta.url))
const IORedis = require('ioredis')
const SECS = Number(process.env.SECS ?? 3)
const ROUNDS = Number(process.env.ROUNDS ?? 2)
const CONCS = (process.env.CONC ?? '1,16').split(',').map(Number)
const TTL_MS = 10_000
const URLS = (process.env.QL_NODES ?? '').split(',').filter(Boolean)
const RELEASE_LUA =
  "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end"

const connect = () => URLS.map((u) => new IORedis(u, { maxRetriesPerRequest: 1 }))
const quit = (nodes) => Promise.allSettled(nodes.map((n) => n.quit()))

const IMPLS = {
  async floor() {
    const nodes = connect()
    for (const n of nodes) n.defineCommand('qlRelease', { numberOfKeys: 1, lua: RELEASE_LUA })
    return {
      async op(key) {
        const value = randomBytes(20).toString('hex')
        const sets = await Promise.allSettled(nodes.map((n) => n.set(key, value, 'PX', TTL_MS, 'NX')))
        const dels = await Promise.allSettled(nodes.map((n) => n.qlRelease(key, value)))
        return sets.every((r) => r.value === 'OK') && dels.every((r) => r.value === 1)
      },
      close: () => quit(nodes),
    }
  },
  async 'quorumlock-edge'() {
    const nodes = connect()
    const client = await Client.connect({ nodes, ttlMs: TTL_MS, retryCount: 0, nodeTimeoutMs: 200 })
    return {
      async op(key) {
        const lock = await client.acquire(key)
        return (await lock.release()).wasHeldByQuorum
      },
      async close() {
        await client.close()
        await quit(nodes)
      },
    }
  },
  async 'redlock@5.0.0-beta.2'() {
    const mod = require('redlock5')
    const Redlock = mod.default ?? mod.Redlock ?? mod
    const nodes = connect()
    const redlock = new Redlock(nodes, { retryCount: 0 })
    redlock.on('error', () => {})
    return {
      async op(key) {
        const lock = await redlock.acquire([key], TTL_MS)
        await lock.release()
        return true
      },
      close: () => quit(nodes),
    }
  },
}

async function runOne(create, conc, run) {
  const inst = await create()
  const warmEnd = performance.now() + 500
  let cpu0 = null
  const end = warmEnd + SECS * 1000
  const lat = []
  let errors = 0
  const loop = async (key) => {
    while (performance.now() < end) {
      const t0 = performance.now()
      let ok = false
      try {
        ok = Boolean(await inst.op(key))
      } catch {
        ok = false
      }
      if (t0 < warmEnd) continue
      cpu0 ??= process.cpuUsage()
      if (ok) lat.push(performance.now() - t0)
      else errors++
    }
  }
  await Promise.all(Array.from({ length: conc }, (_, i) => loop(`edge-bench:${run}:${i}`)))
  const cpu = process.cpuUsage(cpu0 ?? undefined)
  await inst.close()
  lat.sort((a, b) => a - b)
  const pct = (p) => (lat.length ? Math.round(lat[Math.min(Math.floor((lat.length * p) / 100), lat.length - 1)] * 1000) : 0)
  const cpuUs = lat.length ? Math.round((cpu.user + cpu.system) / lat.length) : 0
  return { tput: lat.length / SECS, p50: pct(50), p99: pct(99), errors, cpuUs }
}

const wasm = readFileSync(new URL('../wasm/quorumlock_edge_bg.wasm', import.meta.url))
const glue = readFileSync(new URL('../wasm/quorumlock_edge.js', import.meta.url))
console.log(`quorumlock_edge_bg.wasm: ${wasm.length} bytes raw, ${gzipSync(wasm, { level: 9 }).length} bytes gzipped; ` +
  `glue quorumlock_edge.js: ${glue.length} bytes raw, ${gzipSync(glue, { level: 9 }).length} gzipped`)
// The engine's own cost: acquire+release over a transport that answers at once, in-process.
{
  const transport = {
    addresses: ['a:1/0', 'b:1/0', 'c:1/0', 'd:1/0', 'e:1/0'],
    async send(node, argv) {
      switch (argv[0]) {
        case 'INFO': return `uptime_in_seconds:1000\r\nrun_id:${node}\r\n`
        case 'CONFIG': return ['appendonly', 'yes', 'appendfsync', 'always', 'no-appendfsync-on-rewrite', 'no']
        case 'SET': return 'OK'
        default: return 1
      }
    },
  }
  const client = await Client.connect({ transport, ttlMs: TTL_MS, nodeTimeoutMs: 2000 })
  const N = 20_000
  for (let i = 0; i < 2000; i++) await (await client.acquire(`w${i}`)).release()
  const c0 = process.cpuUsage()
  for (let i = 0; i < N; i++) await (await client.acquire(`m${i % 100}`)).release()
  const c = process.cpuUsage(c0)
  console.log(`engine only (instant in-process transport, 5 nodes): ${((c.user + c.system) / N).toFixed(0)} µs CPU per acquire+release`)
  await client.close()
}
console.log(`edge bench: ${URLS.length} nodes, ${SECS} s per case, best of ${ROUNDS}, load average ${loadavg().map((x) => x.toFixed(2)).join(' ')}`)
console.log(`${'case'.padEnd(6)} ${'impl'.padEnd(22)} ${'ops/s'.padStart(8)} ${'p50 µs'.padStart(8)} ${'p99 µs'.padStart(8)} ${'errors'.padStart(7)} ${'CPU µs/op'.padStart(10)}`)
/** The Rust engine's acquire+release p50 at c=1 on the same nodes, µs; 0 without its binary. */
function rustC1() {
  const bin = process.env.QL_BENCH_RUST_BIN
  if (!bin) return 0
  try {
    const out = execFileSync(bin, ['--nodes', URLS.join(','), '--conc', '1', '--rounds', '1', '--secs', '1',
      '--persist', 'always', '--json'], { stdio: ['ignore', 'pipe', 'ignore'] })
    return JSON.parse(out).cases[0].quorumlock.p50_us
  } catch (e) {
    console.error(`Rust engine benchmark ${bin}: ${e.message}`)
    return 0
  }
}

let run = 0
const rust = []
for (const conc of CONCS) {
  const best = {}
  for (let r = 0; r < ROUNDS; r++) {
    if (conc === 1) rust.push(rustC1())
    for (const [name, create] of Object.entries(IMPLS)) {
      const s = await runOne(create, conc, run++)
      if (!best[name] || s.tput > best[name].tput) best[name] = s
    }
  }
  for (const [name, s] of Object.entries(best)) {
    console.log(`${`c=${conc}`.padEnd(6)} ${name.padEnd(22)} ${s.tput.toFixed(0).padStart(8)} ${String(s.p50).padStart(8)} ${String(s.p99).padStart(8)} ${String(s.errors).padStart(7)} ${String(s.cpuUs).padStart(10)}`)
  }
  const q = best['quorumlock-edge']
  const r5 = best['redlock@5.0.0-beta.2']
  console.log(`${`c=${conc}`.padEnd(6)} quorumlock-edge vs redlock 5: ops/s x${(q.tput / r5.tput).toFixed(2)}, p50 x${(q.p50 / r5.p50).toFixed(2)}, CPU per op x${(q.cpuUs / r5.cpuUs).toFixed(2)}`)
  const engine = rust.filter((x) => x > 0).sort((a, b) => a - b)
  if (conc === 1 && engine.length > 0) {
    const p50 = engine[Math.floor(engine.length / 2)]
    const ratios = Object.entries(best).map(([name, s]) => `${name} x${(s.p50 / p50).toFixed(2)}`)
    console.log(`c=1    p50 vs the Rust engine's c=1 p50 (${p50} µs, median of ${engine.join(', ')}): ${ratios.join(', ')}`)
  }
}
