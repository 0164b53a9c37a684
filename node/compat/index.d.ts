// Types of quorumlock/compat: node-redlock v5's API (hand-written; a test checks that every
// runtime export is declared here and the reverse).

/// <reference types="node" />
import { EventEmitter } from 'node:events'

/** node-redlock v5's Redlock over quorumlock's engine. */
declare class Redlock extends EventEmitter {
  readonly clients: Set<Redlock.Client>
  readonly settings: Redlock.Settings
  constructor(
    clients: Iterable<Redlock.Client>,
    settings?: Partial<Redlock.Settings> & Partial<Redlock.QuorumlockSettings>,
    scripts?: Redlock.Scripts,
  )
  acquire(resources: string[], duration: number, settings?: Partial<Redlock.Settings>): Promise<Redlock.Lock>
  release(lock: Redlock.Lock, settings?: Partial<Redlock.Settings>): Promise<Redlock.ExecutionResult>
  extend(existing: Redlock.Lock, duration: number, settings?: Partial<Redlock.Settings>): Promise<Redlock.Lock>
  using<T>(
    resources: string[],
    duration: number,
    settings: Partial<Redlock.Settings>,
    routine?: (signal: Redlock.RedlockAbortSignal) => Promise<T>,
  ): Promise<T>
  using<T>(resources: string[], duration: number, routine: (signal: Redlock.RedlockAbortSignal) => Promise<T>): Promise<T>
  /** Stops new acquisitions and extensions; leaves the caller's ioredis clients open. */
  quit(): Promise<void>
}

// `module.exports = Redlock`, with the other exports as its properties.
declare namespace Redlock {
  /** What the compat layer reads from an ioredis client's options. */
  export interface RedisOptionsLike {
    host?: string
    port?: number
    db?: number
    username?: string
    password?: string
    /** `true` or `{}` for TLS; certificate options are refused. */
    tls?: unknown
    path?: string
    /** Prefixes every lock key, as ioredis would; must be the same on every client. */
    keyPrefix?: string
    /** Refused: list the masters instead. */
    sentinels?: unknown
    /** Refused: give reachable addresses. */
    natMap?: unknown
  }

  /** An ioredis `Redis`; real ioredis instances fit. */
  export interface RedisClientLike {
    readonly options: RedisOptionsLike
  }

  /** An ioredis `Cluster`. */
  export interface ClusterLike {
    readonly isCluster: true
    readonly options: { redisOptions?: RedisOptionsLike; keyPrefix?: string; natMap?: unknown }
  }

  /** An ioredis client or a node URL (`redis://host:port/db`). */
  export type Client = RedisClientLike | ClusterLike | string

  export interface Settings {
    readonly driftFactor: number
    /** Retries after the first attempt; -1 retries forever. */
    readonly retryCount: number
    readonly retryDelay: number
    readonly retryJitter: number
    readonly automaticExtensionThreshold: number
  }

  /** quorumlock's settings beyond node-redlock's (constructor only). */
  export interface QuorumlockSettings {
    /** Restart quarantine of nodes without durable writes (default 'off', node-redlock's behavior). */
    readonly quarantine: 'on' | 'strict' | 'off'
    /** Largest lock duration in ms (default and most: 2^53 - 1, `Number.MAX_SAFE_INTEGER`). */
    readonly maxTtl: number
    /** Nodes whose eviction policy can remove lock keys (default 'refuse'). */
    readonly evictionCheck: 'refuse' | 'warn' | 'off'
    /** Release notification wakes waiters at once (default true). */
    readonly notify: boolean
    /** Take a fencing token with every lock (default false). */
    readonly fenced: boolean
    /** Deadline of one request on one node in ms (default: the engine's, from the duration). */
    readonly nodeTimeout: number
  }

  /** node-redlock's script overrides: refused, the engine runs its own scripts. */
  export interface Scripts {
    readonly acquireScript?: string | ((script: string) => string)
    readonly extendScript?: string | ((script: string) => string)
    readonly releaseScript?: string | ((script: string) => string)
  }

  export interface ExecutionStats {
    readonly membershipSize: number
    readonly quorumSize: number
    readonly votesFor: Set<Client>
    readonly votesAgainst: Map<Client, Error>
  }

  export interface ExecutionResult {
    attempts: ReadonlyArray<Promise<ExecutionStats>>
    start: number
  }

  /** The `signal` passed to a `using` routine; `error` says why it aborted. */
  export type RedlockAbortSignal = AbortSignal & { error?: Error }

  /** A node refused the operation because of another lock's entries. */
  export class ResourceLockedError extends Error {
    constructor(message: string)
  }

  /** An operation failed to reach a quorum; one entry per attempt. */
  export class ExecutionError extends Error {
    readonly attempts: ReadonlyArray<Promise<ExecutionStats>>
    constructor(message: string, attempts: ReadonlyArray<Promise<ExecutionStats>>)
  }

  /** A held lock; `extend` returns a new Lock and sets this one's expiration to 0. */
  export class Lock {
    constructor(
      redlock: Redlock,
      resources: string[],
      value: string,
      attempts: ReadonlyArray<Promise<ExecutionStats>>,
      expiration: number,
    )
    readonly redlock: Redlock
    readonly resources: string[]
    readonly value: string
    readonly attempts: ReadonlyArray<Promise<ExecutionStats>>
    /** Milliseconds since the epoch when the lock expires (0 once released or extended). */
    expiration: number
    /** With the `fenced` setting, the fencing token of the first resource; else null. */
    readonly token?: bigint | null
    release(): Promise<ExecutionResult>
    extend(duration: number): Promise<Lock>
  }

  export { Redlock as default, Redlock }
}

export = Redlock
