// Loader for Node, Bun and Deno's Node compatibility: the module is read from the package.
import { readFileSync } from 'node:fs'
import { initSync } from '../wasm/quorumlock_edge.js'

initSync({ module: readFileSync(new URL('../wasm/quorumlock_edge_bg.wasm', import.meta.url)) })
