// Node benchmark: acquire+release latency and throughput of quorumlock against node-redlock
// 4.2.0, 5.0.0-beta.2, @sesamecare-oss/redlock and a raw ioredis floor, on the same 5 local
// redis-server nodes (ql-harness), in one run.
//
//   node bench/node/bench.mjs [--secs 3] [--rounds 2] [--conc 1,16,64] [--rust-bin FILE]
//                             [--json FILE] [--only a,b]
//
// Each of `conc` concurrent async loops works on its own key for a warm-up and then `--secs`
// measured seconds; only operations started in the window count. Implementations alternate
// for `--rounds` rounds; the best run of each by throughput is shown, as in bench/rust. A
// failed operation (rejection, refusal, 10 s timeout) is counted, never fatal. `--rust-bin` is
// the release `quorumlock-bench` binary (bench/run builds it): each round first runs it on the
// same nodes at the same concurrency (rows "rust" and "rust-floor": the Rust engine and the
// raw floor of bench/rust); at c=1 the engine's p50 is the reference of the x1.3 goal (issue
// 22), at every concurrency the floor's p50 that of issue 20's x1.3. Nodes: $QL_NODES if set, else 5 started
// with ql-harness ($QL_HARNESS, --persist $QL_BENCH_PERSIST or always: the Node package has
// no quarantine option, so the nodes must be durable).
import { execFileSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { performance } from 'node:perf_hooks'
import { parseArgs } from 'node:util'

import { IMPLS } from './impls.mjs'
import { startNodes, stopNodes } from './nodes.mjs'

const WARMUP_MS = 500
const OP_TIMEOUT_MS = 10_000
// Goals: p50 at c=1 within x1.3 of the Rust engine's c=1 p50 (issue 22); p50 within x1.3 of
// the Rust floor, throughput >= x1.5 redlock 5 and >= the ioredis floor (issue 20).
const P50_GOAL = 1.3
const TPUT_GOAL = 1.5

function stats (lat, errors, secs) {
  lat.sort((a, b) => a - b)
  const n = lat.length
  const pct = (p) => (n ? Math.round(lat[Math.min(Math.floor((n * p) / 100), n - 1)] * 1000) : 0)
  return { ops: n, errors, tput: n / secs, p50: pct(50), p99: pct(99) }
}

function withTimeout (promise) {
  let timer
  const timeout = new Promise((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer in ${OP_TIMEOUT_MS} ms`)), OP_TIMEOUT_MS)
  })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}

/** One run of `conc` loops; resolves to [stats, {message: count}]. */
async function runOne (impl, urls, conc, runId, secs) {
  const messages = {}
  const note = (e) => {
    const m = `${e?.name ?? 'Error'}: ${String(e?.message ?? e).slice(0, 120)}`
    messages[m] = (messages[m] ?? 0) + 1
  }
  let inst
  try {
    inst = await impl.create(urls)
  } catch (e) {
    note(e)
    return [stats([], 1, secs), messages]
  }
  const warmEnd = performance.now() + WARMUP_MS
  const end = warmEnd + secs * 1000
  const lat = []
  let errors = 0
  const loop = async (key) => {
    for (;;) {
      const t0 = performance.now()
      if (t0 >= end) return
      let ok = false
      try {
        ok = Boolean(await withTimeout(inst.op(key)))
      } catch (e) {
        note(e)
      }
      if (t0 < warmEnd) continue
      if (ok) lat.push(performance.now() - t0)
      else errors++
    }
  }
  await Promise.all(Array.from({ length: conc }, (_, i) => loop(`bench:${runId}:${i}`)))
  await withTimeout(inst.close()).catch((e) => note(e))
  return [stats(lat, errors, secs), messages]
}

/** One run of the Rust engine and the Rust raw floor (quorumlock-bench) on our nodes. */
function runRust (bin, urls, conc, secs) {
  const persist = process.env.QL_BENCH_PERSIST ?? 'always'
  const of = (r) => ({ ops: r.ops, errors: r.errors, tput: r.ops_per_sec, p50: r.p50_us, p99: r.p99_us })
  try {
    const out = execFileSync(bin, ['--json', '--nodes', urls.join(','), '--conc', String(conc),
      '--rounds', '1', '--secs', String(secs), '--persist', persist],
    { encoding: 'utf8', timeout: (60 + 4 * secs) * 1000, stdio: ['ignore', 'pipe', 'pipe'] })
    const c = JSON.parse(out).cases[0]
    return [of(c.quorumlock), of(c.floor)]
  } catch (e) {
    console.error(`  rust bench failed: ${e.message}`)
    return [stats([], 1, secs), stats([], 1, secs)]
  }
}

const ratio = (a, b) => (b > 0 ? `x${(a / b).toFixed(2)}` : 'n/a')
const verdict = (met) => (met ? 'goal met' : 'goal missed')

function printTable (opts, results) {
  const l = loadavg().map((x) => x.toFixed(2)).join(' ')
  console.log(`quorumlock Node bench: 5 nodes, ${opts.secs} s per case, ${opts.rounds} runs each ` +
    `(best by throughput), load average ${l}`)
  console.log(`${'case'.padEnd(8)} ${'impl'.padEnd(21)} ${'ops/s'.padStart(9)} ` +
    `${'p50 µs'.padStart(8)} ${'p99 µs'.padStart(8)} ${'errors'.padStart(7)}`)
  for (const [conc, row] of results) {
    const c = `c=${conc}`.padEnd(8)
    for (const [name, s] of Object.entries(row)) {
      console.log(`${c} ${name.padEnd(21)} ${s.tput.toFixed(0).padStart(9)} ` +
        `${String(s.p50).padStart(8)} ${String(s.p99).padStart(8)} ${String(s.errors).padStart(7)}`)
    }
    const q = row.quorumlock
    if (!q) continue
    const parts = []
    if (row.rust && row['rust-floor']) {
      const rq = row.rust.p50
      const rf = row['rust-floor'].p50
      let p = `p50 vs rust ${ratio(q.p50, rq)}`
      if (conc === 1) p += ` (goal <= ${P50_GOAL}: ${verdict(rq > 0 && q.p50 / rq <= P50_GOAL)})`
      parts.push(p)
      parts.push(`vs rust floor ${ratio(q.p50, rf)} (goal <= ${P50_GOAL}: ${verdict(rf > 0 && q.p50 / rf <= P50_GOAL)})`)
      parts.push(`ops/s vs rust ${ratio(q.tput, row.rust.tput)}`)
    }
    if (row.floor) {
      parts.push(`p50 vs node floor ${ratio(q.p50, row.floor.p50)}; ops/s vs node floor ` +
        `${ratio(q.tput, row.floor.tput)} (goal >= 1: ${verdict(q.tput >= row.floor.tput)})`)
    }
    const r5 = row['redlock@5.0.0-beta.2']
    if (r5) {
      parts.push(`ops/s vs redlock 5 ${ratio(q.tput, r5.tput)} ` +
        `(goal >= ${TPUT_GOAL}: ${verdict(r5.tput > 0 && q.tput / r5.tput >= TPUT_GOAL)})`)
    }
    for (const peer of ['redlock@4.2.0', '@sesamecare/redlock']) {
      if (row[peer]) parts.push(`vs ${peer} ${ratio(q.tput, row[peer].tput)}`)
    }
    console.log(`${c} quorumlock: ${parts.join('; ')}`)
  }
}

async function main () {
  const env = process.env
  const { values } = parseArgs({
    options: {
      secs: { type: 'string', default: env.QL_BENCH_SECS ?? '3' },
      rounds: { type: 'string', default: env.QL_BENCH_ROUNDS ?? '2' },
      conc: { type: 'string', default: '1,16,64' },
      only: { type: 'string', default: '' },
      'rust-bin': { type: 'string', default: env.QL_BENCH_RUST_BIN },
      json: { type: 'string' }
    }
  })
  const opts = { secs: Number(values.secs), rounds: Number(values.rounds) }
  if (!(opts.secs > 0) || !(opts.rounds >= 1)) throw new RangeError('--secs and --rounds must be positive')
  const only = new Set(values.only.split(',').filter(Boolean))
  const impls = IMPLS.filter((i) => only.size === 0 || only.has(i.name))
  const rustBin = values['rust-bin']
  const [urls, runDir] = startNodes()
  const results = new Map()
  const messages = {}
  let runId = 0
  try {
    for (const conc of values.conc.split(',').map(Number)) {
      const runs = Object.fromEntries([...(rustBin ? ['rust', 'rust-floor'] : []), ...impls.map((i) => i.name)].map((n) => [n, []]))
      for (let round = 1; round <= opts.rounds; round++) {
        if (rustBin) {
          const [rq, rf] = runRust(rustBin, urls, conc, opts.secs)
          for (const [name, s] of [['rust', rq], ['rust-floor', rf]]) {
            runs[name].push(s)
            console.error(`  c=${conc} ${name.padEnd(21)} run ${round}: ${s.tput.toFixed(0).padStart(7)} ops/s  ` +
              `p50 ${String(s.p50).padStart(6)} µs  p99 ${String(s.p99).padStart(6)} µs  errors ${s.errors}`)
          }
        }
        for (const impl of impls) {
          const [s, msgs] = await runOne(impl, urls, conc, ++runId, opts.secs)
          runs[impl.name].push(s)
          const bucket = (messages[impl.name] ??= {})
          for (const [m, n] of Object.entries(msgs)) bucket[m] = (bucket[m] ?? 0) + n
          console.error(`  c=${conc} ${impl.name.padEnd(21)} run ${round}: ${s.tput.toFixed(0).padStart(7)} ops/s  ` +
            `p50 ${String(s.p50).padStart(6)} µs  p99 ${String(s.p99).padStart(6)} µs  errors ${s.errors}`)
        }
      }
      const best = (rs) => rs.reduce((a, b) => (b.tput > a.tput ? b : a))
      results.set(conc, Object.fromEntries(Object.entries(runs).map(([n, rs]) => [n, best(rs)])))
    }
  } finally {
    stopNodes(runDir)
  }
  for (const [name, msgs] of Object.entries(messages)) {
    for (const [m, n] of Object.entries(msgs).sort((a, b) => b[1] - a[1]).slice(0, 3)) {
      console.error(`  ${name} error x${n}: ${m}`)
    }
  }
  printTable(opts, results)
  if (values.json) {
    writeFileSync(values.json, JSON.stringify({ cases: Object.fromEntries(results) }))
  }
}

await main()
