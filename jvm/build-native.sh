#!/usr/bin/env bash
# Builds the native library of the JVM package and puts a stripped copy where JNA looks for
# it inside the jar: <classes>/linux-x86-64/libquorumlock_uniffi.so.
#   build-native.sh <cargo profile: dev|release> <classes dir> [<skip tests: true|false>]
# Unless tests are skipped, also builds (dev profile) what they use: uniffi-bindgen (the
# staleness test), ql-harness (nodes) and the quorumlock CLI (cross-language contention).
# cargo is incremental; CARGO_TARGET_DIR is honoured; QL_CARGO_JOBS sets -j (default 1: the
# machine is shared).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
profile=${1:-dev}
classes=${2:?classes dir}
skip_tests=${3:-false}
case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) platform=linux-x86-64 ;;
  *) echo "build-native.sh: only linux-x86-64 is packaged so far" >&2; exit 1 ;;
esac
cargo=(cargo build --locked -q -j "${QL_CARGO_JOBS:-1}" --manifest-path "$repo/Cargo.toml")
# One invocation when possible: the same package set each time keeps cargo's feature
# resolution, and so its cache, stable.
tools=(-p quorumlock-uniffi -p quorumlock-harness -p quorumlock-cli)
if [ "$skip_tests" = true ]; then
  "${cargo[@]}" --profile "$profile" -p quorumlock-uniffi --lib
elif [ "$profile" = dev ]; then
  "${cargo[@]}" --profile dev "${tools[@]}"
else
  "${cargo[@]}" --profile "$profile" -p quorumlock-uniffi --lib
  "${cargo[@]}" --profile dev "${tools[@]}"
fi
target=${CARGO_TARGET_DIR:-$repo/target}
case "$target" in /*) ;; *) target="$repo/$target" ;; esac
dir=$([ "$profile" = dev ] && echo debug || echo "$profile")
src="$target/$dir/libquorumlock_uniffi.so"
dst="$classes/$platform/libquorumlock_uniffi.so"
mkdir -p "$classes/$platform"
# Copy again when the library changed or the profile did (a stamp outside the classes).
stamp="$classes/../ql-native.stamp"
now=$(stat -c '%n %Y %s' "$src")
if [ ! -e "$dst" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$now" ]; then
  strip --strip-unneeded -o "$dst.tmp" "$src"
  mv "$dst.tmp" "$dst"
  echo "$now" > "$stamp"
fi
# Where the tests find the unstripped library (for uniffi-bindgen) and the tools.
cat > "$classes/../ql-native.properties" <<PROPS
ql.native.lib=$src
ql.bindgen=$target/debug/uniffi-bindgen
ql.harness=$target/debug/ql-harness
ql.cli=$target/debug/quorumlock
PROPS
