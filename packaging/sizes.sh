#!/usr/bin/env bash
# Prints each release artifact in DIST (default dist/) with its size, and for the archives the
# unpacked size of the native code in it.
set -euo pipefail
dist=${1:-dist}
shopt -s nullglob
files=("$dist"/*.whl "$dist"/*.tar.gz "$dist"/*.tgz)
[ ${#files[@]} -gt 0 ] || { echo "no artifacts in $dist/"; exit 1; }
printf '\n%-52s %12s\n' "artifact ($dist/)" "bytes"
for f in "${files[@]}"; do
  printf '%-52s %12s  (%s)\n' "$(basename "$f")" "$(stat -c %s "$f")" "$(du -h "$f" | cut -f1)"
done
