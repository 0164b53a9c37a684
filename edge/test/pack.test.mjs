// `npm pack` of the package installs into an empty project (no Rust toolchain on PATH, no
// network) and locks against real nodes, through the REST transport so that the project
// needs no other package.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFile, execFileSync } from 'node:child_process'
import { promisify } from 'node:util'
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { NODE_URLS, startRestFixture } from './harness.mjs'

const TOKEN = 'pack-token-0123456789'
let dir
let fixtures

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'quorumlock-edge-pack-'))
  fixtures = await Promise.all(NODE_URLS.slice(0, 3).map((u) => startRestFixture(u, TOKEN)))
})

after(async () => {
  await Promise.all(fixtures.map((f) => f.close()))
  rmSync(dir, { recursive: true, force: true })
})

test('the packed package installs offline into an empty project and locks', { timeout: 50_000 }, async () => {
  const pkgDir = new URL('..', import.meta.url).pathname
  execFileSync('npm', ['pack', '--silent', '--pack-destination', dir], { cwd: pkgDir, stdio: 'pipe' })
  const tgz = readdirSync(dir).find((f) => f.endsWith('.tgz'))
  assert.ok(tgz, 'npm pack made a tarball')
  const project = join(dir, 'project')
  execFileSync('mkdir', ['-p', project])
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'empty', private: true, type: 'module' }))
  execFileSync('npm', ['install', '--offline', '--no-audit', '--no-fund', '--silent', join(dir, tgz)], {
    cwd: project,
    stdio: 'pipe',
    env: { ...process.env, PATH: '/usr/local/bin:/usr/bin:/bin' },
  })
  const files = execFileSync('find', ['node_modules/quorumlock-edge', '-type', 'f'], { cwd: project }).toString()
  assert.match(files, /quorumlock_edge_bg\.wasm/)
  assert.doesNotMatch(files, /Cargo\.toml|\.rs\n/)
  writeFileSync(join(project, 'main.js'), `
    import { Client, QuorumlockError } from 'quorumlock-edge'
    const nodes = JSON.parse(process.env.ENDPOINTS)
    const client = await Client.connect({ nodes, requireQuorum: true, nodeTimeoutMs: 500 })
    const lock = await client.acquire('packed', { ttlMs: 3000, fenced: true })
    let busy = null
    try { await client.acquire('packed', { retryCount: 0 }) } catch (e) { busy = e instanceof QuorumlockError ? e.code : String(e) }
    const report = await lock.release()
    console.log(JSON.stringify({ value: lock.value, token: String(lock.token), busy, released: report.releasedCount }))
  `)
  // Asynchronously: the REST fixtures answer from this process's event loop.
  const { stdout: out } = await promisify(execFile)('node', ['main.js'], {
    cwd: project,
    env: {
      PATH: '/usr/local/bin:/usr/bin:/bin',
      ENDPOINTS: JSON.stringify(fixtures.map((f) => ({ url: f.url, token: TOKEN }))),
    },
  })
  const r = JSON.parse(out)
  assert.match(r.value, /^[0-9a-f]{40}$/)
  assert.ok(BigInt(r.token) > 0n)
  assert.equal(r.busy, 'QL_BUSY')
  assert.equal(r.released, 3)
})
