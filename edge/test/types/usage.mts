// Compile-only check of index.d.ts against typical use (tsc --noEmit, never run).
import { Redis } from 'ioredis'
import {
  Client,
  ERROR_CODES,
  FENCE_CHECK_SCRIPT,
  Lock,
  QuorumlockError,
  ReplyError,
  TransportError,
  VERSION,
  transports,
  type ErrorCode,
  type NodeEntry,
  type ReleaseReport,
  type Transport,
} from 'quorumlock-edge'

export async function main(): Promise<void> {
  const nodes = [new Redis(6379), new Redis(6380), new Redis(6381)]
  const client = await Client.connect({ nodes, ttlMs: 10_000, quarantine: 'off', keyFormat: 'braced' })
  const n: number = client.nodeCount + client.quorum
  const key: Uint8Array = client.key('invoice:7')
  const ac = new AbortController()
  const lock: Lock = await client.acquire(['invoice:7'], { ttlMs: 5_000, fenced: true, signal: ac.signal })
  const token: bigint | null = lock.token
  const left: number = lock.remainingMs
  lock.signal.addEventListener('abort', () => {})
  await lock.extend(10_000)
  const report: ReleaseReport = await lock.release()
  const entries: readonly NodeEntry[] = report.nodes
  const out: string = await client.using('job', { autoExtend: true }, async (l) => l.value)
  await client.using('job', (l) => l.ttlMs)
  {
    await using scoped = await client.acquire('scoped')
    void scoped.value
  }
  const rest = await Client.connect({ nodes: [{ url: 'https://eu1.example.upstash.io', token: 't' }] })
  const custom: Transport = {
    addresses: ['a:1/0'],
    async send(node, argv) {
      if (argv[0] === 'X') throw new ReplyError('ERR unknown')
      if (node > 0) throw new TransportError('down', 'NotConnected')
      return 'OK'
    },
  }
  const viaHook = new Client({ transport: custom, onWarning: (code, node, message) => void [code, node, message] })
  const t: Transport = transports.transport(nodes.map(transports.ioredisNode))
  try {
    await client.acquire('x', { retryCount: Infinity, waitMs: 100 })
  } catch (e) {
    if (e instanceof QuorumlockError) {
      const code: ErrorCode = e.code
      void [code, e.nodes, e.attemptReports, e.lostReason, e.validityMs]
    }
  }
  void [n, key, token, left, entries, out, rest, viaHook, t, ERROR_CODES, FENCE_CHECK_SCRIPT, VERSION]
  await client.close()
}
