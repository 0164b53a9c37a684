#!/usr/bin/env bash
# The documented install path, from a fresh process: `perl Makefile.PL` (which finds
# libquorumlock through pkg-config and records its directory), `make`, `make install` into a
# temporary INSTALL_BASE, then a new perl with a clean environment (no LD_LIBRARY_PATH,
# PKG_CONFIG_PATH or QUORUMLOCK_LIB) that locks on QL_NODES.
# Usage (under ql-harness exec): install_check.sh <prefix filled by make install>
set -euo pipefail
prefix=$1
: "${QL_NODES:?run under ql-harness exec}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$(dirname "$0")/.." "$tmp/src"
cd "$tmp/src"
rm -f lib/Quorumlock/LibPath.pm Makefile
env -u QUORUMLOCK_LIB PKG_CONFIG_PATH="$prefix/lib/pkgconfig" perl Makefile.PL INSTALL_BASE="$tmp/perl5" >/dev/null
make >/dev/null
make install >/dev/null
cd "$tmp"
env -i PATH="$PATH" HOME="$tmp" PERL5LIB="$tmp/perl5/lib/perl5" QL_NODES="$QL_NODES" perl -e '
    use strict; use warnings;
    use Quorumlock;
    my $prefix = shift;
    die "loaded " . Quorumlock->library_path . "\n" unless index( Quorumlock->library_path, $prefix ) == 0;
    die "not the installed module\n" unless $INC{"Quorumlock.pm"} =~ m{/perl5/lib/perl5/};
    my $rd = Quorumlock->new( servers => [ split /,/, $ENV{QL_NODES} ], quarantine => "off", node_timeout => 1 );
    my $lock = $rd->lock( "pl:install-check", 5 ) or die "not acquired: " . $rd->last_error . "\n";
    die "a second holder\n" if $rd->lock( "pl:install-check", 5 );
    $rd->release($lock) == 1 or die "not released\n";
    print "perl install check: Quorumlock $Quorumlock::VERSION locked with ", Quorumlock->library_path, "\n";
' "$prefix"
