// The public surface: index.d.ts declares every runtime export and nothing else, the error
// codes follow the engine's kinds, and the generated glue is what the package loads.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import * as api from '../src/api.js'

const dts = readFileSync(new URL('../index.d.ts', import.meta.url), 'utf8')

test('index.d.ts declares every runtime export and no other', () => {
  const declared = new Set(
    [...dts.matchAll(/^export declare (?:const|class|namespace|function) (\w+)/gm)].map((m) => m[1]),
  )
  assert.deepEqual([...declared].sort(), Object.keys(api).sort())
  const fns = [...dts.matchAll(/^ {2}function (\w+)/gm)].map((m) => m[1]).sort()
  assert.deepEqual(fns, Object.keys(api.transports).sort())
})

test('error codes are the engine kinds in order, then QL_INTERNAL, and all are typed', () => {
  assert.deepEqual(api.ERROR_CODES, [
    'QL_BUSY', 'QL_QUORUM', 'QL_VALIDITY', 'QL_CANCELLED', 'QL_LOST', 'QL_EXT_LIMIT',
    'QL_INVALID', 'QL_CONNECTION', 'QL_AUTH', 'QL_SCRIPT', 'QL_MISCONFIGURED', 'QL_TIMEOUT',
    'QL_INTERNAL',
  ])
  for (const code of api.ERROR_CODES) assert.ok(dts.includes(`'${code}'`), code)
  const native = readFileSync(new URL('../../node/index.d.ts', import.meta.url), 'utf8')
  const nativeCodes = [...native.matchAll(/\| '(QL_\w+)'/g)].map((m) => m[1])
  assert.deepEqual(nativeCodes, [...api.ERROR_CODES], 'the same codes as the native package')
})

test('version and fence script come from the engine', () => {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'))
  assert.equal(api.VERSION, pkg.version)
  assert.match(api.FENCE_CHECK_SCRIPT, /redis\.call/)
})
