#!/usr/bin/env bash
# Builds the native library of the JVM package and puts a stripped copy where JNA looks for
# it inside the jar: <classes>/linux-x86-64/libquorumlock_uniffi.so.
#   build-native.sh <cargo profile: dev|release> <classes dir>
# Also builds what the tests use: uniffi-bindgen (staleness test), ql-harness (nodes) and the
# quorumlock CLI (cross-language contention). cargo is incremental; CARGO_TARGET_DIR is
# honoured; QL_CARGO_JOBS sets -j (default 1: the machine is shared).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
profile=${1:-dev}
classes=${2:?classes dir}
case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) platform=linux-x86-64 ;;
  *) echo "build-native.sh: only linux-x86-64 is packaged so far" >&2; exit 1 ;;
esac
cargo build --locked -q -j "${QL_CARGO_JOBS:-1}" --profile "$profile" \
  --manifest-path "$repo/Cargo.toml" \
  -p quorumlock-uniffi -p quorumlock-harness -p quorumlock-cli
target=${CARGO_TARGET_DIR:-$repo/target}
case "$target" in /*) ;; *) target="$repo/$target" ;; esac
dir=$([ "$profile" = dev ] && echo debug || echo "$profile")
src="$target/$dir/libquorumlock_uniffi.so"
dst="$classes/$platform/libquorumlock_uniffi.so"
mkdir -p "$classes/$platform"
if [ ! -e "$dst" ] || [ "$src" -nt "$dst" ]; then
  strip --strip-unneeded -o "$dst.tmp" "$src"
  mv "$dst.tmp" "$dst"
fi
# Where the tests find the unstripped library (for uniffi-bindgen) and the tools.
cat > "$classes/../ql-native.properties" <<PROPS
ql.native.lib=$src
ql.bindgen=$target/$dir/uniffi-bindgen
ql.harness=$target/$dir/ql-harness
ql.cli=$target/$dir/quorumlock
PROPS
