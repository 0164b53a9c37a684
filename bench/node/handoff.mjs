// Hand-off benchmark of node-redlock (the peer of bench/rust/src/bin/handoff.rs): `--workers`
// async workers (8) in this one Node process contend for ONE resource; each has its own Redlock
// instance over its own 5 ioredis connections and loops { acquire (retryCount 1e6: it never
// gives up), hold `--hold-ms` (1 ms, setTimeout), release, then work `--outside-ms` (0)
// outside the lock (setTimeout) } for `--secs` (10 s) after a 0.5 s warm-up.
//
//   node bench/node/handoff.mjs [--secs 10] [--workers 8] [--hold-ms 1] [--outside-ms 0] [--short-delay-ms 10]
//                               [--short-jitter-ms 10] [--only id,...] [--json FILE]
//
// Rows: redlock 5.0.0-beta.2 and 4.2.0 with their default retryDelay 200 ms and retryJitter
// 100 ms (a delay of 200 + U(-100, 100) ms, the same 100..300 ms as quorumlock's default
// 100 + U(0, 200) ms), and redlock 5 with the short delay of the quorumlock polling row
// (`--short-delay-ms` + U(0, `--short-jitter-ms`), i.e. retryDelay d + j/2, retryJitter j/2).
//
// Times come from process.hrtime.bigint(). All holds are sorted by acquire time; the hand-off
// gap is from the START of the previous holder's release call to the next holder's acquire
// returning, as in the Rust bench; an acquire returning before the previous holder started
// its release is an overlap (must be 0). Nodes: see nodes.mjs.
import { writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { loadavg } from 'node:os'
import { parseArgs } from 'node:util'

import IORedis from 'ioredis'

import { startNodes, stopNodes } from './nodes.mjs'

const require = createRequire(import.meta.url)
const WARMUP_NS = 500_000_000n
const TTL_MS = 10_000
const RETRY_COUNT = 1_000_000

const now = () => process.hrtime.bigint()
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

function connect (urls) {
  return urls.map((u) => new IORedis(u, { maxRetriesPerRequest: 1, enableOfflineQueue: true }))
}

/** One worker's lock API over its own connections: `{ acquire(key), release(lock), close() }`. */
function redlock5 (urls, retry) {
  const Redlock = require('redlock5').default
  const nodes = connect(urls)
  const redlock = new Redlock(nodes, { retryCount: RETRY_COUNT, ...retry })
  redlock.on('error', () => {})
  return {
    acquire: (key) => redlock.acquire([key], TTL_MS),
    release: (lock) => lock.release(),
    attempts: (lock) => lock.attempts.length,
    close: () => Promise.allSettled(nodes.map((n) => n.quit()))
  }
}

function redlock4 (urls, retry) {
  const Redlock = require('redlock4')
  const nodes = connect(urls)
  const redlock = new Redlock(nodes, { retryCount: RETRY_COUNT, ...retry })
  redlock.on('clientError', () => {})
  return {
    acquire: (key) => redlock.lock(key, TTL_MS),
    release: (lock) => lock.unlock(),
    attempts: (lock) => lock.attempts,
    close: () => Promise.allSettled(nodes.map((n) => n.quit()))
  }
}

const R5 = 'redlock@5.0.0-beta.2'

function rows (shortDelayMs, shortJitterMs) {
  const short = { retryDelay: shortDelayMs + shortJitterMs / 2, retryJitter: shortJitterMs / 2 }
  const dflt = { retryDelay: 200, retryJitter: 100 }
  const label = (r) => `poll ${r.retryDelay}±${r.retryJitter} ms`
  return [
    { id: 'redlock5', impl: R5, create: redlock5, retry: {}, shown: dflt, defaults: true },
    { id: 'redlock5-short', impl: R5, create: redlock5, retry: short, shown: short, defaults: false },
    { id: 'redlock4', impl: 'redlock@4.2.0', create: redlock4, retry: {}, shown: dflt, defaults: true }
  ].map((r) => ({
    ...r,
    label: `${label(r.shown)}${r.defaults ? ' (its defaults)' : ''}, own instances`
  }))
}

function pct (sorted, p) {
  const n = sorted.length
  return n === 0 ? 0n : sorted[Math.min(Math.floor((n * p) / 100), n - 1)]
}

const us = (ns) => Number((ns + 500n) / 1000n)

/** The statistics of one row from all holds, as `analyse` in the Rust bench. */
function analyse (holds, workers, warmEnd, end) {
  holds.sort((a, b) => (a.acquired < b.acquired ? -1 : a.acquired > b.acquired ? 1 : 0))
  const inWindow = (t) => t >= warmEnd && t < end
  const perWorker = new Array(workers).fill(0)
  const holdNs = []
  const relNs = []
  let attempts = 0
  let firstTry = 0
  for (const h of holds) {
    if (!inWindow(h.acquired)) continue
    perWorker[h.worker]++
    holdNs.push(h.releaseStart - h.acquired)
    relNs.push(h.releaseEnd - h.releaseStart)
    attempts += h.attempts
    if (h.attempts === 1) firstTry++
  }
  const gaps = []
  const otherGaps = []
  let same = 0
  let overlaps = 0
  let idleMax = 0n
  for (let i = 0; i + 1 < holds.length; i++) {
    const [prev, next] = [holds[i], holds[i + 1]]
    if (next.acquired < prev.releaseStart) overlaps++
    // The longest time without a holder touching the window (a lock stuck after a split vote
    // shows here even when no acquisition followed inside the window).
    const idle = next.acquired - prev.releaseStart
    if (prev.releaseStart < end && next.acquired > warmEnd && idle > idleMax) idleMax = idle
    if (!inWindow(next.acquired)) continue
    const gap = next.acquired > prev.releaseStart ? next.acquired - prev.releaseStart : 0n
    gaps.push(gap)
    if (next.worker === prev.worker) same++
    else otherGaps.push(gap)
  }
  const cmp = (a, b) => (a < b ? -1 : a > b ? 1 : 0)
  for (const v of [gaps, otherGaps, holdNs, relNs]) v.sort(cmp)
  const n = holdNs.length
  const secs = Number(end - warmEnd) / 1e9
  return {
    acquisitions: n,
    acq_per_sec: n / secs,
    gaps: gaps.length,
    gap_p50_us: us(pct(gaps, 50)),
    gap_p99_us: us(pct(gaps, 99)),
    gap_max_us: us(idleMax),
    gaps_over_5ms: gaps.filter((g) => g > 5_000_000n).length,
    gaps_over_50ms: gaps.filter((g) => g > 50_000_000n).length,
    same_worker_pct: gaps.length ? (100 * same) / gaps.length : 0,
    other_gap_p50_us: us(pct(otherGaps, 50)),
    other_gap_p99_us: us(pct(otherGaps, 99)),
    overlaps,
    hold_p50_us: us(pct(holdNs, 50)),
    hold_max_us: us(holdNs.length ? holdNs[holdNs.length - 1] : 0n),
    release_max_us: us(relNs.length ? relNs[relNs.length - 1] : 0n),
    release_p50_us: us(pct(relNs, 50)),
    attempts_per_acq: n ? attempts / n : 0,
    first_try_pct: n ? (100 * firstTry) / n : 0,
    per_worker_min: Math.min(...perWorker),
    per_worker_max: Math.max(...perWorker)
  }
}

/** Calls per command summed over the nodes (INFO commandstats; `info` itself left out). */
async function nodeCalls (urls) {
  const calls = {}
  for (const url of urls) {
    const c = new IORedis(url, { maxRetriesPerRequest: 1 })
    try {
      for (const line of (await c.info('commandstats')).split(/\r?\n/)) {
        const m = /^cmdstat_([^:]+):calls=(\d+)/.exec(line)
        if (m && m[1] !== 'info') calls[m[1]] = (calls[m[1]] ?? 0) + Number(m[2])
      }
    } finally {
      c.disconnect()
    }
  }
  return calls
}

function callsPerAcq (before, after, acq) {
  const out = {}
  for (const [k, n] of Object.entries(after)) {
    const d = n - (before[k] ?? 0)
    if (d > 0) out[k] = d / Math.max(acq, 1)
  }
  return out
}

async function runRow (row, urls, opts, runId) {
  const callsBefore = await nodeCalls(urls)
  const apis = Array.from({ length: opts.workers }, () => row.create(urls, row.retry))
  const key = `handoff:${process.pid}:${runId}`
  const holds = []
  const failed = {}
  let releaseFailures = 0
  const warmEnd = now() + WARMUP_NS
  const end = warmEnd + BigInt(Math.round(opts.secs * 1e9))
  const worker = async (w) => {
    const api = apis[w]
    for (;;) {
      const t0 = now()
      if (t0 >= end) return
      let lock
      try {
        lock = await api.acquire(key)
      } catch (e) {
        if (t0 >= warmEnd) {
          const m = `${e?.name ?? 'Error'}: ${String(e?.message ?? e).slice(0, 80)}`
          failed[m] = (failed[m] ?? 0) + 1
        }
        continue
      }
      const acquired = now()
      await sleep(opts.holdMs)
      const releaseStart = now()
      try {
        await api.release(lock)
      } catch {
        releaseFailures++
      }
      const releaseEnd = now()
      holds.push({ worker: w, acquired, releaseStart, releaseEnd, attempts: api.attempts(lock) })
      if (opts.outsideMs > 0) await sleep(opts.outsideMs)
    }
  }
  await Promise.all(apis.map((_, w) => worker(w)))
  await Promise.allSettled(apis.map((a) => a.close()))
  const perCmd = callsPerAcq(callsBefore, await nodeCalls(urls), holds.length)
  const stats = analyse(holds, opts.workers, warmEnd, end)
  const nFailed = Object.values(failed).reduce((a, b) => a + b, 0)
  return {
    ...stats,
    impl: row.impl,
    id: row.id,
    label: row.label,
    notify: false,
    clients: opts.workers,
    retry_delay_ms: row.shown.retryDelay,
    retry_jitter_ms: row.shown.retryJitter,
    jitter_shape: 'delay + U(-jitter, jitter)',
    defaults: row.defaults,
    failed: nFailed,
    failed_by_kind: failed,
    release_failures: releaseFailures,
    wakeups: null,
    node_cmds_per_acq: Object.values(perCmd).reduce((a, b) => a + b, 0),
    node_cmds_per_acq_by_cmd: perCmd
  }
}

function progress (s) {
  const f = (x) => (typeof x === 'number' && !Number.isInteger(x) ? x.toFixed(1) : String(x))
  const cmds = JSON.stringify(s.node_cmds_per_acq_by_cmd,
    (_k, v) => (typeof v === 'number' ? Number(v.toFixed(2)) : v))
  console.error(`  ${s.impl} ${s.label}: ${f(s.acq_per_sec)} acq/s, gap p50 ${s.gap_p50_us} µs ` +
    `p99 ${s.gap_p99_us} µs, to another worker ${f(100 - s.same_worker_pct)}% ` +
    `(p50 ${s.other_gap_p50_us} µs), failed ${s.failed}, attempts/acq ${f(s.attempts_per_acq)}, ` +
    `overlaps ${s.overlaps}, hold p50 ${s.hold_p50_us} µs, per worker ${s.per_worker_min}..${s.per_worker_max}, ` +
    `node commands/acq ${f(s.node_cmds_per_acq)} ${cmds}`)
}

async function main () {
  const { values } = parseArgs({
    options: {
      secs: { type: 'string', default: '10' },
      workers: { type: 'string', default: '8' },
      'hold-ms': { type: 'string', default: '1' },
      'outside-ms': { type: 'string', default: '0' },
      'short-delay-ms': { type: 'string', default: '10' },
      'short-jitter-ms': { type: 'string', default: '10' },
      only: { type: 'string', default: '' },
      json: { type: 'string' }
    }
  })
  const opts = {
    secs: Number(values.secs),
    workers: Number(values.workers),
    holdMs: Number(values['hold-ms']),
    outsideMs: Number(values['outside-ms'])
  }
  if (!(opts.secs > 0) || !(opts.workers >= 2) || !(opts.holdMs >= 0) || !(opts.outsideMs >= 0)) {
    throw new RangeError('--secs must be positive, --workers at least 2, --hold-ms and --outside-ms non-negative')
  }
  const only = new Set(values.only.split(',').filter(Boolean))
  const selected = rows(Number(values['short-delay-ms']), Number(values['short-jitter-ms']))
    .filter((r) => only.size === 0 || only.has(r.id))
  const loadBefore = loadavg().map((x) => x.toFixed(2)).join(' ')
  const [urls, runDir] = startNodes()
  console.error(`node-redlock hand-off: ${opts.workers} workers x 1 resource, ` +
    `hold ${opts.holdMs} ms, outside ${opts.outsideMs} ms, ${opts.secs} s per row, ${urls.length} nodes, load average ${loadBefore}`)
  const out = []
  try {
    let runId = 0
    for (const row of selected) {
      const s = await runRow(row, urls, opts, ++runId)
      progress(s)
      out.push(s)
    }
  } finally {
    stopNodes(runDir)
  }
  const result = {
    workers: opts.workers,
    hold_ms: opts.holdMs,
    outside_ms: opts.outsideMs,
    secs: opts.secs,
    nodes: urls.length,
    ttl_ms: TTL_MS,
    retry_count: RETRY_COUNT,
    load_before: loadBefore,
    load_after: loadavg().map((x) => x.toFixed(2)).join(' '),
    rows: out
  }
  if (values.json) writeFileSync(values.json, JSON.stringify(result))
  else console.log(JSON.stringify(result, null, 2))
}

await main()
