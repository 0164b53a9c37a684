// TLS end to end (docs/SECURITY.md): a mutual-TLS node from ql-harness, the CA and client
// certificate given as node URL parameters, typed errors for a wrong CA and #insecure.
import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'

import { Client, QuorumlockError } from '../index.mjs'
import { startCluster } from './harness.mjs'

let cluster
before(() => { cluster = startCluster(1, 'none', { tls: 'mtls' }) })
after(() => cluster.stop())

/** The node's rediss:// URL with the given query parameters. */
const url = (params) => `${cluster.urls[0].split('?')[0]}?${new URLSearchParams(params)}`

test('locks over mutual TLS with the CA and client certificate as URL parameters', async () => {
  const { ca, cert, key } = cluster.tls
  const client = await Client.connect({
    nodes: [url({ tls_ca: ca, tls_cert: cert, tls_key: key })],
    nodeTimeoutMs: 250,
    quarantine: 'off',
    requireQuorum: true,
    connectTimeoutMs: 10_000,
  })
  const lock = await client.acquire('tls:node', { ttlMs: 5000 })
  const report = await lock.release()
  assert.ok(report.wasHeldByQuorum)
  assert.equal(report.releasedCount, 1)
  await client.close()
})

test('a wrong CA is QL_CONNECTION with the node and its TLS detail', async () => {
  const { other_ca: otherCa, cert, key } = cluster.tls
  const err = await Client.connect({
    nodes: [url({ tls_ca: otherCa, tls_cert: cert, tls_key: key })],
    requireQuorum: true,
    connectTimeoutMs: 10_000,
  }).catch((e) => e)
  assert.ok(err instanceof QuorumlockError, String(err))
  assert.equal(err.code, 'QL_CONNECTION')
  assert.equal(err.nodes[0].kind, 'Tls')
  assert.match(err.nodes[0].detail, /UnknownIssuer/)
  assert.ok(err.message.includes(cluster.addrs[0]), err.message)
})

test('#insecure is refused with QL_INVALID', async () => {
  const err = await Client.connect({ nodes: [`${cluster.urls[0].split('?')[0]}#insecure`] }).catch((e) => e)
  assert.equal(err.code, 'QL_INVALID')
  assert.match(err.message, /#insecure/)
})
