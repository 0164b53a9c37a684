// The bad-input matrix (bad_input_matrix.mjs) in its own process: a crash of the process (a
// segfault, an abort, a panic across the addon) fails this test by its exit status.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import path from 'node:path'
import { after, before, test } from 'node:test'
import { fileURLToPath } from 'node:url'

import { startCluster } from './harness.mjs'

const here = path.dirname(fileURLToPath(import.meta.url))
let cluster

before(() => {
  cluster = startCluster(3)
})

after(() => {
  cluster.stop()
})

test('every public call and constructor refuses wrong values with typed errors, in a subprocess', () => {
  const started = Date.now()
  const out = spawnSync(process.execPath, [path.join(here, 'bad_input_matrix.mjs'), cluster.urls.join(',')], {
    encoding: 'utf8',
    timeout: 120_000,
  })
  const last = out.stdout.trim().split('\n').pop()
  console.log(`${last} in ${((Date.now() - started) / 1000).toFixed(1)} s`)
  assert.equal(out.status, 0, `exit ${out.status} ${out.signal ?? ''}\n${out.stdout}\n${out.stderr.slice(-4000)}`)
  assert.match(out.stdout, /cases: \d+, known: \d+, failures: 0/)
})
