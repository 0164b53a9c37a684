/* tslint:disable */
/* eslint-disable */

/**
 * A client over N nodes reached through a transport.
 */
export class Engine {
    free(): void;
    [Symbol.dispose](): void;
    /**
     * Acquires `resources` (a name or an array of names) with `options` over the client's
     * defaults; `signal` (an AbortSignal) cancels; `on_lost(error)` is called once if the
     * lock is lost while held. Resolves to a [`LockHandle`].
     */
    acquire(resources: any, options: any, signal: any, on_lost?: Function | null): Promise<any>;
    /**
     * Refuses new acquisitions.
     */
    close(): void;
    /**
     * Probes every node; rejects (with `requireQuorum`) when fewer than a quorum are usable.
     */
    connect(): Promise<any>;
    /**
     * The Redis key of a resource.
     */
    key(resource: any): Uint8Array;
    /**
     * Checks `options` (the native package's names) and the transport; sends nothing.
     * `on_warning(code, node, message)` receives each warning once per kind and node.
     */
    constructor(options: any, transport: any, on_warning?: Function | null);
    /**
     * The node addresses.
     */
    readonly addresses: string[];
    /**
     * Number of nodes N.
     */
    readonly nodeCount: number;
    /**
     * The quorum N / 2 + 1.
     */
    readonly quorum: number;
}

/**
 * A held lock (the package's `Lock` wraps it).
 */
export class LockHandle {
    private constructor();
    free(): void;
    [Symbol.dispose](): void;
    /**
     * Extends to `ttl_ms` (default: the lock's TTL) from now.
     */
    extend(ttl_ms: any): Promise<any>;
    /**
     * The loss as an error object if the lock is lost now, else `null`.
     */
    lostError(): any;
    /**
     * The per-node report of the release; empty before it.
     */
    releaseNodes(): Array<any>;
    /**
     * Releases on every node; idempotent. Resolves to `{ releasedCount, wasHeldByQuorum }`;
     * the per-node report is [`LockHandle::release_nodes`], made only when read.
     */
    release(): Promise<any>;
    /**
     * Starts or stops the auto-extension.
     */
    setAutoExtend(on: boolean): void;
    /**
     * The reports of every attempt, oldest first.
     */
    readonly attemptReports: Array<any>;
    /**
     * Attempts the acquisition took.
     */
    readonly attempts: number;
    /**
     * True while the auto-extension runs.
     */
    readonly autoExtending: boolean;
    /**
     * The report of the last successful extend, if any.
     */
    readonly extendNodes: any;
    /**
     * Successful extensions so far.
     */
    readonly extensions: number;
    /**
     * The report of the successful attempt.
     */
    readonly nodes: Array<any>;
    /**
     * Validity left in whole milliseconds; 0 once expired, lost or released.
     */
    readonly remainingMs: number;
    /**
     * The fencing tokens as decimal strings, one per resource in sorted order; `undefined`
     * when not fenced.
     */
    readonly tokens: string[] | undefined;
    /**
     * The TTL in milliseconds.
     */
    readonly ttlMs: number;
    /**
     * The value stored in the keys.
     */
    readonly value: string;
}

/**
 * The codes of every error kind, in numeric order.
 */
export function errorCodes(): string[];

/**
 * The Lua source of the fence check for protected resources kept in Redis.
 */
export function fenceCheckScript(): string;

/**
 * A message on `channel` (with `message`) for listener `listener` from node `node`: a
 * release notice (REDLOCK.md §9). A message on the waiter's named channel carries the id of
 * the waiter the release popped from the key's line (`<id> g<n>` when it granted that waiter
 * the key for its registration `n`): it counts for that waiter only, while that waiter still
 * listens in this isolate, and as a plain notice otherwise (a grant to a waiter gone from
 * here counts for nobody: its LEAVE hands the key on). A grant counts for the waiter's
 * current registration only. Called by the package's transport wrapper; a listener that is
 * gone is ignored.
 */
export function notice(listener: number, node: number, channel: any, message: any): void;

/**
 * Delivers the outcome of request or timer `id`: the reply (`ok`) or the failure. Called by
 * the package's transport wrapper; an id whose future is gone is ignored.
 */
export function settle(id: number, ok: boolean, value: any): void;

/**
 * The crate version.
 */
export function version(): string;

export type InitInput = RequestInfo | URL | Response | BufferSource | WebAssembly.Module;

export interface InitOutput {
    readonly memory: WebAssembly.Memory;
    readonly __wbg_engine_free: (a: number, b: number) => void;
    readonly __wbg_lockhandle_free: (a: number, b: number) => void;
    readonly engine_acquire: (a: number, b: any, c: any, d: any, e: number) => any;
    readonly engine_addresses: (a: number) => [number, number];
    readonly engine_close: (a: number) => void;
    readonly engine_connect: (a: number) => any;
    readonly engine_key: (a: number, b: any) => [number, number, number];
    readonly engine_new: (a: any, b: any, c: number) => [number, number, number];
    readonly engine_nodeCount: (a: number) => number;
    readonly engine_quorum: (a: number) => number;
    readonly errorCodes: () => [number, number];
    readonly fenceCheckScript: () => [number, number];
    readonly lockhandle_attemptReports: (a: number) => any;
    readonly lockhandle_attempts: (a: number) => number;
    readonly lockhandle_autoExtending: (a: number) => number;
    readonly lockhandle_extend: (a: number, b: any) => any;
    readonly lockhandle_extendNodes: (a: number) => any;
    readonly lockhandle_extensions: (a: number) => number;
    readonly lockhandle_lostError: (a: number) => any;
    readonly lockhandle_nodes: (a: number) => any;
    readonly lockhandle_release: (a: number) => any;
    readonly lockhandle_releaseNodes: (a: number) => any;
    readonly lockhandle_remainingMs: (a: number) => number;
    readonly lockhandle_setAutoExtend: (a: number, b: number) => [number, number];
    readonly lockhandle_tokens: (a: number) => [number, number];
    readonly lockhandle_ttlMs: (a: number) => number;
    readonly lockhandle_value: (a: number) => [number, number];
    readonly notice: (a: number, b: number, c: any, d: any) => void;
    readonly settle: (a: number, b: number, c: any) => void;
    readonly version: () => [number, number];
    readonly __wasm_bindgen_func_elem_469: (a: number, b: number, c: any) => [number, number];
    readonly __wasm_bindgen_func_elem_476: (a: number, b: number, c: any, d: any) => void;
    readonly __wasm_bindgen_func_elem_177: (a: number, b: number, c: number) => void;
    readonly __wbindgen_export: (a: number, b: number) => number;
    readonly __wbindgen_export2: (a: number, b: number, c: number, d: number) => number;
    readonly __wbindgen_export3: (a: number, b: number, c: number) => void;
    readonly __wbindgen_export4: (a: number) => void;
    readonly __wbindgen_export5: () => number;
    readonly __wbindgen_externrefs: WebAssembly.Table;
    readonly __wbindgen_export6: (a: number, b: number) => void;
    readonly __wbindgen_export7: (a: number, b: number) => void;
    readonly __wbindgen_export8: (a: number) => void;
    readonly __wbindgen_start: () => void;
}

export type SyncInitInput = BufferSource | WebAssembly.Module;

/**
 * Instantiates the given `module`, which can either be bytes or
 * a precompiled `WebAssembly.Module`.
 *
 * @param {{ module: SyncInitInput }} module - Passing `SyncInitInput` directly is deprecated.
 *
 * @returns {InitOutput}
 */
export function initSync(module: { module: SyncInitInput } | SyncInitInput): InitOutput;

/**
 * If `module_or_path` is {RequestInfo} or {URL}, makes a request and
 * for everything else, calls `WebAssembly.instantiate` directly.
 *
 * @param {{ module_or_path: InitInput | Promise<InitInput> }} module_or_path - Passing `InitInput` directly is deprecated.
 *
 * @returns {Promise<InitOutput>}
 */
export default function __wbg_init (module_or_path?: { module_or_path: InitInput | Promise<InitInput> } | InitInput | Promise<InitInput>): Promise<InitOutput>;
