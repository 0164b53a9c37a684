// Loader for browsers, Deno and other runtimes with fetch and top-level await: the module is
// fetched next to this file.
import init from '../wasm/quorumlock_edge.js'

await init({ module_or_path: new URL('../wasm/quorumlock_edge_bg.wasm', import.meta.url) })
