// make dist-node: lays out the npm packages in the napi-rs convention, ready for `npm pack`.
//   node packaging/npm-stage.mjs NODE_DIR ADDON_DIR OUT_DIR
// OUT_DIR/quorumlock: the files `npm pack` takes from NODE_DIR, with a package.json that lists
// every platform package (NODE_DIR/npm/*) as an optional dependency at the same version, as
// `napi prepublish` does. OUT_DIR/<platform>: that package's package.json and README.md, and
// its .node file from ADDON_DIR (the output of `napi build --platform --release`).
import { execFileSync } from 'node:child_process'
import { copyFileSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import path from 'node:path'

const [nodeDir, addonDir, outDir] = process.argv.slice(2).map((p) => path.resolve(p))
if (!outDir) {
  console.error('usage: node packaging/npm-stage.mjs NODE_DIR ADDON_DIR OUT_DIR')
  process.exit(2)
}
const readJson = (file) => JSON.parse(readFileSync(file, 'utf8'))
const writeJson = (file, value) => writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`)
const fail = (message) => {
  console.error(`npm-stage: ${message}`)
  process.exit(1)
}

const main = readJson(path.join(nodeDir, 'package.json'))
rmSync(outDir, { recursive: true, force: true })

// Platform packages: node/npm/<platformArchABI>/, as `napi create-npm-dirs` made them.
const optionalDependencies = {}
for (const dir of readdirSync(path.join(nodeDir, 'npm')).sort()) {
  const src = path.join(nodeDir, 'npm', dir)
  const pkg = readJson(path.join(src, 'package.json'))
  if (pkg.version !== main.version) fail(`${pkg.name} is ${pkg.version}, quorumlock is ${main.version}`)
  const dst = path.join(outDir, dir)
  mkdirSync(dst, { recursive: true })
  for (const file of pkg.files) {
    const built = path.join(addonDir, file)
    if (!existsSync(built)) fail(`${built} is missing: napi build made no addon for ${dir}`)
    copyFileSync(built, path.join(dst, file))
  }
  writeJson(path.join(dst, 'package.json'), pkg)
  copyFileSync(path.join(src, 'README.md'), path.join(dst, 'README.md'))
  optionalDependencies[pkg.name] = pkg.version
}

// The main package: exactly the files npm would pack from node/, and no addon of its own.
const listing = JSON.parse(
  execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: nodeDir, encoding: 'utf8' }),
)
const dst = path.join(outDir, main.name)
for (const { path: file } of listing[0].files) {
  if (file.endsWith('.node')) fail(`${file} would go into the main package`)
  mkdirSync(path.dirname(path.join(dst, file)), { recursive: true })
  cpSync(path.join(nodeDir, file), path.join(dst, file))
}
writeJson(path.join(dst, 'package.json'), { ...main, optionalDependencies })
console.log(`npm-stage: ${main.name}@${main.version} with ${Object.keys(optionalDependencies).join(', ')}`)
