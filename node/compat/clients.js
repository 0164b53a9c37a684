'use strict'
// ioredis clients (and node URLs) to quorumlock node URLs. The compat layer never sends a
// command through the caller's clients: it reads their `.options` and connects on its own.
// What it cannot honor is refused with a QL_INVALID QuorumlockError naming the option.

const { QuorumlockError } = require('../index.js')

function refuse(i, message) {
  return new QuorumlockError({ code: 'QL_INVALID', message: `QL_INVALID: client #${i}: ${message}`, attempts: 0, nodes: [] })
}

function hostPort(host, port) {
  const h = String(host)
  return `${h.includes(':') ? `[${h}]` : h}:${port}`
}

function credentials(o) {
  const user = o.username ? encodeURIComponent(o.username) : ''
  if (o.password != null && o.password !== '') return `${user}:${encodeURIComponent(o.password)}@`
  return user ? `${user}@` : ''
}

/** TLS on or off; options the engine cannot apply (certificates, verification off) are refused. */
function tlsOn(i, tls, where) {
  if (tls === undefined || tls === null || tls === false) return false
  if (tls === true) return true
  if (typeof tls !== 'object') throw refuse(i, `${where}.tls must be an object or a boolean`)
  const keys = Object.keys(tls).filter((k) => tls[k] !== undefined)
  if (keys.length > 0) {
    throw refuse(
      i,
      `${where}.tls.${keys.join(`, ${where}.tls.`)} cannot be honored: quorumlock opens its own TLS connections ` +
        '(rediss://) and always verifies the server against the trusted roots; use `tls: {}`',
    )
  }
  return true
}

/** The ioredis options that change which keys or servers are used and that the engine cannot follow. */
function refuseRouting(i, o, where) {
  if (Array.isArray(o.sentinels) && o.sentinels.length > 0) {
    throw refuse(
      i,
      `${where}.sentinels cannot be honored: Redlock needs each master itself, and a Sentinel failover to a ` +
        'replica can lose locks; list the masters (host/port) as clients instead',
    )
  }
  if (o.natMap != null) {
    throw refuse(
      i,
      `${where}.natMap cannot be honored: quorumlock connects to the addresses it is given and does not ` +
        'translate announced addresses; give the reachable host/port of each node',
    )
  }
}

function redisUrl(i, o) {
  refuseRouting(i, o, 'options')
  const db = o.db ?? 0
  if (o.path) {
    const q = new URLSearchParams({ db: String(db) })
    if (o.username) q.set('user', o.username)
    if (o.password != null && o.password !== '') q.set('pass', o.password)
    return `unix://${o.path}?${q}`
  }
  const auth = credentials(o)
  const scheme = tlsOn(i, o.tls, 'options') ? 'rediss' : 'redis'
  return `${scheme}://${auth}${hostPort(o.host ?? 'localhost', o.port ?? 6379)}/${db}`
}

/** An ioredis startup node (a port, `host:port`, a URL or `{ host, port }`) as `host:port`. */
function startupNode(i, node) {
  if (typeof node === 'number') return hostPort('127.0.0.1', node)
  if (typeof node === 'string') {
    const url = new URL(/^[a-z]+:\/\//.test(node) ? node : `redis://${node}`)
    return hostPort(url.hostname.replace(/^\[|\]$/g, '') || '127.0.0.1', url.port || 6379)
  }
  if (node !== null && typeof node === 'object') return hostPort(node.host ?? '127.0.0.1', node.port ?? 6379)
  throw refuse(i, `startup node ${JSON.stringify(node)} is not a port, host:port or { host, port }`)
}

/** An ioredis Cluster as one member: `redis+cluster://[user:pass@]host:port,...`. */
function clusterUrl(i, cluster) {
  const o = cluster.options
  refuseRouting(i, o, 'options')
  const r = o.redisOptions ?? {}
  refuseRouting(i, r, 'options.redisOptions')
  const seeds = cluster.startupNodes
  if (!Array.isArray(seeds) || seeds.length === 0) throw refuse(i, 'the ioredis Cluster has no startup nodes')
  const scheme = tlsOn(i, r.tls, 'options.redisOptions') ? 'rediss+cluster' : 'redis+cluster'
  return `${scheme}://${credentials(r)}${seeds.map((n) => startupNode(i, n)).join(',')}`
}

/** `{ url, keyPrefix }` of client #i: an ioredis Redis or Cluster, or a node URL string. */
function nodeOf(client, i) {
  if (typeof client === 'string') return { url: client, keyPrefix: '' }
  if (client !== null && typeof client === 'object' && client.options !== null && typeof client.options === 'object') {
    const o = client.options
    if (client.isCluster === true) {
      return { url: clusterUrl(i, client), keyPrefix: o.keyPrefix ?? o.redisOptions?.keyPrefix ?? '' }
    }
    return { url: redisUrl(i, o), keyPrefix: o.keyPrefix ?? '' }
  }
  throw new TypeError(`client #${i} must be an ioredis Redis or Cluster (with .options) or a redis:// URL`)
}

/** The node URLs and the one key prefix of all clients (ioredis `keyPrefix`). */
function nodesOf(clients) {
  const nodes = clients.map(nodeOf)
  const prefixes = new Set(nodes.map((n) => n.keyPrefix))
  if (prefixes.size > 1) {
    const list = nodes.map((n, i) => `#${i} ${JSON.stringify(n.keyPrefix)}`).join(', ')
    throw new QuorumlockError({
      code: 'QL_INVALID',
      message: `QL_INVALID: the clients have different keyPrefix options (${list}); a lock's keys must be the same on every node`,
      attempts: 0,
      nodes: [],
    })
  }
  return { urls: nodes.map((n) => n.url), keyPrefix: nodes[0].keyPrefix }
}

module.exports = { nodesOf }
