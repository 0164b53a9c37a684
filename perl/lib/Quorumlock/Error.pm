package Quorumlock::Error;

# Errors of quorumlock: objects thrown with die. `code` is the C name ("QL_BUSY"),
# `code_number` its number; `nodes` the per-node report of the call (an array reference of
# hash references: index, address, kind, kind_code, latency_us). One subclass per code, so
# `$@->isa('Quorumlock::Error::Busy')` works too.

use strict;
use warnings;
use Quorumlock::FFI ();
use overload '""' => sub { $_[0]->message }, 'bool' => sub { 1 }, fallback => 1;

our $VERSION = '0.2.0';

our %CODES = (
    0  => 'QL_OK',      1  => 'QL_BUSY',     2  => 'QL_QUORUM',     3  => 'QL_VALIDITY',
    4  => 'QL_CANCELLED', 5 => 'QL_LOST',    6  => 'QL_EXT_LIMIT',  7  => 'QL_INVALID',
    8  => 'QL_CONNECTION', 9 => 'QL_AUTH',   10 => 'QL_SCRIPT',     11 => 'QL_MISCONFIGURED',
    12 => 'QL_TIMEOUT', 99 => 'QL_INTERNAL',
);

our %CLASSES = (
    1  => 'Busy',     2  => 'Quorum',     3  => 'Validity',      4  => 'Cancelled',
    5  => 'Lost',     6  => 'ExtLimit',   7  => 'Invalid',       8  => 'Connection',
    9  => 'Auth',     10 => 'Script',     11 => 'Misconfigured', 12 => 'Timeout',
    99 => 'Internal',
);

our %LOST_REASONS = ( 1 => 'expired', 2 => 'taken', 3 => 'extension_limit' );

for my $name ( values %CLASSES ) {
    no strict 'refs';
    @{"Quorumlock::Error::${name}::ISA"} = ('Quorumlock::Error');
}

sub new {
    my ( $class, %args ) = @_;
    my $number = defined $args{code_number} ? $args{code_number} : 7;
    $class = "Quorumlock::Error::" . ( $CLASSES{$number} || 'Internal' ) if $class eq __PACKAGE__;
    my $self = bless {
        code_number   => $number,
        message       => $args{message},
        nodes         => $args{nodes} || [],
        attempts      => $args{attempts} || 0,
        attempt_kinds => $args{attempt_kinds} || [],
        lost_reason   => $args{lost_reason},
        op            => $args{op},
        resource      => $args{resource},
    }, $class;
    $self->{message} = $self->code unless defined $self->{message} && length $self->{message};
    return $self;
}

sub throw { my $class = shift; die $class->new(@_) }

sub code          { $CODES{ $_[0]{code_number} } || 'QL_UNKNOWN' }
sub code_number   { $_[0]{code_number} }
sub message       { $_[0]{message} }
sub nodes         { $_[0]{nodes} }
sub attempts      { $_[0]{attempts} }
sub attempt_kinds { $_[0]{attempt_kinds} }
sub lost_reason   { $_[0]{lost_reason} }
sub op            { $_[0]{op} }
sub resource      { $_[0]{resource} }

# An error raised by the binding before anything reaches C (undef, a reference, a value C
# cannot represent).
sub invalid {
    my ( $class, $msg, %args ) = @_;
    return __PACKAGE__->new( code_number => 7, message => "QL_INVALID: $msg", %args );
}

# Converts (and frees) a C error; $code is the call's result, used when $err is undef.
sub from_c {
    my ( $class, $code, $err, %args ) = @_;
    return __PACKAGE__->new( code_number => $code, message => ( $CODES{$code} || 'QL_UNKNOWN' ) . " in " . ( $args{op} || 'call' ), %args )
        unless $err;
    my $self = eval { $class->read_c( $err, %args ) };
    my $failed = $@;
    Quorumlock::FFI::quorumlock_error_free($err);
    die $failed if $failed;
    return $self;
}

sub read_c {
    my ( $class, $err, %args ) = @_;
    my $code = Quorumlock::FFI::quorumlock_error_code($err);
    my $msg  = Quorumlock::FFI::read_string( sub { Quorumlock::FFI::quorumlock_error_message( $err, @_ ) } );
    my $count = Quorumlock::FFI::quorumlock_error_node_count($err);
    my @nodes;
    for my $i ( 0 .. $count - 1 ) {
        my ( $kind, $lat ) = ( 23, Quorumlock::FFI::NO_LATENCY );
        Quorumlock::FFI::quorumlock_error_node_kind( $err, $i, \$kind );
        Quorumlock::FFI::quorumlock_error_node_latency_us( $err, $i, \$lat );
        my $addr = Quorumlock::FFI::read_string( sub { Quorumlock::FFI::quorumlock_error_node_address( $err, $i, @_ ) } );
        push @nodes, {
            index      => $i,
            address    => $addr,
            kind       => Quorumlock::FFI::quorumlock_node_kind_name($kind),
            kind_code  => $kind,
            latency_us => ( $lat == Quorumlock::FFI::NO_LATENCY ? undef : $lat ),
        };
    }
    my @attempts;
    for my $a ( 0 .. Quorumlock::FFI::quorumlock_error_attempt_count($err) - 1 ) {
        push @attempts, [
            map {
                my $k = 23;
                Quorumlock::FFI::quorumlock_error_attempt_node_kind( $err, $a, $_, \$k );
                Quorumlock::FFI::quorumlock_node_kind_name($k)
            } 0 .. $count - 1
        ];
    }
    return __PACKAGE__->new(
        code_number   => $code,
        message       => ( length $msg ? $msg : undef ),
        nodes         => \@nodes,
        attempts      => Quorumlock::FFI::quorumlock_error_attempts($err),
        attempt_kinds => \@attempts,
        lost_reason   => $LOST_REASONS{ Quorumlock::FFI::quorumlock_error_lost_reason($err) },
        %args,
    );
}

1;
