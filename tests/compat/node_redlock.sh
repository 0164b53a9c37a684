#!/usr/bin/env bash
# node-redlock v5's own test suite (src/single.test.ts, src/multi.test.ts) against quorumlock's
# compat layer, or against node-redlock itself, on plain ql-harness nodes (persist none).
#
#   tests/compat/node_redlock.sh CHECKOUT [compat|source|npm] [--no-cluster]
#
# Targets: compat (default) is quorumlock/compat; source is the checkout's own src/index.ts, as
# its CI runs it; npm is the published redlock@5.0.0-beta.2.
# CHECKOUT is a node-redlock checkout (mike-marcacci/node-redlock); it is not modified: its
# package.json, tsconfig files and src/ are copied to a work folder ($QL_WORK, default
# /tmp/ql-node-redlock-<target>), where its devDependencies are installed from the npm registry.
# In the copied tests only these lines change, and the script prints them as a diff:
#   - the import `from "./index.js"` becomes `from "quorumlock/compat"` (target compat only;
#     node_modules/quorumlock links to this repository's node/ package), or `from "redlock"`
#     (target npm);
#   - each docker-compose host (`{ host: "redis-single-instance" }`, ...) becomes
#     `{ host: "127.0.0.1", port: <a ql-harness node> }`.
# The suite's unreachable-node test keeps its `127.0.0.1:6379`; nothing may listen there.
# As in the suite's docker-compose file, the single-client Cluster has 3 masters with a replica
# each and the three Clusters of the multi-client tests have 3 masters each; a Cluster's host is
# its first node. --no-cluster removes the two `run("cluster", ...)` calls (12 of the 24 tests)
# instead of starting Clusters. Then it builds the tests with the suite's own `npm run build` (tsc),
# runs `npm test` (ava) and prints `passed/total`.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
checkout=${1:?usage: node_redlock.sh CHECKOUT [compat|source|npm] [--no-cluster]}
checkout=$(cd "$checkout" && pwd)
target=${2:-compat}
cluster=yes
[ "${3:-}" = --no-cluster ] && cluster=no
case $target in compat | source | npm) ;; *) echo "target must be compat, source or npm (got $target)" >&2; exit 2 ;; esac
harness=${QL_HARNESS:-$root/target/debug/ql-harness}
work=${QL_WORK:-/tmp/ql-node-redlock-$target}

if (exec 3<>/dev/tcp/127.0.0.1/6379) 2>/dev/null; then
  echo "something listens on 127.0.0.1:6379; the suite's unreachable-node test needs it free" >&2
  exit 2
fi

mkdir -p "$work"
cp "$checkout/package.json" "$checkout"/tsconfig*.json "$work/"
rm -rf "$work/src" "$work/dist"
cp -r "$checkout/src" "$work/src"
mkdir -p "$work/dist/esm" "$work/dist/cjs"
cp "$checkout/dist/esm/package.json" "$work/dist/esm/"
cp "$checkout/dist/cjs/package.json" "$work/dist/cjs/"
cd "$work"
if [ ! -d node_modules ] || ! cmp -s package.json node_modules/.ql-package.json; then
  npm install --ignore-scripts --no-audit --no-fund --no-package-lock >npm-install.log 2>&1 ||
    { cat npm-install.log >&2; exit 1; }
  cp package.json node_modules/.ql-package.json
fi
ln -sfn "$root/node" node_modules/quorumlock
if [ "$target" = npm ]; then
  npm install --no-save --ignore-scripts --no-audit --no-fund redlock@5.0.0-beta.2 >>npm-install.log 2>&1
fi

# Plain nodes: 1 for single.test.ts, 3 for multi.test.ts (the suite's files run in parallel).
# Each start also stops with this script (--parent); run-dirs lists them for an early stop.
: >run-dirs
trap 'while read -r d; do "$harness" stop "$d" >/dev/null 2>&1 || true; done <run-dirs' EXIT
start() {
  local up
  up=$("$harness" start --persist none --parent $$ "$@" | tail -n 1)
  node -e 'console.log(JSON.parse(process.argv[1]).run_dir)' "$up" >>run-dirs
  node -e 'const u = JSON.parse(process.argv[1]); for (const n of u.redis_cluster ? [u.redis_cluster.nodes[0]] : u.nodes) console.log(n.addr.split(":").pop())' "$up"
}
mapfile -t ports < <(start --nodes 4)
hosts=(
  redis-single-instance "${ports[0]}"
  redis-multi-instance-a "${ports[1]}"
  redis-multi-instance-b "${ports[2]}"
  redis-multi-instance-c "${ports[3]}"
)
if [ $cluster = yes ]; then
  hosts+=(redis-single-cluster-1 "$(start --nodes 0 --redis-cluster 3 --cluster-replicas 1)")
  for c in a b c; do hosts+=("redis-multi-cluster-$c-1" "$(start --nodes 0 --redis-cluster 3)"); done
fi

pristine=$(mktemp -d)
cp src/*.test.ts "$pristine/"
for ((i = 0; i < ${#hosts[@]}; i += 2)); do
  sed -i "s/{ host: \"${hosts[i]}\" }/{ host: \"127.0.0.1\", port: ${hosts[i + 1]} }/" src/*.test.ts
done
case $target in
  compat) sed -i 's|from "./index.js";|from "quorumlock/compat";|' src/*.test.ts ;;
  npm) sed -i 's|from "./index.js";|from "redlock";|' src/*.test.ts ;;
esac
if [ $cluster = no ]; then
  # Drop `run("cluster", ...);` (one call spanning up to 6 lines) from both files.
  sed -i '/^run(\s*$/{N;/"cluster"/{:a;/);\s*$/!{N;ba};d}}; /^run("cluster"/d' src/*.test.ts
fi
echo "---- changes to node-redlock's tests ----"
diff -u "$pristine/single.test.ts" src/single.test.ts | tail -n +3 || true
diff -u "$pristine/multi.test.ts" src/multi.test.ts | tail -n +3 || true
rm -rf "$pristine"

echo "---- npm run build ----"
npm run build
echo "---- npm test (ava) ----"
set +e
npm test 2>&1 | tee test.log
set -e
passed=$(grep -cE '^\s*✔' test.log || true)
failed=$(grep -cE '^\s*(✘|✖)' test.log || true)
echo "node-redlock suite against $target: $passed/$((passed + failed)) passed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
