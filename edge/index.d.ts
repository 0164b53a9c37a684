// Types of the public API of quorumlock-edge (hand-written; test/surface.test.mjs checks that
// every runtime export is declared here and the reverse). Names and options follow the native
// Node package `quorumlock` (node/index.d.ts).

/** Every `QuorumlockError.code`. */
export type ErrorCode =
  | 'QL_BUSY'
  | 'QL_QUORUM'
  | 'QL_VALIDITY'
  | 'QL_CANCELLED'
  | 'QL_LOST'
  | 'QL_EXT_LIMIT'
  | 'QL_INVALID'
  | 'QL_CONNECTION'
  | 'QL_AUTH'
  | 'QL_SCRIPT'
  | 'QL_MISCONFIGURED'
  | 'QL_TIMEOUT'
  | 'QL_INTERNAL'

/** The codes in numeric order of the engine's kinds, then QL_INTERNAL. */
export declare const ERROR_CODES: readonly ErrorCode[]

/** The package version. */
export declare const VERSION: string

/**
 * Lua source of the fence check for a protected resource kept in Redis:
 * `EVAL <script> 1 <fence key> <token>` returns 1 and stores the token when it is at least the
 * highest seen, 0 (a stale holder: stop) otherwise.
 */
export declare const FENCE_CHECK_SCRIPT: string

/** One node's entry of a report. */
export interface NodeEntry {
  /** 0-based index in configuration order. */
  readonly index: number
  /** `host:port/db` (or the REST endpoint), never with credentials. */
  readonly address: string
  /** Time from sending to the reply in microseconds, when a reply came. */
  readonly latencyUs?: number
  /** The node kind, e.g. `'Ok'`, `'HeldByOther'`, `'Timeout'`. */
  readonly kind: string
  /** The kind's category, e.g. `'Vote'`, `'Connection'`. */
  readonly category: string
  /** The server's or the transport's text for error kinds. */
  readonly detail?: string
}

/** What a release did on each node. */
export interface ReleaseReport {
  /** How many nodes deleted our keys. */
  readonly releasedCount: number
  /** True when a quorum still held the lock when it was released. */
  readonly wasHeldByQuorum: boolean
  /** One entry per configured node. */
  readonly nodes: readonly NodeEntry[]
}

/** A failed operation, with a stable `code` and the per-node report. */
export declare class QuorumlockError extends Error {
  readonly name: 'QuorumlockError'
  readonly code: ErrorCode
  /** Acquisition attempts made (0 when nothing was sent). */
  readonly attempts: number
  /** Validity left when the failure was decided, in milliseconds, when known. */
  readonly validityMs: number | null
  /** For QL_LOST: `'Expired'`, `'Taken'` or `'ExtensionLimit'`. */
  readonly lostReason: string | null
  /** One entry per configured node (empty when nothing was sent). */
  readonly nodes: readonly NodeEntry[]
  /** For a failed acquisition, the node entries of each attempt, oldest first. */
  readonly attemptReports: readonly (readonly NodeEntry[])[]
}

/** A Redis error reply, thrown by a custom transport's `send`. */
export declare class ReplyError extends Error {
  constructor(message: string)
  readonly name: 'ReplyError'
  readonly replyError: true
}

/** A transport failure, thrown by a custom transport's `send`. */
export declare class TransportError extends Error {
  /** `kind`: a node kind such as `'ConnectionRefused'`, `'ConnectionLost'` (default), `'NotConnected'`, `'Timeout'`, `'Auth'`. */
  constructor(message: string, kind?: string)
  readonly name: 'TransportError'
  readonly kind: string
}

/** Options of one acquisition; absent fields keep the client's defaults. Durations in ms. */
export interface LockOptions {
  /** Lock time-to-live (default 10000). */
  ttlMs?: number
  /** Retries after the first attempt (default 3); `Infinity` retries until `waitMs` or aborted. */
  retryCount?: number
  /** Fixed part of the delay between attempts (default 100). */
  retryDelayMs?: number
  /** Random part of the delay between attempts (default 200). */
  retryJitterMs?: number
  /** Total wait budget. */
  waitMs?: number
  /** Minimum validity a successful attempt must leave (default ttlMs / 10). */
  minValidityMs?: number
  /** Deadline of one request round on one node (default clamp(ttlMs / 200, 5, 50)). */
  nodeTimeoutMs?: number
  /** Keep the lock alive in the background until released (default false). */
  autoExtend?: boolean
  /** Interval of the auto-extension (default ttlMs / 3). */
  extendIntervalMs?: number
  /** Cap on the number of extensions. */
  maxExtensions?: number
  /** Cap on the total holding time. */
  maxHoldMs?: number
  /** Return fencing tokens with the lock (`lock.token`). */
  fenced?: boolean
  /** Let the fencing counters expire after this long without writes (default: never). */
  fenceCounterTtlMs?: number
}

/** Options of `acquire()`: lock options plus an AbortSignal that cancels a pending acquisition. */
export interface AcquireOptions extends LockOptions {
  signal?: AbortSignal
}

/** A reply as a transport hands it back. */
export type RedisReply = null | number | bigint | string | Uint8Array | RedisReply[]

/** One node of a custom transport. */
export interface NodeAdapter {
  /** `host:port/db` or another name for reports, never with credentials. */
  readonly address: string
  /**
   * Sends one command (name first) and resolves to its reply; rejects with a `ReplyError`
   * for a Redis error reply, with a `TransportError` (or any error) for a transport failure.
   */
  send(argv: (string | Uint8Array)[]): Promise<RedisReply>
  /** Optional: release notices, as `Transport.subscribe` for this node. */
  subscribe?(channels: string[], onMessage: (channel: string, message: string) => void): Promise<() => unknown>
}

/** The I/O of a client: one adapter per node, or this. */
export interface Transport {
  readonly addresses: readonly string[]
  send(node: number, argv: (string | Uint8Array)[]): Promise<RedisReply>
  /**
   * Optional: subscribes node `node` to `channels` and calls `onMessage(channel, message)`
   * for each message; resolves (once the subscription is live) to a function that
   * unsubscribes. Without the message, a release that names a waiter wakes every waiter of
   * the key in this client.
   */
  subscribe?(node: number, channels: string[], onMessage: (channel: string, message: string) => void): Promise<() => unknown>
}

/** An Upstash REST endpoint. */
export interface UpstashEndpoint {
  /** The REST URL, e.g. `https://eu1-xyz.upstash.io`. */
  url: string
  /** The REST token (sent as `Authorization: Bearer <token>`). */
  token: string
  /** A `fetch` to use instead of the global one. */
  fetch?: typeof fetch
}

/** An ioredis client, as far as the adapter uses it. */
export interface IoredisLike {
  call(command: string, ...args: unknown[]): Promise<unknown>
  sendCommand(...args: any[]): unknown
  readonly options: { host?: string; port?: number; db?: number; path?: string }
  readonly status: string
}

/** A node-redis client, as far as the adapter uses it. */
export interface NodeRedisLike {
  sendCommand(args: unknown[]): Promise<unknown>
  readonly options?: unknown
}

/** Options of a client: the nodes, client-wide settings, and default lock options. */
export interface ClientOptions extends LockOptions {
  /**
   * One entry per Redis master: a connected ioredis or node-redis client, an Upstash REST
   * endpoint, or a `NodeAdapter`. Give either `nodes` or `transport`.
   */
  nodes?: ReadonlyArray<IoredisLike | NodeRedisLike | UpstashEndpoint | NodeAdapter>
  /** A transport over every node (see `transports`). */
  transport?: Transport
  /** Drift factor (default 0.01), in 0 <= d < 0.5. */
  driftFactor?: number
  /** Drift constant (default 2). */
  driftConstantMs?: number
  /** Upper bound of any TTL (default 60000); all clients of the same nodes must agree. */
  maxTtlMs?: number
  /** How long a node's probe waits for its replies (default 1000). */
  connectTimeoutMs?: number
  /** Key prefix (default `'quorumlock:'`); keys are `<prefix>{<resource>}`. */
  keyPrefix?: string
  /** `'braced'` (default: `<prefix>{<resource>}`) or `'bare'` (`<prefix><resource>`). */
  keyFormat?: 'braced' | 'bare'
  /** Fail `Client.connect` unless a quorum of nodes is usable (default false). */
  requireQuorum?: boolean
  /** Restart quarantine (default `'on'`), as in the native package. */
  quarantine?: 'on' | 'strict' | 'off'
  /** Extra time beyond maxTtlMs a fresh non-durable node stays out (default 5000). */
  quarantineMarginMs?: number
  /** Nodes whose eviction policy can remove lock keys: `'refuse'` (default), `'warn'` or `'off'`. */
  evictionCheck?: 'refuse' | 'warn' | 'off'
  /**
   * Release notification (default true): a waiting acquire (transports with `subscribe`:
   * ioredis, node-redis) stands in the key's line of waiters (`<key>:w`) and listens on its
   * release channels; a release wakes the first waiter in line by name, at once instead of
   * after its retry delay, and for a waiter on one unfenced key grants it the key (set to a
   * value it registered), so it holds the lock without an attempt of its own. REST nodes
   * poll.
   */
  notify?: boolean
  /**
   * Receives each warning (`QL_W_...`) once per kind and node; default:
   * `process.emitWarning` (type `QuorumlockWarning`) where it exists, else `console.warn`.
   */
  onWarning?: (code: string, node: number, message: string) => void
}

/** One or more resource names. */
export type Resources = string | Uint8Array | ReadonlyArray<string | Uint8Array>

/** A held lock. Release it with `release()`, `await using`, or `client.using()`. */
export declare class Lock {
  private constructor()
  /** The resources as given to acquire(). */
  readonly resources: ReadonlyArray<string | Uint8Array>
  /** The random value (40 hex characters) stored in the keys. */
  readonly value: string
  /** The fencing token (of the first resource in sorted order); null when not fenced. */
  readonly token: bigint | null
  /** The fencing tokens, one per resource in sorted order; null when not fenced. */
  readonly tokens: bigint[] | null
  /** The TTL the lock was acquired with. */
  readonly ttlMs: number
  /** Attempts the acquisition took. */
  readonly attempts: number
  /** Validity left now in whole milliseconds; 0 once expired, lost or released. */
  readonly remainingMs: number
  /** True while held and within validity. */
  readonly isHeld: boolean
  /** Successful extensions so far. */
  readonly extensions: number
  /** True while the automatic extension runs. */
  readonly autoExtending: boolean
  /** The per-node report of the successful attempt. */
  readonly nodes: readonly NodeEntry[]
  /** The per-node report of every attempt of the acquisition, oldest first; the last is `nodes`. */
  readonly attemptReports: readonly (readonly NodeEntry[])[]
  /** The per-node report of the last successful extend; null before the first. */
  readonly extendNodes: readonly NodeEntry[] | null
  /** Aborts with a QL_LOST QuorumlockError when the lock is lost; never after a release. */
  readonly signal: AbortSignal
  /** The QL_LOST error if the lock is lost now, else null. */
  lostError(): QuorumlockError | null
  /** Starts or stops the automatic extension. */
  setAutoExtend(on: boolean): void
  /** Extends the lock to `ttlMs` (default: its TTL) from now. */
  extend(ttlMs?: number): Promise<this>
  /** Releases the lock on every node; idempotent. */
  release(): Promise<ReleaseReport>
  [Symbol.asyncDispose](): Promise<void>
}

/** A Redlock client over N independent Redis masters. */
export declare class Client {
  /** Checks the options at once and starts probing the nodes. */
  constructor(options: ClientOptions)
  /** Creates a client and waits for the first probe of every node. */
  static connect(options: ClientOptions): Promise<Client>
  /** Number of configured nodes N. */
  readonly nodeCount: number
  /** The quorum N / 2 + 1. */
  readonly quorum: number
  /** Node addresses. */
  readonly addresses: string[]
  /** The Redis key of a resource. */
  key(resource: string | Uint8Array): Uint8Array
  /** Acquires a lock on one or more resources (all or nothing). */
  acquire(resources: Resources, options?: AcquireOptions): Promise<Lock>
  /** Acquires with auto-extension, runs `fn`, releases; rejects with QL_LOST if the lock was lost. */
  using<T>(resources: Resources, options: AcquireOptions, fn: (lock: Lock) => Promise<T> | T): Promise<T>
  using<T>(resources: Resources, fn: (lock: Lock) => Promise<T> | T): Promise<T>
  /**
   * Releases every lock of this client still held, refuses new acquisitions, and closes the
   * connections the package opened for release notices (those of a transport built from
   * `nodes`; a `transport` option is left to its owner).
   */
  close(): Promise<void>
  [Symbol.asyncDispose](): Promise<void>
}

/** Transport adapters over real clients. */
export declare namespace transports {
  /** One ioredis client as a node. */
  function ioredisNode(client: IoredisLike): NodeAdapter
  /** One connected node-redis client as a node. */
  function nodeRedisNode(client: NodeRedisLike): NodeAdapter
  /** One Upstash REST endpoint as a node. */
  function upstashNode(endpoint: UpstashEndpoint, options?: { fetch?: typeof fetch }): NodeAdapter
  /** A transport over per-node adapters. */
  function transport(nodes: Iterable<NodeAdapter>): Transport
  /** The transport that client options describe. */
  function transportOf(options: ClientOptions, error: new (detail: object) => Error): Transport
}
