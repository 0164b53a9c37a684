// Types of quorumlock/compat: node-redlock v5's API (hand-written; a test checks that every
// runtime export is declared here and the reverse).

/// <reference types="node" />
import { EventEmitter } from 'node:events'

/** node-redlock v5's Redlock over quorumlock's engine. */
declare class Redlock extends EventEmitter {
  readonly clients: Set<Redlock.Client>
  readonly settings: Redlock.Settings
  constructor(clients: Iterable<Redlock.Client>, settings?: Partial<Redlock.Settings>, scripts?: Record<string, string>)
  acquire(resources: string[], duration: number, settings?: Partial<Redlock.Settings>): Promise<Redlock.Lock>
  release(lock: Redlock.Lock, settings?: Partial<Redlock.Settings>): Promise<Redlock.ExecutionResult>
  extend(existing: Redlock.Lock, duration: number, settings?: Partial<Redlock.Settings>): Promise<Redlock.Lock>
  using<T>(
    resources: string[],
    duration: number,
    settings: Partial<Redlock.Settings>,
    routine: (signal: Redlock.RedlockAbortSignal) => Promise<T>,
  ): Promise<T>
  using<T>(resources: string[], duration: number, routine: (signal: Redlock.RedlockAbortSignal) => Promise<T>): Promise<T>
  quit(): Promise<void>
}

// `module.exports = Redlock`, with the other exports as its properties.
declare namespace Redlock {
  /** What the compat layer reads from an ioredis client; real ioredis instances fit. */
  export interface RedisClientLike {
    readonly options: {
      host?: string
      port?: number
      db?: number
      username?: string
      password?: string
      tls?: unknown
      path?: string
    }
    quit?(): Promise<unknown>
  }

  /** An ioredis-like client or a node URL (`redis://host:port/db`). */
  export type Client = RedisClientLike | string

  export interface Settings {
    readonly driftFactor: number
    /** Retries after the first attempt; -1 retries forever. */
    readonly retryCount: number
    readonly retryDelay: number
    readonly retryJitter: number
    readonly automaticExtensionThreshold: number
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

  /** A node reported that another owner holds a resource (emitted on 'error'). */
  export class ResourceLockedError extends Error {
    constructor(message: string)
  }

  /** An operation failed to reach a quorum within its retry window. */
  export class ExecutionError extends Error {
    readonly attempts: ReadonlyArray<Promise<ExecutionStats>>
    constructor(message: string, attempts: ReadonlyArray<Promise<ExecutionStats>>)
  }

  /** A held lock; `extend` updates it in place and returns it. */
  export class Lock {
    private constructor()
    readonly redlock: Redlock
    readonly resources: string[]
    readonly value: string
    readonly attempts: ReadonlyArray<Promise<ExecutionStats>>
    /** Milliseconds since the epoch when the lock expires (0 once released). */
    expiration: number
    release(): Promise<ExecutionResult>
    extend(duration: number): Promise<Lock>
  }

  export { Redlock as default, Redlock }
}

export = Redlock
