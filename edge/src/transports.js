// Transports: small adapters that send one command to one node over a real client and hand
// back its reply. Each adapter maps the client's errors to a Redis error reply
// (`replyError: true`) or a transport failure with a node kind (`kind`); the engine decides
// what they mean. No adapter retries, times out or interprets a reply: the engine does.

function replyError(message) {
  const e = new Error(message)
  e.name = 'ReplyError'
  e.replyError = true
  return e
}

function failure(message, kind) {
  const e = new Error(message)
  e.name = 'TransportError'
  e.kind = kind
  return e
}

function socketKind(e, fallback = 'ConnectionLost') {
  const code = e && e.code
  const message = (e && e.message) || ''
  if (code === 'ECONNREFUSED' || /ECONNREFUSED/.test(message)) return 'ConnectionRefused'
  if (/TLS|certificate|SSL/i.test(message)) return 'Tls'
  if (/NOAUTH|WRONGPASS|invalid password|invalid username/i.test(message)) return 'Auth'
  return fallback
}

function toBuffer(a) {
  return typeof a === 'string' ? a : Buffer.from(a.buffer, a.byteOffset, a.byteLength)
}

function address(host, port, db) {
  const h = host && host.includes(':') && !host.startsWith('[') ? `[${host}]` : host
  return `${h ?? '127.0.0.1'}:${port ?? 6379}/${db ?? 0}`
}

// Release notices (REDLOCK.md §9) on a second connection per node, opened by the first
// subscription. A channel stays subscribed for LINGER_MS after its last listener left, and the
// connection closes with the last such channel: a client whose calls wait for one lock again
// and again (a worker that takes it in turn with others) then sends no UNSUBSCRIBE and
// SUBSCRIBE, and opens no connection, per wait, while an idle client keeps no extra socket
// for longer than that. `open(deliver)` resolves to { subscribe(channels),
// unsubscribe(channels), close() } and calls `deliver(channel, message)` for each message.
// The returned `subscribe` has a `close()` that ends the connection at once (Client.close).
const LINGER_MS = 1000

function notices(open, lingerMs = LINGER_MS) {
  const handlers = new Map()
  // Subscribed channels without listeners, with the timer that unsubscribes them.
  const lingering = new Map()
  let conn = null
  // A lingering channel's timer must not keep a Node process alive by itself.
  const unref = (t) => {
    if (typeof t?.unref === 'function') t.unref()
    return t
  }
  // `onMessage` no longer listens on `channels`; returns the channels left without listeners.
  const forget = (channels, onMessage) => {
    const emptied = []
    for (const ch of channels) {
      const set = handlers.get(ch)
      set?.delete(onMessage)
      if (set?.size === 0) {
        handlers.delete(ch)
        emptied.push(ch)
      }
    }
    return emptied
  }
  async function drop(mine) {
    if (conn !== mine) return
    conn = null
    for (const t of lingering.values()) clearTimeout(t)
    lingering.clear()
    await (await mine.catch(() => null))?.close()
  }
  function expire(ch, mine) {
    lingering.delete(ch)
    if (conn !== mine || handlers.has(ch)) return
    if (handlers.size === 0 && lingering.size === 0) {
      drop(mine).catch(() => {})
    } else {
      mine.then((c) => c.unsubscribe([ch])).catch(() => {})
    }
  }
  async function subscribe(channels, onMessage) {
    conn ??= open((channel, message) => {
      for (const f of handlers.get(channel) ?? []) f(channel, message)
    })
    const mine = conn
    const fresh = []
    for (const ch of channels) {
      let set = handlers.get(ch)
      if (!set) {
        handlers.set(ch, (set = new Set()))
        if (lingering.has(ch)) {
          // Still subscribed: nothing to send.
          clearTimeout(lingering.get(ch))
          lingering.delete(ch)
        } else {
          fresh.push(ch)
        }
      }
      set.add(onMessage)
    }
    let c
    try {
      c = await mine
    } catch (e) {
      // A failed connection is not kept: the next wait tries again.
      if (conn === mine) conn = null
      forget(channels, onMessage)
      throw e
    }
    if (fresh.length > 0) {
      try {
        await c.subscribe(fresh)
      } catch (e) {
        // Refused (an ACL without the channels): not subscribed, so the next wait asks again.
        forget(channels, onMessage)
        throw e
      }
    }
    return async () => {
      for (const ch of forget(channels, onMessage)) {
        if (conn === mine && !lingering.has(ch)) {
          lingering.set(ch, unref(setTimeout(() => expire(ch, mine), lingerMs)))
        }
      }
    }
  }
  subscribe.close = () => (conn ? drop(conn) : Promise.resolve())
  return subscribe
}

/** One ioredis client (`new Redis(...)`) as a node. */
export function ioredisNode(client) {
  const o = client.options ?? {}
  const where = o.path ? `unix:${o.path}/${o.db ?? 0}` : address(o.host, o.port, o.db)
  const subscribe = notices(async (deliver) => {
    const sub = client.duplicate({ lazyConnect: false })
    sub.on('message', (channel, message) => deliver(channel, message))
    sub.on('error', () => {})
    return {
      subscribe: (channels) => sub.subscribe(...channels),
      unsubscribe: (channels) => sub.unsubscribe(...channels),
      close: async () => sub.disconnect(),
    }
  })
  return {
    address: where,
    subscribe,
    send(argv) {
      let p
      try {
        p = client.call(argv[0], ...argv.slice(1).map(toBuffer))
      } catch (e) {
        return Promise.reject(failure(e.message, 'NotConnected'))
      }
      return p.catch((e) => {
        if (e && e.name === 'ReplyError') throw replyError(e.message)
        if (/Stream isn't writeable|enableOfflineQueue/.test(e && e.message)) {
          throw failure(e.message, 'NotConnected')
        }
        throw failure(e && e.message ? e.message : String(e), socketKind(e))
      })
    },
  }
}

const NODE_REDIS_REPLY_ERRORS = new Set(['ErrorReply', 'SimpleError', 'BlobError'])

/** One node-redis client (`createClient(...)`, connected) as a node. */
export function nodeRedisNode(client) {
  const o = client.options ?? {}
  let where
  if (o.url) {
    try {
      const u = new URL(o.url)
      where = address(u.hostname, u.port || 6379, Number(u.pathname.slice(1)) || o.database || 0)
    } catch {
      where = o.url
    }
  } else {
    where = address(o.socket?.host, o.socket?.port, o.database)
  }
  const subscribe = notices(async (deliver) => {
    const sub = client.duplicate()
    sub.on('error', () => {})
    await sub.connect()
    return {
      subscribe: (channels) => sub.subscribe(channels, (message, channel) => deliver(channel, message)),
      unsubscribe: (channels) => sub.unsubscribe(channels),
      close: async () => (typeof sub.destroy === 'function' ? sub.destroy() : sub.disconnect()),
    }
  })
  return {
    address: where,
    subscribe,
    send(argv) {
      let p
      try {
        p = client.sendCommand(argv.map(toBuffer))
      } catch (e) {
        return Promise.reject(failure(e.message, 'NotConnected'))
      }
      return p.catch((e) => {
        if (e && NODE_REDIS_REPLY_ERRORS.has(e.constructor?.name)) throw replyError(e.message)
        const name = e && e.constructor ? e.constructor.name : ''
        if (name === 'ClientClosedError' || name === 'ClientOfflineError') {
          throw failure(e.message, 'NotConnected')
        }
        throw failure(e && e.message ? e.message : String(e), socketKind(e))
      })
    },
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: true })

/**
 * One Upstash REST endpoint (`{ url, token }`) as a node: each command is a POST of its
 * JSON array with a bearer token; the answer is `{ result }` or `{ error }`. Arguments must
 * be UTF-8 text (the REST protocol carries JSON strings).
 */
export function upstashNode(endpoint, options = {}) {
  const { url, token } = endpoint
  const doFetch = options.fetch ?? endpoint.fetch ?? globalThis.fetch
  let where
  try {
    const u = new URL(url)
    where = `${u.protocol === 'https:' ? 'https' : 'http'}://${u.host}${u.pathname === '/' ? '' : u.pathname}`
  } catch {
    throw failure(`invalid Upstash REST url: ${url}`, 'Other')
  }
  return {
    address: where,
    async send(argv) {
      let body
      try {
        body = JSON.stringify(argv.map((a) => (typeof a === 'string' ? a : utf8.decode(a))))
      } catch {
        throw failure('the REST protocol carries only UTF-8 text; a resource name is not valid UTF-8', 'Protocol')
      }
      let res
      try {
        res = await doFetch(url, {
          method: 'POST',
          headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
          body,
        })
      } catch (e) {
        throw failure(e && e.message ? `${e.message}${e.cause ? ` (${e.cause.code ?? e.cause.message})` : ''}` : String(e), socketKind(e.cause ?? e))
      }
      if (res.status === 401 || res.status === 403) {
        throw failure(`HTTP ${res.status}: ${await res.text().catch(() => '')}`.trim(), 'Auth')
      }
      let json
      try {
        json = await res.json()
      } catch {
        throw failure(`HTTP ${res.status}: the answer is not JSON`, 'Protocol')
      }
      if (json && typeof json.error === 'string') throw replyError(json.error)
      if (!json || !('result' in json)) throw failure(`HTTP ${res.status}: no result in the answer`, 'Protocol')
      return json.result
    },
  }
}

function nodeOf(n, i, Err) {
  if (n && typeof n === 'object') {
    if (typeof n.call === 'function' && n.options && typeof n.sendCommand === 'function' && 'status' in n) {
      return ioredisNode(n)
    }
    if (typeof n.sendCommand === 'function') return nodeRedisNode(n)
    if (typeof n.url === 'string' && typeof n.token === 'string') return upstashNode(n)
    if (typeof n.send === 'function' && typeof n.address === 'string') return n
  }
  const what = typeof n === 'string' ? `the string ${JSON.stringify(n)}` : typeof n
  throw new Err({
    code: 'QL_INVALID',
    message: `QL_INVALID: node #${i} is ${what}; pass a connected ioredis or node-redis client, an Upstash { url, token }, or { address, send(argv) }`,
    nodes: [],
  })
}

/** A transport over per-node adapters. */
export function transport(nodes) {
  const list = [...nodes]
  const t = {
    addresses: list.map((n) => n.address),
    send(i, argv) {
      return list[i].send(argv)
    },
  }
  if (list.some((n) => typeof n.subscribe === 'function')) {
    t.subscribe = (i, channels, onMessage) =>
      typeof list[i].subscribe === 'function'
        ? list[i].subscribe(channels, onMessage)
        : Promise.reject(new Error('this node has no pub/sub'))
    // Ends the notice connections at once, lingering ones included.
    t.close = () => Promise.allSettled(list.map((n) => n.subscribe?.close?.()))
  }
  return t
}

/** The transport of client options: `transport`, or `nodes` (clients, endpoints, adapters). */
export function transportOf(options, Err) {
  if (options.transport !== undefined) {
    const t = options.transport
    if (!t || typeof t.send !== 'function' || !Array.isArray(t.addresses)) {
      throw new Err({ code: 'QL_INVALID', message: 'QL_INVALID: transport must have send(node, argv) and an addresses array', nodes: [] })
    }
    return t
  }
  if (!Array.isArray(options.nodes)) {
    throw new Err({ code: 'QL_INVALID', message: 'QL_INVALID: nodes must be an array of clients (or give a transport)', nodes: [] })
  }
  return transport(options.nodes.map((n, i) => nodeOf(n, i, Err)))
}
