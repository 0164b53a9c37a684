// Type test (tsc --noEmit): the public API as a TypeScript 5.2+ user writes it.
import { Client, ERROR_CODES, FENCE_CHECK_SCRIPT, LATENCY_BOUNDS_US, QuorumlockError, type ErrorCode, type Histogram, type Lock, type Metrics, type NodeInfo, type ReleaseReport } from 'quorumlock'
import Redlock, { ExecutionError, ResourceLockedError, type RedlockAbortSignal } from 'quorumlock/compat'

const client = await Client.connect({ nodes: ['redis://127.0.0.1:6379'], ttlMs: 5000, retryCount: 3, fenced: true, quarantine: 'strict', evictionCheck: 'warn' })
const infos: NodeInfo[] = await client.ping()
void [infos, FENCE_CHECK_SCRIPT.length]

{
  await using lock = await client.acquire(['invoice:7'], { ttlMs: 10_000, signal: AbortSignal.timeout(2000) })
  const remaining: number = lock.remainingMs
  const value: string = lock.value
  const token: bigint | null = lock.token
  const tokens: bigint[] | null = lock.tokens
  void [token, tokens]
  const extended: Lock = await lock.extend(10_000)
  lock.signal.addEventListener('abort', () => console.log('lost', lock.signal.reason))
  void [remaining, value, extended]
}

const metrics: Metrics = client.metrics()
const busy: number = metrics.acquire.failed.QL_BUSY ?? 0
const latency: Histogram = metrics.acquire.latency
const p99: number | null = latency.p99Ms
const deadNodes = metrics.nodes.filter((n) => n.errors > 0).map((n) => `${n.address}: ${n.replies.Timeout ?? 0} timeouts`)
const bounds: readonly number[] = LATENCY_BOUNDS_US
const prometheus: string = client.metricsPrometheus()
void [busy, p99, deadNodes, bounds, prometheus, latency.boundsUs, metrics.acquireAttempts]
// @ts-expect-error failed is keyed by error code
void metrics.acquire.failed.BUSY
// @ts-expect-error the snapshot is read-only
metrics.lost = 0

const total: number = await client.using('invoice:8', { ttlMs: 2000 }, async (lock) => {
  if (lock.signal.aborted) throw lock.signal.reason
  return 42
})

try {
  const lock = await client.acquire('x')
  const report: ReleaseReport = await lock.release()
  console.log(report.wasHeldByQuorum, report.nodes.map((n) => n.kind))
} catch (e) {
  if (e instanceof QuorumlockError) {
    const code: ErrorCode = e.code
    console.log(code, e.attempts, e.nodes.length, ERROR_CODES.includes(code))
  }
}

// @ts-expect-error durations are named ttlMs
await client.acquire('x', { ttl: 5 })
// @ts-expect-error resources are strings or bytes
await client.acquire(42)

await using disposableClient = new Client(['redis://127.0.0.1:6379'])
void disposableClient

const redlock = new Redlock([{ options: { host: 'a.redis.example.com', port: 6379 } }, 'redis://b:6379'], {
  retryCount: 10,
  automaticExtensionThreshold: 500,
})
redlock.on('error', (error: Error) => {
  if (error instanceof ResourceLockedError) return
  console.error(error)
})
await redlock.using(['a', 'b'], 5000, async (signal: RedlockAbortSignal) => {
  if (signal.aborted) throw signal.error
})
let lock = await redlock.acquire(['a'], 5000)
lock = await lock.extend(5000)
await lock.release()
try {
  await redlock.acquire(['a'], 5000)
} catch (e) {
  if (e instanceof ExecutionError) console.log(e.attempts.length, total)
}

// quorumlock's extra settings are constructor options of the compat Redlock.
const durable = new Redlock([{ options: { host: 'c', keyPrefix: 'app:' } }], { quarantine: 'on', maxTtl: 60_000, fenced: true })
void durable
// @ts-expect-error quarantine is 'on', 'strict' or 'off'
void new Redlock(['redis://c:6379'], { quarantine: true })
