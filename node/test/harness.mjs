// Test helpers: a real multi-node cluster from ql-harness, and raw RESP commands.
import { execFile, execFileSync } from 'node:child_process'
import net from 'node:net'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'

const here = path.dirname(fileURLToPath(import.meta.url))
export const HARNESS = process.env.QL_HARNESS ?? path.resolve(here, '../../target/debug/ql-harness')
const run = promisify(execFile)

/**
 * Starts `n` redis-server nodes, stopped when this process exits or `stop()` is called;
 * `persist` is `always` (durable), `none` or `everysec`. With `redisCluster` masters, also one
 * Redis Cluster: `redisCluster.url` (`redis+cluster://...`) and its nodes' `addrs`. With `tls`
 * `'tls'` or `'mtls'`, TLS-only nodes; `tls` then holds the certificate paths.
 */
export function startCluster(n = 5, persist = 'always', { redisCluster = 0, tls = null } = {}) {
  const args = ['start', '--nodes', String(n), '--persist', persist, '--parent', String(process.pid)]
  if (redisCluster > 0) args.push('--redis-cluster', String(redisCluster))
  if (tls) args.push(`--${tls}`)
  const out = execFileSync(HARNESS, args, { encoding: 'utf8' })
  const info = JSON.parse(out.trim().split('\n').pop())
  return {
    redisCluster: info.redis_cluster && {
      url: info.redis_cluster.url,
      addrs: info.redis_cluster.nodes.map((node) => node.addr),
    },
    urls: info.nodes.map((node) => node.url),
    tls: info.tls ?? null,
    addrs: info.nodes.map((node) => node.addr),
    /** Sends one control command, e.g. { op: 'pause', node: 1 }. */
    ctl: (cmd) => run(HARNESS, ['ctl', info.run_dir, JSON.stringify(cmd)]),
    /** Sends one raw command to node `i` and resolves to its reply. */
    command: (i, ...args) => resp(info.nodes[i].addr, args),
    stop: () => execFileSync(HARNESS, ['stop', info.run_dir]),
  }
}

/** One RESP2 request on a fresh connection; replies: string, number, null, array, Error. */
export function resp(addr, args) {
  const [host, port] = [addr.slice(0, addr.lastIndexOf(':')), Number(addr.slice(addr.lastIndexOf(':') + 1))]
  const parts = args.map((a) => Buffer.from(String(a)))
  const req = Buffer.concat([
    Buffer.from(`*${parts.length}\r\n`),
    ...parts.flatMap((p) => [Buffer.from(`$${p.length}\r\n`), p, Buffer.from('\r\n')]),
  ])
  return new Promise((resolve, reject) => {
    let buf = Buffer.alloc(0)
    const sock = net.connect({ host, port }, () => sock.write(req))
    sock.on('error', reject)
    sock.on('data', (chunk) => {
      buf = Buffer.concat([buf, chunk])
      const parsed = parse(buf, 0)
      if (parsed) {
        sock.destroy()
        resolve(parsed[0])
      }
    })
  })
}

function parse(buf, at) {
  const eol = buf.indexOf('\r\n', at)
  if (eol < 0) return null
  const line = buf.toString('utf8', at + 1, eol)
  const next = eol + 2
  switch (buf[at]) {
    case 0x2b: return [line, next] // +
    case 0x2d: return [new Error(line), next] // -
    case 0x3a: return [Number(line), next] // :
    case 0x24: { // $
      const len = Number(line)
      if (len < 0) return [null, next]
      return buf.length >= next + len + 2 ? [buf.toString('utf8', next, next + len), next + len + 2] : null
    }
    default: { // *
      const items = []
      let pos = next
      for (let i = 0; i < Number(line); i++) {
        const item = parse(buf, pos)
        if (!item) return null
        items.push(item[0])
        pos = item[1]
      }
      return [items, pos]
    }
  }
}

/** The values stored under `key` on every node (null where absent). */
export function valuesOn(cluster, key) {
  return Promise.all(cluster.addrs.map((_, i) => cluster.command(i, 'GET', key)))
}

/**
 * The values under `key` once every node holds `expected` (or after `ms`, whatever they are
 * then): a call returns at the quorum-th reply, so the other nodes' writes may be in flight.
 */
export async function settledValuesOn(cluster, key, expected, ms = 2000) {
  const end = Date.now() + ms
  for (;;) {
    const values = await valuesOn(cluster, key)
    if (values.every((v) => v === expected) || Date.now() > end) return values
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

/**
 * Node `i`'s PTTL of `key` once `ok(pttl)` holds (or after `ms`, whatever it is then): a call
 * returns at the quorum-th reply, so the other nodes' writes may be in flight.
 */
export async function settledPttl(cluster, i, key, ok, ms = 2000) {
  const end = Date.now() + ms
  for (;;) {
    const pttl = await cluster.command(i, 'PTTL', key)
    if (ok(pttl) || Date.now() > end) return pttl
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

/** Every key on every node. */
export async function allKeys(cluster) {
  const lists = await Promise.all(cluster.addrs.map((_, i) => cluster.command(i, 'KEYS', '*')))
  return lists.flat()
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
