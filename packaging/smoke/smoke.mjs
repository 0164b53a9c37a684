// test-dist: the installed npm packages lock on the nodes in QL_NODES and report the release
// version. Copied into a fresh npm project, so that `quorumlock` resolves to what npm installed.
import { createRequire } from 'node:module'
import { Client, QuorumlockError, VERSION } from 'quorumlock'

const require = createRequire(import.meta.url)
const want = process.env.QL_EXPECT_VERSION
const nodes = process.env.QL_NODES.split(',')
let passed = 0
let failed = 0
function check(name, ok, detail = '') {
  if (ok) passed++
  else failed++
  console.log(`  ${ok ? 'ok  ' : 'FAIL'} node: ${name}${ok ? '' : ` (${detail})`}`)
}

const main = require('quorumlock/package.json')
const platform = require('quorumlock-linux-x64-gnu/package.json')
const addon = require.resolve('quorumlock-linux-x64-gnu')
check('the addon comes from the platform package', addon.includes('/node_modules/quorumlock-linux-x64-gnu/'), addon)
check(`VERSION and both package.json are ${want}`, VERSION === want && main.version === want && platform.version === want,
  `${VERSION} ${main.version} ${platform.version}`)
const scripts = Object.keys(main.scripts ?? {}).filter((s) => /^(pre|post)?install$/.test(s))
check('no install scripts', scripts.length === 0, scripts)
check('no runtime dependencies', Object.keys(main.dependencies ?? {}).length === 0, JSON.stringify(main.dependencies))
check('the platform package is an optional dependency', main.optionalDependencies?.['quorumlock-linux-x64-gnu'] === want,
  JSON.stringify(main.optionalDependencies))

const a = await Client.connect(nodes)
const b = await Client.connect(nodes)
try {
  const lock = await a.acquire(['dist-smoke'], { ttlMs: 10_000 })
  check('acquires on every node', lock.nodes.length === nodes.length, lock.nodes.length)
  try {
    await b.acquire(['dist-smoke'], { ttlMs: 10_000, retryCount: 0 })
    check('a second client gets QL_BUSY', false, 'acquired twice')
  } catch (e) {
    check('a second client gets QL_BUSY', e instanceof QuorumlockError && e.code === 'QL_BUSY', e)
  }
  await lock.release()
  await b.using(['dist-smoke'], { ttlMs: 5_000 }, async (l) => check('using() after the release', l.isHeld))
} finally {
  await a.close()
  await b.close()
}
console.log(`node: ${passed} passed, ${failed} failed`)
process.exitCode = failed ? 1 : 0
