// The 5 lock nodes of the Node benchmarks: $QL_NODES if set (e.g. under `ql-harness exec`),
// else started with ql-harness ($QL_HARNESS, else $CARGO_TARGET_DIR/debug or target/debug;
// --persist $QL_BENCH_PERSIST or always) and stopped by `stopNodes`.
import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))

function harness () {
  if (process.env.QL_HARNESS) return process.env.QL_HARNESS
  const target = process.env.CARGO_TARGET_DIR ?? `${ROOT}target`
  return `${target}/debug/ql-harness`
}

/** Resolves to `[urls, runDir]`; `runDir` is null when the nodes came from $QL_NODES. */
export function startNodes () {
  if (process.env.QL_NODES) return [process.env.QL_NODES.split(','), null]
  const persist = process.env.QL_BENCH_PERSIST ?? 'always'
  const out = execFileSync(harness(), ['start', '--nodes', '5', '--persist', persist,
    '--parent', String(process.pid)], { encoding: 'utf8', timeout: 60_000 })
  const info = JSON.parse(out)
  return [info.nodes.map((n) => n.url), info.run_dir]
}

/** Stops nodes started by `startNodes` (nothing for $QL_NODES). */
export function stopNodes (runDir) {
  if (runDir === null) return
  execFileSync(harness(), ['stop', runDir], { stdio: 'ignore', timeout: 60_000 })
}
