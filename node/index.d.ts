// Types of the public API in index.js (hand-written; a test checks that every runtime export
// is declared here and the reverse).

/// <reference types="node" />

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

/** The codes in numeric order of the core kinds, then QL_INTERNAL. */
export declare const ERROR_CODES: readonly ErrorCode[]

/** The package version. */
export declare const VERSION: string

/**
 * Lua source of the fence check for a protected resource kept in Redis:
 * `EVAL <script> 1 <fence key> <token>` returns 1 and stores the token when it is at least the
 * highest seen, 0 (a stale holder: stop) otherwise. Run it in the same atomic step as the
 * protected write.
 */
export declare const FENCE_CHECK_SCRIPT: string

/**
 * Upper bounds of the latency buckets in microseconds (100 µs to 10 s); every histogram has
 * one more bucket, unbounded, for the rest.
 */
export declare const LATENCY_BOUNDS_US: readonly number[]

/**
 * A latency histogram: `counts[i]` observations fell in bucket `i`, whose upper bound is
 * `boundsUs[i]` microseconds (inclusive); the last bucket is unbounded.
 */
export interface Histogram {
  /** The bucket bounds in microseconds (`LATENCY_BOUNDS_US`, one fewer than `counts`). */
  readonly boundsUs: readonly number[]
  /** Observations per bucket (not cumulative). */
  readonly counts: readonly number[]
  /** The sum of all observations in microseconds. */
  readonly sumUs: number
  /** The number of observations. */
  readonly count: number
  /**
   * Upper estimate of the median in milliseconds: the bound of the bucket holding it (e.g.
   * `0.25`); null when empty or above the last bound (10 s).
   */
  readonly p50Ms: number | null
  /** Upper estimate of the 90th percentile in milliseconds, as `p50Ms`. */
  readonly p90Ms: number | null
  /** Upper estimate of the 99th percentile in milliseconds, as `p50Ms`. */
  readonly p99Ms: number | null
}

/** The outcomes of one kind of operation (acquire, extend or release). */
export interface OpMetrics {
  /** Calls that succeeded. */
  readonly ok: number
  /** All failed calls (the sum of `failed`). */
  readonly failures: number
  /** Failed calls by error code, e.g. `{ QL_BUSY: 2 }`; only codes seen. */
  readonly failed: Readonly<Partial<Record<ErrorCode, number>>>
  /** The duration of every call, failed ones included. */
  readonly latency: Histogram
}

/** What one node answered over the client's life. */
export interface NodeMetrics {
  /** 0-based index in configuration order. */
  readonly index: number
  /** `host:port/db`, never with credentials. */
  readonly address: string
  /**
   * Requests by node kind, e.g. `{ Ok: 4, HeldByOther: 2, Released: 2 }`; only kinds seen. A
   * reply that came after its round was decided at the quorum is counted when it arrives.
   */
  readonly replies: Readonly<Record<string, number>>
  /** All requests sent to the node. */
  readonly requests: number
  /**
   * Requests that ended in a node error (a timeout, a connection or server error, a
   * quarantined or misconfigured node): anything but a vote or an operation result.
   */
  readonly errors: number
  /** The time to each reply that arrived. */
  readonly latency: Histogram
}

/**
 * A snapshot of a client's counters (`client.metrics()`). Counters only grow; subtract two
 * snapshots for a rate. They are exact below 2^53.
 */
export interface Metrics {
  /** Acquisition rounds sent (one acquire call may take several). */
  readonly acquireAttempts: number
  /** Acquire calls. */
  readonly acquire: OpMetrics
  /** Extend calls, the automatic extensions included. */
  readonly extend: OpMetrics
  /** Releases of locks, explicit or on drop (failed attempts' cleanups and repeated releases are not counted). */
  readonly release: OpMetrics
  /** Locks lost while held (expired or taken over). */
  readonly lost: number
  /** Waits cut short by a release notification. */
  readonly wakeups: number
  /** One entry per configured node. */
  readonly nodes: readonly NodeMetrics[]
}

/** One node's entry of a report. */
export interface NodeEntry {
  /** 0-based index in configuration order. */
  readonly index: number
  /** `host:port/db`, never with credentials. */
  readonly address: string
  /** Time from sending to the reply in microseconds, when a reply came. */
  readonly latencyUs?: number
  /** The node kind, e.g. `'Ok'`, `'HeldByOther'`, `'Timeout'`. */
  readonly kind: string
  /** The kind's category, e.g. `'Vote'`, `'Connection'`. */
  readonly category: string
  /** The server's or the socket's text for error kinds. */
  readonly detail?: string
}

/** One node's answer to `client.ping()`. */
export interface NodeInfo {
  /** 0-based index in configuration order. */
  readonly index: number
  /** `host:port/db`, never with credentials. */
  readonly address: string
  /** `'Ok'`, or the node kind that made the node unusable. */
  readonly kind?: string
  /** Error text, when `kind` is an error. */
  readonly detail?: string
  /** Round trip of a `PING` in (fractional) milliseconds. */
  readonly latencyMs?: number
  /** `redis_version`. */
  readonly version?: string
  /** `run_id`: changes on every restart. */
  readonly runId?: string
  /** Time since the server started, in milliseconds. */
  readonly uptimeMs?: number
  /** `'master'` or `'slave'`. */
  readonly role?: string
  /** `maxmemory` in bytes (0 = unlimited). */
  readonly maxmemory?: number
  /** `maxmemory-policy`. */
  readonly maxmemoryPolicy?: string
  /** Persistence settings; absent when `CONFIG` is refused. */
  readonly persistence?: {
    readonly appendonly: boolean
    readonly appendfsync: string
    readonly noAppendfsyncOnRewrite: boolean
  }
  /** True when every acknowledged write is on disk (may serve again at once after a restart). */
  readonly durable: boolean
  /** Problems an operator should fix, in plain words. */
  readonly warnings: string[]
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
  /**
   * For a failed acquisition, the node entries of each attempt, oldest first (at most the 64
   * most recent; the last is `nodes` unless aborted between attempts); empty otherwise.
   */
  readonly attemptReports: readonly (readonly NodeEntry[])[]
}

/**
 * Options of one acquisition; absent fields keep the client's defaults. Durations in ms.
 * docs/options.md lists every option with its default and range. A value of the wrong type
 * throws a TypeError; a value out of range a RangeError with the engine's message and
 * `code: 'QL_INVALID'`.
 */
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
  /**
   * Return fencing tokens with the lock (`lock.token`): strictly greater than every token
   * returned before for the same resource. Costs a counter key per resource and node.
   */
  fenced?: boolean
  /**
   * Let the fencing counters expire after this long without writes (default: never); at least
   * maxTtlMs + quarantineMarginMs, a day or more recommended.
   */
  fenceCounterTtlMs?: number
  /**
   * Use this lock value (at least 16 printable ASCII characters) instead of a fresh random one
   * per attempt, for compatibility with libraries whose users choose it; generated values are
   * safer. Not with `fenced`. Per acquisition only, not a client default.
   */
  value?: string
}

/** Options of `acquire()`: lock options plus an AbortSignal that cancels a pending acquisition. */
export interface AcquireOptions extends LockOptions {
  signal?: AbortSignal
}

/** Options of a client: the nodes, client-wide settings, and default lock options. */
export interface ClientOptions extends Omit<LockOptions, 'value'> {
  /** Node URLs: `redis://[user:password@]host:port[/db]`, `rediss://...` for TLS. */
  nodes: string[]
  /** Drift factor (default 0.01), in 0 <= d < 0.5. */
  driftFactor?: number
  /** Drift constant (default 2). */
  driftConstantMs?: number
  /** Upper bound of any TTL (default 60000); all clients of the same nodes must agree. */
  maxTtlMs?: number
  /** How long connecting waits for the first connections (default 1000). */
  connectTimeoutMs?: number
  /** How often a connection's settings are read again (default 60000). */
  reprobeEveryMs?: number
  /** Key prefix (default `'quorumlock:'`); keys are `<prefix>{<resource>}`. */
  keyPrefix?: string
  /** `'braced'` (default: `<prefix>{<resource>}`) or `'bare'` (`<prefix><resource>`). */
  keyFormat?: 'braced' | 'bare'
  /** Fail `Client.connect` unless a quorum of nodes connected (default false). */
  requireQuorum?: boolean
  /**
   * Restart quarantine (default `'on'`): a node without durable writes is not counted until
   * it has been up for maxTtlMs + quarantineMarginMs; `'strict'` also excludes nodes that
   * refuse INFO; `'off'` skips the check (only for nodes whose restarts are delayed by their
   * operators).
   */
  quarantine?: 'on' | 'strict' | 'off'
  /** Extra time beyond maxTtlMs a fresh non-durable node stays out (default 5000). */
  quarantineMarginMs?: number
  /**
   * Nodes whose eviction policy can remove lock keys: `'refuse'` (default; excluded and
   * reported as EvictionPolicy), `'warn'` (counted, with a warning) or `'off'`.
   */
  evictionCheck?: 'refuse' | 'warn' | 'off'
  /**
   * Release notification (default true): a waiting acquire listens on its keys' release
   * channels and stands in the key's line of waiters (its waiter flag), and a release wakes
   * the first waiter in line at once instead of after its retry delay.
   */
  notify?: boolean
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
  /**
   * The fencing token (of the first resource in sorted order) of a lock acquired with
   * `fenced: true`; null when not fenced. A bigint: tokens exceed 2^53.
   */
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
  /**
   * Checks the options at once and starts connecting in the background. Warnings (a counted
   * node without durable writes, one server listed twice, ...) become process warnings of
   * type `QuorumlockWarning` with a `QL_W_...` code, once per kind and node.
   */
  constructor(options: ClientOptions | string[])
  /** Connects; rejects with a QuorumlockError (with `requireQuorum`, when too few nodes connect). */
  static connect(options: ClientOptions | string[]): Promise<Client>
  /** Number of configured nodes N (once connected). */
  readonly nodeCount: number
  /** The quorum N / 2 + 1 (once connected). */
  readonly quorum: number
  /** Node addresses `host:port/db` (once connected). */
  readonly addresses: string[]
  /** The Redis key of a resource (once connected). */
  key(resource: string | Uint8Array): Buffer
  /**
   * Pings every node and reads its settings, one entry per node; rejects with a
   * QuorumlockError when fewer than a quorum answer.
   */
  ping(): Promise<NodeInfo[]>
  /**
   * A snapshot of the client's counters and latency histograms (once connected). Never does
   * I/O. Client-level totals are exact when the operations have returned.
   */
  metrics(): Metrics
  /** The same snapshot in the Prometheus text exposition format (0.0.4), names `quorumlock_*`. */
  metricsPrometheus(): string
  /** Acquires a lock on one or more resources (all or nothing). */
  acquire(resources: Resources, options?: AcquireOptions): Promise<Lock>
  /** Acquires with auto-extension, runs `fn`, releases; rejects with QL_LOST if the lock was lost. */
  using<T>(resources: Resources, options: AcquireOptions, fn: (lock: Lock) => Promise<T> | T): Promise<T>
  using<T>(resources: Resources, fn: (lock: Lock) => Promise<T> | T): Promise<T>
  /** Releases every lock of this client still held and refuses new acquisitions. */
  close(): Promise<void>
  [Symbol.asyncDispose](): Promise<void>
}
