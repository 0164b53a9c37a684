// Loader for Cloudflare Workers and Vercel Edge: the bundler imports the .wasm file as a
// compiled WebAssembly.Module (these runtimes forbid compiling code from bytes at run time).
import wasm from '../wasm/quorumlock_edge_bg.wasm'
import { initSync } from '../wasm/quorumlock_edge.js'

initSync({ module: wasm })
