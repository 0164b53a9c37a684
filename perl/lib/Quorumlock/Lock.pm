package Quorumlock::Lock;

# A lock returned by Quorumlock->lock: a hash reference with Redis::DistLock's keys
# (validity, resource, value; token when fenced), blessed, with methods that poll the
# engine (remaining, is_lost, ...) and act on it (extend, release).

use strict;
use warnings;
use Scalar::Util qw( refaddr );

our $VERSION = '0.2.0';

# refaddr of a lock object => its record (the C handle and state). Records of locks without
# auto-extension are also kept in %Quorumlock::HELD until released or expired, so dropping
# the object does not release the lock (as with Redis::DistLock).
our %STATE;

sub _new {
    my ( $class, $rec ) = @_;
    my $h  = $rec->{handle}->ptr;
    my $ms = Quorumlock::FFI::quorumlock_lock_remaining_ms($h);
    my $self = bless {
        validity => $ms / 1000,
        resource => $rec->{resource},
        value    => $rec->{value},
    }, $class;
    $self->{token} = $rec->{tokens}[0] if @{ $rec->{tokens} };
    $STATE{ refaddr $self } = $rec;
    return $self;
}

sub DESTROY {
    my ($self) = @_;
    delete $STATE{ refaddr $self };
}

sub _rec {
    my ($self) = @_;
    my $rec = ref $self && $STATE{ refaddr $self };
    Quorumlock::Error->throw( code_number => 7, message => 'QL_INVALID: not a lock of this process', op => 'lock' )
        unless $rec;
    return $rec;
}

sub resource { $_[0]{resource} }
sub value    { $_[0]{value} }
sub validity { $_[0]{validity} }

# The TTL the lock was acquired with, in seconds (ttl_ms: milliseconds), as the engine has it.
sub ttl_ms { $_[0]->_rec->{ttl_ms} }
sub ttl    { $_[0]->ttl_ms / 1000 }

# The fencing token (first resource in sorted order) of a lock taken with fenced => 1.
sub token { $_[0]{token} }

# Validity left now, in seconds (milliseconds in remaining_ms); 0 once expired, lost or
# released. Act on the protected resource only while it is positive.
sub remaining_ms { Quorumlock::FFI::quorumlock_lock_remaining_ms( $_[0]->_rec->{handle}->ptr ) }
sub remaining    { $_[0]->remaining_ms / 1000 }
sub is_held      { $_[0]->remaining_ms > 0 ? 1 : 0 }
sub is_released  { $_[0]->_rec->{released} ? 1 : 0 }
sub is_auto_extending { $_[0]->_rec->{auto} ? 1 : 0 }

my %REASON  = ( 1 => 'expired', 2 => 'taken', 3 => 'extension_limit' );
my %MESSAGE = (
    expired         => "QL_LOST: the lock's validity ran out",
    taken           => "QL_LOST: another owner holds the lock's keys",
    extension_limit => "QL_LOST: the auto-extension stopped at its cap and the validity ran out",
);

# 'expired', 'taken' or 'extension_limit' once the lock was lost (the engine's reason, read
# without sending anything), else undef; undef after a release. Poll it: Perl gets no
# callback from the engine's threads.
sub lost_reason {
    my ($self) = @_;
    my $rec = $self->_rec;
    return undef if $rec->{released};
    return $REASON{ Quorumlock::FFI::quorumlock_lock_lost_reason( $rec->{handle}->ptr ) };
}

# True once the lock was lost (expired, taken over, an extension cap) without having been
# released.
sub is_lost { defined $_[0]->lost_reason ? 1 : 0 }

# The Quorumlock::Error::Lost of a lost lock (its lost_reason; no node report), or undef.
sub lost_error {
    my ($self) = @_;
    my $rec = $self->_rec;
    return $rec->{lost_error} if $rec->{lost_error};
    my $why = $self->lost_reason;
    return undef unless defined $why;
    return $rec->{lost_error} = Quorumlock::Error->new(
        code_number => 5,
        message     => $MESSAGE{$why},
        lost_reason => $why,
        op          => 'lost',
        resource    => $rec->{resource},
    );
}

# Extends the lock to $ttl seconds (default: its TTL) from now on a quorum of nodes; never
# revives an expired lock. Returns the lock (validity updated), or undef when it could not
# be extended (last_error says why). Dies with Quorumlock::Error::Invalid for bad input or a
# released lock.
sub extend {
    my ( $self, $ttl ) = @_;
    my $rec = $self->_rec;
    my $ms  = defined $ttl ? Quorumlock::_ms( $ttl, 'ttl', 'extend' ) : $rec->{ttl_ms};
    my $err;
    my $code = Quorumlock::FFI::quorumlock_lock_extend( $rec->{handle}->ptr, $ms, \$err );
    if ( $code != 0 ) {
        my $e = Quorumlock::Error->from_c( $code, $err, op => 'extend', resource => $rec->{resource} );
        die $e if $e->isa('Quorumlock::Error::Invalid') || $e->isa('Quorumlock::Error::Internal');
        $rec->{last_error} = $e;
        return undef;
    }
    $self->{validity} = Quorumlock::FFI::quorumlock_lock_remaining_ms( $rec->{handle}->ptr ) / 1000;
    return $self;
}

# The error of the last extend that returned undef.
sub last_error { $_[0]->_rec->{last_error} }

# Releases the lock on every node (compare-and-delete). Returns 1 if a quorum of nodes still
# held it, 0 if it had expired or been taken over (not an error). Idempotent.
sub release { Quorumlock::_release_rec( $_[0]->_rec ) }

# Starts or stops the automatic extension (every ttl / 3).
sub set_auto_extend {
    my ( $self, $on ) = @_;
    my $rec = $self->_rec;
    my $err;
    my $code = Quorumlock::FFI::quorumlock_lock_set_auto_extend( $rec->{handle}->ptr, $on ? 1 : 0, \$err );
    die Quorumlock::Error->from_c( $code, $err, op => 'auto_extend', resource => $rec->{resource} ) if $code != 0;
    $rec->{auto} = $on ? 1 : 0;
    Quorumlock::_hold($rec);
    return $self;
}

1;
