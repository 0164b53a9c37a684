use strict;
use warnings;
use lib 't/lib';
use Test::More;
use Encode ();
use Time::HiRes qw( sleep );
use QLTest;
use Quorumlock;

# Bad input dies with Quorumlock::Error::Invalid (QL_INVALID, 7) and never crashes the
# process; unreachable nodes get the engine's codes with a per-node report.

my $rd = client();

subtest 'bad resource names' => sub {
    my $malformed = "pl:\xff\xfe";
    Encode::_utf8_on($malformed);    # a character string whose bytes are not UTF-8
    my %cases = (
        'undef' => undef, 'an array ref' => [], 'a hash ref' => {}, 'a code ref' => sub { },
        'empty' => '', 'a 2000-byte name' => 'n' x 2000, 'malformed UTF-8' => $malformed,
        'a surrogate' => "pl:\x{D800}", 'above U+10FFFF' => "pl:\x{110000}",
    );
    for my $what ( sort keys %cases ) {
        is_invalid( sub { $rd->lock( $cases{$what}, 1 ) }, "lock $what" );
        is_invalid( sub { $rd->acquire( $cases{$what}, 1, try => 1 ) }, "acquire $what" );
    }
    # Byte strings are taken as they are; character strings are sent as UTF-8.
    my $bytes = "pl:\xff\xfe:" . unique();
    my $l = $rd->lock( $bytes, 1 );
    ok( $l, 'any bytes are a name' );
    $l->release;
    my $chars = "pl:caf\x{e9}:\x{263a}:" . unique();
    $l = $rd->lock( $chars, 1 );
    ok( eventually( 5, sub { "@{ on_all( 'EXISTS', key( Encode::encode( 'UTF-8', $chars ) ) ) }" eq '1 1 1 1 1' } ),
        'characters as UTF-8' );
    $l->release;
};

subtest 'bad TTLs and options' => sub {
    my $name = unique();
    my %ttls = (
        'undef' => undef, 'zero' => 0, 'negative' => -1, 'a word' => 'ten', 'a ref' => [10],
        'infinite' => 9**9**9, 'NaN' => -sin(9**9**9), 'above max_ttl' => 3600, 'above 2^64 ms' => 2**70,
        'under 0.5 ms' => 0.0001,
    );
    for my $what ( sort keys %ttls ) {
        is_invalid( sub { $rd->lock( $name, $ttls{$what} ) }, "ttl $what" );
    }
    my %opts = (
        'unknown option' => [ bogus => 1 ], 'retry_count word' => [ retry_count => 'x' ],
        'retry_count negative' => [ retry_count => -2 ], 'retry_delay negative' => [ retry_delay => -1 ],
        'short value' => [ value => 'short' ], 'value not printable' => [ value => "\x01" x 20 ],
        'wait and try' => [ wait => 1, try => 1 ], 'wait word' => [ wait => 'soon' ],
        'fenced ref' => [ fenced => [] ], 'node_timeout ref' => [ node_timeout => {} ],
    );
    for my $what ( sort keys %opts ) {
        is_invalid( sub { $rd->acquire( $name, 1, @{ $opts{$what} } ) }, $what );
    }
    is_invalid( sub { $rd->lock( $name, 1, 'short' ) }, 'DistLock value too short' );
    is( $rd->lock( $name, 1, 'f' x 40, 1 ), undef, 'extend of a value nobody holds: by value, nothing there' );
    isa_ok( $rd->last_error, 'Quorumlock::Error::Lost', 'its error' );
    is( $rd->release( $name, 'f' x 40 ), 0, 'release of a value nobody holds: by value, nothing there' );
    is_invalid( sub { $rd->release( $name, 'short' ) }, 'release of a value the engine never gives' );
    is_invalid( sub { $rd->lock( $name, 1, 'short', 1 ) }, 'extend of a value the engine never gives' );
    is_invalid( sub { $rd->lock( $name, 0, 'f' x 40, 1 ) }, 'extend by value with a zero ttl' );
    is_invalid( sub { $rd->release( $name, undef ) }, 'release with an undefined value' );
    is_invalid( sub { $rd->release('name') }, 'release of a plain string' );
    is_invalid( sub { $rd->release_value( [], 'f' x 40 ) }, 'release_value without resources' );
    is_invalid( sub { $rd->extend_value( $name, 'f' x 40 ) }, 'extend_value without a ttl' );
    is_invalid( sub { $rd->release(undef) }, 'release undef' );
    is_invalid( sub { $rd->extend( {}, 1 ) }, 'extend a plain hash' );
    is_deeply( on_all( 'EXISTS', key($name) ), [ (0) x 5 ], 'nothing was sent' );
};

subtest 'bad client settings' => sub {
    my %cases = (
        'no servers' => [], 'servers not an array' => [ servers => 'x' ], 'empty servers' => [ servers => [] ],
        'undef server' => [ servers => [undef] ], 'not a URL' => [ servers => ['redis://'] ],
        'wrong scheme' => [ servers => ['http://127.0.0.1:1'] ],
        'unknown option' => [ servers => [@NODES], bogus => 1 ],
        'quarantine mode' => [ servers => [@NODES], quarantine => 'maybe' ],
        'eviction mode' => [ servers => [@NODES], eviction_check => 3 ],
        'drift 0.9' => [ servers => [@NODES], drift_factor => 0.9 ],
        'drift word' => [ servers => [@NODES], drift_factor => 'x' ],
        'negative timeout' => [ servers => [@NODES], connect_timeout => -1 ],
        'logger not code' => [ servers => [@NODES], logger => 'x' ],
        'bad default' => [ servers => [@NODES], node_timeout => 'x' ],
        'retry_count word' => [ servers => [@NODES], retry_count => 'x' ],
    );
    for my $what ( sort keys %cases ) {
        is_invalid( sub { Quorumlock->new( quarantine => 'off', @{ $cases{$what} } ) }, $what );
    }
};

subtest 'random inputs only die with Quorumlock errors' => sub {
    my $seed = $ENV{QL_SEED} // int rand 2**30;
    srand $seed;
    my $malformed = "\xff";
    Encode::_utf8_on($malformed);
    my @names = ( undef, '', unique(), $malformed, "\xff" . unique(), 0, -1, [], {}, "n" x 2000, "\x{D800}", unique() );
    my @ttls  = ( undef, 0, -1, 0.001, 0.5, 61, 2**70, 'x', [], 9**9**9 );
    my @opts  = ( [], [ retry_count => 1 ], [ retry_count => 'x' ], [ wait => 0.05 ], [ wait => -1 ], [ try => 1 ],
        [ fenced => 1 ], [ value => 'v' x 20 ], [ value => [] ], [ node_timeout => 0 ], [ auto_extend => 1 ], [ bogus => 1 ] );
    my %outcomes;
    # Every 25th call is a valid one, so that a run always locks: valid mixes are rare.
    for my $i ( 1 .. 300 ) {
        my ( $n, $t, $o ) = ( $names[ rand @names ], $ttls[ rand @ttls ], $opts[ rand @opts ] );
        ( $n, $t, $o ) = ( unique(), 0.5, [] ) unless $i % 25;
        my $l = eval { $rd->acquire( $n, $t, @$o ) };
        if ($l) { $outcomes{locked}++; $l->release; next }
        my $e = $@;
        if ( ref $e && $e->isa('Quorumlock::Error') ) { $outcomes{ $e->code }++ }
        else { $outcomes{other}++; diag("seed $seed: not a Quorumlock::Error: $e") }
    }
    ok( !$outcomes{other}, "every failure is a Quorumlock::Error (seed $seed)" );
    ok( $outcomes{QL_INVALID} && $outcomes{locked}, 'both outcomes seen' );
};

subtest 'the registry of dropped locks is swept' => sub {
    my @short = map { $rd->acquire( unique(), 0.3 )->{value} } 1 .. 70;    # objects dropped at once
    sleep 0.4;
    my @kept = map { $rd->acquire( unique(), 5 ) } 1 .. 200;
    ok( !( grep { $Quorumlock::HELD{$_} } @short ), 'the expired ones are swept out' );
    ok( !( grep { !$Quorumlock::HELD{ $_->{value} } } @kept ), 'the held ones stay' );
    $_->release for @kept;
};

subtest 'unreachable nodes' => sub {
    my @dead = map { "127.0.0.1:$_" } 1 .. 3;
    my $e = do { local $@; eval { Quorumlock->new( servers => \@dead, quarantine => 'off', connect_timeout => 0.2 ) }; $@ };
    isa_ok( $e, 'Quorumlock::Error::Connection', 'a quorum must connect (as Redis::DistLock)' );
    is( $e->code, 'QL_CONNECTION', 'code' );
    is( scalar @{ $e->nodes }, 3, 'per-node report' );

    my @logged;
    my $c = Quorumlock->new( servers => \@dead, quarantine => 'off', connect_timeout => 0.2, require_quorum => 0,
        logger => sub { push @logged, @_ } );
    is( $c->lock( unique(), 1 ), undef, 'lock returns undef' );
    isa_ok( $c->last_error, 'Quorumlock::Error::Quorum' );
    is( $c->last_error->code_number, 2, 'QL_QUORUM' );
    ok( !( grep { $_->{kind} !~ /\A(ConnectionRefused|NotConnected)\z/ } @{ $c->last_error->nodes } ), 'node kinds' );
    like( $logged[0] // '', qr/QL_QUORUM/, 'node failures go to the logger' );

    my $mixed = Quorumlock->new( servers => [ @NODES[ 0 .. 2 ], @dead[ 0 .. 1 ] ], quarantine => 'off', node_timeout => 1 );
    ok( my $l = $mixed->lock( unique(), 2 ), 'a majority of live nodes is enough' );
    $l->release;
};

subtest 'restart quarantine on by default' => sub {
    my $e = do { local $@; eval { Quorumlock->new( servers => [@NODES], connect_timeout => 5 ) }; $@ };
    isa_ok( $e, 'Quorumlock::Error::Misconfigured', 'new: no usable quorum' );
    my $c = Quorumlock->new( servers => [@NODES], node_timeout => 1, connect_timeout => 5, require_quorum => 0,
        logger => undef );
    is( $c->lock( unique(), 1 ), undef, 'fresh plain nodes are quarantined' );
    ok( !( grep { $_->{kind} ne 'Quarantined' } @{ $c->last_error->nodes } ), 'nodes Quarantined' );
    like( $c->last_error->message, qr/quarantine/, 'the message names it' );
};

done_testing;
