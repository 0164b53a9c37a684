#!/usr/bin/env bash
# Builds the native library of the JVM package and puts a stripped copy where JNA looks for
# it inside the jar: <classes>/linux-x86-64/libquorumlock_uniffi.so.
#   build-native.sh <cargo profile: dev|release> <classes dir> [<skip tests: true|false>]
# Unless tests are skipped, also what they use (dev profile): uniffi-bindgen (the staleness
# test), and ql-harness (nodes) and the quorumlock CLI (cross-language contention) when
# missing. cargo is incremental; CARGO_TARGET_DIR is honoured; QL_CARGO_JOBS sets -j.
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
cargo=(cargo build --locked -q ${QL_CARGO_JOBS:+-j "$QL_CARGO_JOBS"} --manifest-path "$repo/Cargo.toml")
target=${CARGO_TARGET_DIR:-$repo/target}
case "$target" in /*) ;; *) target="$repo/$target" ;; esac
# The crate alone: the smallest set of dependencies to compile.
if [ "$skip_tests" = true ]; then
  "${cargo[@]}" --profile "$profile" -p quorumlock-uniffi --lib
else
  "${cargo[@]}" --profile "$profile" -p quorumlock-uniffi
  [ "$profile" = dev ] || "${cargo[@]}" --profile dev -p quorumlock-uniffi --bin uniffi-bindgen
  # ql-harness and the CLI: `make test-jvm` has built them already (make harness, test-rust);
  # a standalone `mvn verify` builds them once.
  tools=()
  [ -x "$target/debug/ql-harness" ] || tools+=(-p quorumlock-harness)
  [ -x "$target/debug/quorumlock" ] || tools+=(-p quorumlock-cli)
  [ ${#tools[@]} -eq 0 ] || "${cargo[@]}" --profile dev "${tools[@]}"
fi
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
