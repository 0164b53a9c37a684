#!/usr/bin/env bash
# The documented install path, from a fresh process: `gem build` and `gem install --local`
# into a temporary GEM_HOME, then a new `ruby` with a clean environment (no LD_LIBRARY_PATH,
# no QUORUMLOCK_LIB) that finds libquorumlock through pkg-config and locks on QL_NODES.
# Usage (under ql-harness exec): install_check.sh <prefix filled by make install>
set -euo pipefail
prefix=$1
: "${QL_NODES:?run under ql-harness exec}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$(dirname "$0")/.."
gem build quorumlock.gemspec -o "$tmp/quorumlock.gem" >/dev/null 2>&1
GEM_HOME="$tmp/gems" gem install --local --no-document "$tmp/quorumlock.gem" >/dev/null
cd "$tmp"
env -i PATH="$PATH" HOME="$tmp" GEM_HOME="$tmp/gems" PKG_CONFIG_PATH="$prefix/lib/pkgconfig" QL_NODES="$QL_NODES" \
  ruby -e '
    require "quorumlock"
    abort "loaded #{Quorumlock.library_path}" unless Quorumlock.library_path.start_with?(ARGV[0])
    abort "not the installed gem" unless $LOADED_FEATURES.any? { |f| f.include?("/gems/quorumlock-") }
    c = Quorumlock::Client.new(ENV["QL_NODES"].split(","), quarantine: :off, require_quorum: true, node_timeout: 1000)
    lock = c.lock("rb:install-check", 5000) or abort "not acquired"
    abort "a second holder" if c.lock("rb:install-check", 5000, try: true)
    abort "not released" unless lock.unlock
    puts "ruby install check: gem #{Quorumlock::VERSION} locked with #{Quorumlock.library_path}"
  ' "$prefix"
