#!/usr/bin/env bash
# make test-dist: installs each artifact of `make dist` the way a user without Rust would, and
# locks against 3 real redis-server nodes (ql-harness exec). PATH keeps no folder with cargo,
# rustc or rustup, so nothing can be built from source on the way.
#   packaging/test-dist.sh DIST_DIR QL_HARNESS
set -euo pipefail
dist=$(cd "${1:?usage: test-dist.sh DIST_DIR QL_HARNESS}" && pwd)
harness=$(realpath "${2:?usage: test-dist.sh DIST_DIR QL_HARNESS}")
root=$(cd "$(dirname "$0")/.." && pwd)
smoke=$root/packaging/smoke
version=$(python3 "$root/packaging/versions.py" --print)
export QL_EXPECT_VERSION=$version
tmp=$(mktemp -d)
# The nodes write with appendfsync always; on a disk that other builds keep busy, one fsync can
# outlast the 50 ms node timeout. Their run folders go to tmpfs when there is one.
runs=""
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
  runs=$(mktemp -d /dev/shm/ql-test-dist.XXXXXX)
  export QL_RUN_ROOT=$runs
fi
trap 'rm -rf "$tmp" ${runs:+"$runs"}' EXIT
passed=0
failed=0

check() { # check NAME COMMAND...: one counted check
  local name=$1
  shift
  if "$@" >"$tmp/check.out" 2>&1; then
    passed=$((passed + 1))
    echo "  ok   $name"
  else
    failed=$((failed + 1))
    echo "  FAIL $name"
    sed 's/^/       /' "$tmp/check.out"
  fi
}

smoke_run() { # smoke_run DIR COMMAND...: runs a smoke program that prints "LABEL: N passed,
  # M failed" in DIR, and adds its counts (no subshell, so the counts stay)
  local dir=$1 out=$tmp/smoke.out status=0
  shift
  pushd "$dir" >/dev/null
  "$@" >"$out" 2>&1 || status=$?
  popd >/dev/null
  cat "$out"
  local line
  line=$(grep -E '^[^ ].*: [0-9]+ passed, [0-9]+ failed$' "$out" | tail -n1 || true)
  if [ -n "$line" ]; then
    local p f
    p=$(sed -E 's/.*: ([0-9]+) passed.*/\1/' <<<"$line")
    f=$(sed -E 's/.*, ([0-9]+) failed$/\1/' <<<"$line")
    passed=$((passed + p))
    failed=$((failed + f))
  fi
  if [ "$status" != 0 ] && { [ -z "$line" ] || [ "$f" = 0 ]; }; then
    failed=$((failed + 1))
    echo "  FAIL exit status $status: $*"
  fi
}

stopwatch() { # stopwatch NAME COMMAND...: runs it, prints its wall time, counts it as a check
  local name=$1 start ms
  shift
  start=$(date +%s%N)
  check "$name" "$@"
  ms=$((($(date +%s%N) - start) / 1000000))
  printf '       (took %d.%02d s)\n' $((ms / 1000)) $((ms % 1000 / 10))
}

not_stripped() { # exits 0 when ELF file $1 still has a symbol table or debug info
  readelf -S --wide "$1" | grep -Eq ' \.(symtab|debug_info) '
}
stripped() { ! not_stripped "$1"; }

# --- a PATH without Rust ---------------------------------------------------------------------
clean_path=""
dropped=""
IFS=: read -ra path_dirs <<<"$PATH"
for d in "${path_dirs[@]}"; do
  [ -n "$d" ] || continue
  case ":$clean_path:$dropped:" in *":$d:"*) continue ;; esac
  if [ -e "$d/cargo" ] || [ -e "$d/rustc" ] || [ -e "$d/rustup" ]; then
    echo "test-dist: PATH without $d (Rust toolchain)"
    dropped=${dropped:+$dropped:}$d
    continue
  fi
  clean_path=${clean_path:+$clean_path:}$d
done
export PATH=$clean_path
unset CARGO RUSTC RUSTUP_TOOLCHAIN CARGO_TARGET_DIR CARGO_BUILD_JOBS
echo "test-dist: quorumlock $version from $dist"
check "no cargo, rustc or rustup on PATH" bash -c '! command -v cargo && ! command -v rustc && ! command -v rustup'

# --- the artifacts ---------------------------------------------------------------------------
shopt -s nullglob
wheels=("$dist"/quorumlock-"$version"-cp310-abi3-manylinux_*_x86_64.whl)
sdist=$dist/quorumlock-$version.tar.gz
npm_main=$dist/quorumlock-$version.tgz
npm_platform=$dist/quorumlock-linux-x64-gnu-$version.tgz
c_tarball=$dist/quorumlock-$version-linux-x86_64.tar.gz
check "one abi3 manylinux x86_64 wheel" test ${#wheels[@]} = 1
for f in "$sdist" "$npm_main" "$npm_platform" "$c_tarball"; do check "$(basename "$f")" test -s "$f"; done
"$root/packaging/sizes.sh" "$dist"
[ "$failed" = 0 ] || { echo "test-dist: artifacts missing; run make dist"; echo "test-dist: $passed passed, $failed failed"; exit 1; }
wheel=${wheels[0]}

# --- Python: a fresh venv, pip install of the wheel alone ------------------------------------
echo "python: $(basename "$wheel")"
python3 -c 'import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); z.extractall(sys.argv[2], [n for n in z.namelist() if n.endswith(".so")])' \
  "$wheel" "$tmp/wheel"
check "the extension in the wheel is stripped" stripped "$tmp/wheel/quorumlock/_quorumlock.abi3.so"
check "a fresh venv" python3 -m venv "$tmp/venv"
stopwatch "pip install --no-index (wheel only)" \
  "$tmp/venv/bin/pip" install -q --no-index --disable-pip-version-check "$wheel"
smoke_run "$tmp" "$harness" exec --nodes 3 -- "$tmp/venv/bin/python" "$smoke/smoke.py"
sdist_ok() { # the sdist carries the version and every crate the Python crate builds from
  python3 - "$sdist" "$version" <<'EOF'
import sys, tarfile
sdist, version = sys.argv[1:]
tar = tarfile.open(sdist)
names = tar.getnames()
top = f"quorumlock-{version}/"
info = tar.extractfile(top + "PKG-INFO").read().decode()
assert f"\nVersion: {version}\n" in info, info[:300]
for need in ("pyproject.toml", "Cargo.lock", "core/src/lib.rs", "proto/src/lib.rs", "python/src/lib.rs"):
    assert any(n.startswith(top) and n.endswith(need) for n in names), f"no {need} in the sdist"
EOF
}
check "the sdist has PKG-INFO $version and the engine's sources" sdist_ok

# --- Node: an empty npm project, npm install of the two tarballs -----------------------------
echo "node: $(basename "$npm_main") + $(basename "$npm_platform")"
mkdir -p "$tmp/app"
printf '{ "name": "app", "private": true, "type": "module" }\n' >"$tmp/app/package.json"
# --offline with an empty cache: whatever npm needs must come from the two tarballs.
stopwatch "npm install --offline (two tarballs, empty cache)" bash -c 'cd "$1" && npm install --offline \
  --cache "$1/.npm-cache" --no-audit --no-fund --loglevel=error "$2" "$3"' _ "$tmp/app" "$npm_main" "$npm_platform"
check "the addon is stripped" stripped "$tmp/app/node_modules/quorumlock-linux-x64-gnu/quorumlock.linux-x64-gnu.node"
cp "$smoke/smoke.mjs" "$tmp/app/"
smoke_run "$tmp/app" "$harness" exec --nodes 3 -- node smoke.mjs

# --- C: the tarball unpacked elsewhere, compiled against with pkg-config and CMake ------------
echo "C: $(basename "$c_tarball")"
mkdir -p "$tmp/c"
tar -xzf "$c_tarball" -C "$tmp/c"
prefix=$tmp/c/quorumlock-$version-linux-x86_64
for f in bin/quorumlock lib/libquorumlock.so lib/libquorumlock.so.0 lib/libquorumlock.so."$version" \
  lib/libquorumlock.a include/quorumlock.h include/quorumlock.hpp lib/pkgconfig/quorumlock.pc \
  lib/cmake/quorumlock/quorumlockConfig.cmake; do
  check "tarball has $f" test -e "$prefix/$f"
done
check "libquorumlock.so and the CLI are stripped" bash -c 'for f; do ! readelf -S --wide "$f" | grep -Eq " \.(symtab|debug_info) " || exit 1; done' \
  _ "$prefix/lib/libquorumlock.so.$version" "$prefix/bin/quorumlock"
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
check "pkg-config --modversion quorumlock is $version" test "$(pkg-config --modversion quorumlock)" = "$version"
check "pkg-config points into the unpacked prefix" bash -c '[ "$(realpath "$(pkg-config --variable=prefix quorumlock)")" = "$(realpath "$1")" ]' _ "$prefix"
# shellcheck disable=SC2046 # pkg-config output is a list of flags
check "cc \$(pkg-config --cflags --libs quorumlock)" cc -Wall -Wextra -Werror "$smoke/smoke.c" \
  $(pkg-config --cflags --libs quorumlock) -Wl,-rpath,"$prefix/lib" -o "$tmp/smoke-shared"
check "it loads libquorumlock.so.0 from the prefix" bash -c 'ldd "$1" | grep -q "libquorumlock.so.0 => $2/lib/"' _ "$tmp/smoke-shared" "$prefix"
smoke_run "$tmp" "$harness" exec --nodes 3 -- "$tmp/smoke-shared" "$version" "C (pkg-config, shared)"
check "cmake find_package(quorumlock) ($version), quorumlock::static" bash -c 'cmake -S "$1" -B "$2" -DCMAKE_PREFIX_PATH="$3" \
  -DQL_EXPECT_VERSION="$4" && cmake --build "$2"' _ "$smoke/cmake" "$tmp/cmake" "$prefix" "$version"
check "the static build needs no libquorumlock.so" bash -c '! ldd "$1" | grep libquorumlock' _ "$tmp/cmake/smoke-static"
smoke_run "$tmp" "$harness" exec --nodes 3 -- "$tmp/cmake/smoke-static" "$version" "C (CMake, static)"
check "C++ example (quorumlock.hpp, quorumlock::quorumlock)" bash -c 'cmake -S "$1" -B "$2" -DCMAKE_PREFIX_PATH="$3" \
  -DCMAKE_BUILD_RPATH="$3/lib" -DCMAKE_CXX_FLAGS="-Wall -Wextra -Werror" && cmake --build "$2" && "$4" exec --nodes 3 -- "$2/hello"' \
  _ "$root/examples/cpp" "$tmp/cpp" "$prefix" "$harness"
check "quorumlock --version is $version" test "$("$prefix/bin/quorumlock" --version)" = "quorumlock $version"
check "quorumlock run takes the lock and sets QUORUMLOCK_TOKEN" "$harness" exec --nodes 3 -- \
  bash -c '"$1" --nodes "$QL_NODES" run dist-smoke -- bash -c "test -n \"\$QUORUMLOCK_TOKEN\""' _ "$prefix/bin/quorumlock"
if command -v go >/dev/null; then
  # Go's build cache keeps a cgo package's pkg-config link flags across runs, and each run has
  # a new prefix: flags naming this prefix (as pkg-config does) make the cache key change too.
  export CGO_CFLAGS="-O2 -g -I$prefix/include" CGO_LDFLAGS="-O2 -g -L$prefix/lib"
  check "Go module builds against the tarball (static)" bash -c 'cd "$1/go" && go build -o "$2" ./internal/example && ! ldd "$2" | grep libquorumlock' \
    _ "$root" "$tmp/go-example"
  check "Go: quorumlock.Version() is $version and it locks" bash -c '"$1" exec --nodes 3 -- "$2" | tee /dev/stderr | grep -q "^quorumlock $3: locked"' \
    _ "$harness" "$tmp/go-example" "$version"
else
  echo "  SKIP Go module against the tarball: no go on PATH"
fi

echo "test-dist: $passed passed, $failed failed"
[ "$failed" = 0 ]
