package Quorumlock::DistLock;

# Redis::DistLock 0.07's defaults over Quorumlock: keys are the bare resource names (so
# Redis::DistLock and Quorumlock processes exclude each other during a migration), no restart
# quarantine, TTLs up to 2^53 - 1 ms. Everything else is Quorumlock's (same methods).

use strict;
use warnings;
use parent 'Quorumlock';

our $VERSION = '0.2.0';

# The largest TTL Redis::DistLock users can give that the engine takes (whole seconds
# below 2^53 - 1 ms).
sub MAX_TTL() { 9_007_199_254_740 }

# Takes Redis::DistLock's arguments (servers, retry_count, retry_delay, version_check,
# logger, auto_release) and any Quorumlock setting, which overrides the defaults above.
sub new {
    my $class = shift;
    my %args = @_ == 1 && ref $_[0] eq 'HASH' ? %{ $_[0] } : @_;
    return $class->SUPER::new( key_format => 'bare', key_prefix => '', quarantine => 'off', max_ttl => MAX_TTL, %args );
}

1;

__END__

=head1 NAME

Quorumlock::DistLock - Redis::DistLock's drop-in over libquorumlock

=head1 SYNOPSIS

  use Quorumlock::DistLock;
  my $rd = Quorumlock::DistLock->new( servers => [qw( 10.0.0.1:6379 10.0.0.2:6379 10.0.0.3:6379 )] );
  my $mutex = $rd->lock( "foo", 10 ) or die "failed to get a lock";
  # ... critical section ...
  $rd->release($mutex);

=head1 DESCRIPTION

A L<Quorumlock> with Redis::DistLock's defaults: keys are the bare resource names, as
Redis::DistLock's, so processes of both libraries exclude each other while a fleet migrates;
C<release($lock)>, C<release($resource, $value)> and C<lock($resource, $ttl, $value, 1)> act on
locks of any process by value. See README.md in the distribution.

=cut
