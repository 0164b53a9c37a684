// ESM entry: re-exports the CommonJS package.
import cjs from './index.js'

export const { Client, Lock, QuorumlockError, ERROR_CODES, VERSION, FENCE_CHECK_SCRIPT, LATENCY_BOUNDS_US } = cjs
