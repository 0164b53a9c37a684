// The package surface: generated files are fresh, every export is declared, every core error
// kind has its own code, versions agree, the ESM entry matches the CommonJS one.
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import os from 'node:os'
import path from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'

import * as esm from '../index.mjs'

const require = createRequire(import.meta.url)
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const cjs = require('../index.js')
const compat = require('../compat/index.js')
const native = require('../native.js')

/** Names a hand-written .d.ts exports (declarations and `export { ... }` lists). */
function declared(file) {
  const text = readFileSync(path.join(root, file), 'utf8')
  const names = new Set()
  for (const m of text.matchAll(/^\s*export\s+(?:declare\s+)?(?:default\s+)?(?:abstract\s+)?(?:class|const|function|let)\s+(\w+)/gm)) {
    names.add(m[1])
  }
  if (/^\s*export\s+default\b/m.test(text)) names.add('default')
  for (const m of text.matchAll(/^\s*export\s*\{([^}]*)\}/gm)) {
    for (const part of m[1].split(',')) {
      const name = part.trim().split(/\s+as\s+/).pop()
      if (name && !name.startsWith('type ')) names.add(name)
    }
  }
  return names
}

// napi build always passes --target, so this compiles tokio, redis, rustls and ring a second
// time (target/<triple>/): minutes on 2 cores. `make test-node` sets QL_SKIP_NAPI_BUILD=1
// because `make dist` (run by CI after make test) makes the same comparison on its release build.
const napiBuildSkipped = process.env.QL_SKIP_NAPI_BUILD === '1'
  ? 'QL_SKIP_NAPI_BUILD=1: make dist compares native.js and native.d.ts instead'
  : false

test('native.js and native.d.ts are what napi build generates now', { skip: napiBuildSkipped }, () => {
  const out = mkdtempSync(path.join(os.tmpdir(), 'quorumlock-napi-'))
  try {
    execFileSync(
      path.join(root, 'node_modules', '.bin', 'napi'),
      ['build', '--platform', '--js', 'native.js', '--dts', 'native.d.ts', '--output-dir', out],
      { cwd: root, stdio: ['ignore', 'ignore', 'pipe'] },
    )
    for (const file of ['native.js', 'native.d.ts']) {
      const fresh = readFileSync(path.join(out, file), 'utf8')
      const checkedIn = readFileSync(path.join(root, file), 'utf8')
      assert.equal(fresh, checkedIn, `${file} is stale: run npm run build and commit it`)
    }
  } finally {
    rmSync(out, { recursive: true, force: true })
  }
})

test('every runtime export of index.js is declared in index.d.ts, and the reverse', () => {
  const runtime = Object.keys(cjs).sort()
  const types = [...declared('index.d.ts')].sort()
  assert.deepEqual(types, runtime)
})

test('every runtime export of compat/index.js is declared in compat/index.d.ts, and the reverse', () => {
  const runtime = Object.keys(compat).sort()
  const types = [...declared('compat/index.d.ts')].sort()
  assert.deepEqual(types, runtime)
})

test('index.mjs re-exports exactly the CommonJS exports', () => {
  assert.deepEqual(Object.keys(esm).sort(), Object.keys(cjs).sort())
  for (const name of Object.keys(cjs)) assert.equal(esm[name], cjs[name], name)
})

test('every core error kind has its own code, the one ErrorKind::as_str gives', () => {
  const kinds = native.errorKinds()
  assert.ok(kinds.length >= 12)
  for (const { kind, code } of kinds) {
    assert.equal(code, kind, `${kind} must not fall back to QL_INTERNAL`)
    assert.ok(cjs.ERROR_CODES.includes(code), `${code} is missing from ERROR_CODES`)
  }
  assert.equal(new Set(kinds.map((k) => k.code)).size, kinds.length)
  assert.deepEqual([...kinds.map((k) => k.code), 'QL_INTERNAL'], [...cjs.ERROR_CODES])
  const dts = readFileSync(path.join(root, 'index.d.ts'), 'utf8')
  for (const code of cjs.ERROR_CODES) assert.ok(dts.includes(`'${code}'`), `${code} is missing from ErrorCode`)
})

test('the version is the same in Cargo, package.json and the module', () => {
  const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'))
  const cargo = readFileSync(path.join(root, '..', 'Cargo.toml'), 'utf8')
  const workspace = cargo.match(/\[workspace\.package\][^[]*?version\s*=\s*"([^"]+)"/)
  assert.ok(workspace, 'no [workspace.package] version')
  assert.equal(pkg.version, workspace[1])
  assert.equal(cjs.VERSION, pkg.version)
})

test('QuorumlockError is one Error class with a string code and frozen nodes', () => {
  const e = new cjs.QuorumlockError({ code: 'QL_BUSY', message: 'm', attempts: 2, nodes: [{ index: 0 }] })
  assert.ok(e instanceof Error)
  assert.equal(e.name, 'QuorumlockError')
  assert.equal(e.code, 'QL_BUSY')
  assert.equal(e.attempts, 2)
  assert.ok(Object.isFrozen(e.nodes) && Object.isFrozen(e.nodes[0]))
})
