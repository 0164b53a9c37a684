'use strict'
// npm `install` script: builds the native addon from source (release) unless a .node file for
// this platform already sits next to native.js. Needs cargo; downloads no prebuilt binaries.
const { execFileSync } = require('node:child_process')
const { readdirSync } = require('node:fs')
const path = require('node:path')

const root = path.resolve(__dirname, '..')
const prefix = `quorumlock.${process.platform}-${process.arch}`
if (readdirSync(root).some((f) => f.startsWith(prefix) && f.endsWith('.node'))) {
  process.exit(0)
}

/** The @napi-rs/cli entry point; npm does not install a linked folder's dependencies
 * (`npm install ./node`), so then the locked CLI is installed here first. */
function napiCli() {
  const find = () => {
    const pkg = require.resolve('@napi-rs/cli/package.json', { paths: [root] })
    return path.join(path.dirname(pkg), require(pkg).bin.napi)
  }
  try {
    return find()
  } catch {
    const npm = process.env.npm_execpath
    const args = ['ci', '--omit=dev', '--ignore-scripts', '--no-audit', '--no-fund']
    execFileSync(npm ? process.execPath : 'npm', npm ? [npm, ...args] : args, { cwd: root, stdio: 'inherit' })
    return find()
  }
}

console.error('quorumlock: building the native addon from source (cargo build --release)...')
execFileSync(process.execPath, [napiCli(), 'build', '--platform', '--release', '--js', 'native.js', '--dts', 'native.d.ts'], {
  cwd: root,
  stdio: 'inherit',
})
