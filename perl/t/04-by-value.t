use strict;
use warnings;
use lib 't/lib';
use Test::More;
use File::Spec;
use IPC::Open2 qw( open2 );
use Time::HiRes qw( sleep );
use QLTest;
use Quorumlock;
use Quorumlock::DistLock;

# Key formats, the Redis::DistLock drop-in's bare keys, release and extend by value (locks of
# other processes or of Redis::DistLock itself), the engine's TTL and polled loss reasons.

sub distlock { Quorumlock::DistLock->new( servers => [@NODES], connect_timeout => 5, node_timeout => 1, @_ ) }

subtest 'key formats' => sub {
    my $name = unique();
    my $l = client( key_format => 'bare', key_prefix => '' )->lock( $name, 5 );
    on_every_node( $l->value, 'bare, empty prefix: the name itself', 'GET', $name );
    $l->release;
    $l = client( key_format => 'bare' )->lock( $name, 5 );
    on_every_node( $l->value, 'bare with the default prefix', 'GET', "quorumlock:$name" );
    $l->release;
    $l = client( key_format => 'braced' )->lock( $name, 5 );
    on_every_node( $l->value, 'braced (the default)', 'GET', key($name) );
    $l->release;
    is_invalid( sub { client( key_format => 'curly' ) }, 'unknown key_format' );
    is_invalid( sub { client( key_format => undef ) }, 'undefined key_format' );
};

subtest 'Quorumlock::DistLock: bare keys shared with Redis::DistLock' => sub {
    my $rd   = distlock();
    my $name = unique();
    isa_ok( $rd, 'Quorumlock' );
    my $l = $rd->lock( $name, 5 ) or die $rd->last_error;
    on_every_node( $l->{value}, 'key = the resource name', 'GET', $name );
    is_deeply( on_all( 'EXISTS', key($name) ), [ (0) x 5 ], 'no braced key' );
    is( $rd->release($l), 1, 'released' );
    # A Redis::DistLock holder: its SET NX PX with a 32-character base64 value.
    my $value = 'q2N0ZWlu/Zm9vYmFyYmF6cXV4+w0123';
    on_all( 'SET', $name, $value, 'NX', 'PX', 3000 );
    is( $rd->lock( $name, 2 ), undef, 'the drop-in is kept out' );
    isa_ok( $rd->last_error, 'Quorumlock::Error::Busy' );
    my $ext = $rd->lock( $name, 20, $value, 1 );
    is( ref $ext, 'HASH', 'extended by value: a plain lock hash' );
    is( $ext->{value}, $value, 'same value' );
    cmp_ok( $ext->{validity}, '>', 15, 'validity in seconds' );
    on_quorum( on_all( 'PTTL', $name ), sub { $_ > 15_000 }, 'PTTL lengthened' );
    is( $rd->release( { resource => $name, value => $value } ), 1, 'released by value (a Redis::DistLock hash)' );
    on_quorum( on_all( 'EXISTS', $name ), sub { $_ == 0 }, 'keys gone' );
    is( $rd->lock( $name, 5, $value, 1 ), undef, 'never re-created by an extend' );
    isa_ok( $rd->last_error, 'Quorumlock::Error::Lost' );
    on_quorum( on_all( 'EXISTS', $name ), sub { $_ == 0 }, 'still gone' );
    my $braced = distlock( key_format => 'braced', key_prefix => 'quorumlock:' );
    $l = $braced->lock( $name, 2 );
    ok( eventually( 5, sub { "@{ on_all( 'EXISTS', key($name) ) }" eq '1 1 1 1 1' } ), 'settings override the defaults' );
    $braced->release($l);
};

subtest 'a lock of another process, released and extended by value' => sub {
    my $name   = unique();
    my $script = <<'PERL';
use strict; use warnings;
use Quorumlock::DistLock;
$| = 1;
my $rd = Quorumlock::DistLock->new( servers => [ split /,/, $ENV{QL_NODES} ], connect_timeout => 5, node_timeout => 1 );
my $l = $rd->lock( $ARGV[0], 10 ) or die "not acquired: " . $rd->last_error . "\n";
print "$l->{value}\n";
my $go = <STDIN>;
my $ext = $l->extend(5);
print( ( defined $ext ? 'extended' : 'not-extended' ), ' ', ( $l->lost_reason // 'none' ), "\n" );
PERL
    local $ENV{QL_NODES} = join ',', @NODES;
    my $pid = open2( my $out, my $in, $^X, '-I' . File::Spec->rel2abs('lib'), '-e', $script, $name );
    chomp( my $value = <$out> );
    like( $value, qr/\A[0-9a-f]{40}\z/, 'the other process holds it' );
    my $rd = distlock();
    is( $rd->lock( $name, 2 ), undef, 'busy here' );
    cmp_ok( $rd->extend_value( $name, $value, 30 ), '>', 25, 'extend_value' );
    on_quorum( on_all( 'PTTL', $name ), sub { $_ > 25_000 }, 'PTTL lengthened' );
    is( $rd->release( $name, $value ), 1, 'release($resource, $value) of the other process\'s lock' );
    on_quorum( on_all( 'EXISTS', $name ), sub { $_ == 0 }, 'keys gone' );
    my $e = do { local $@; eval { $rd->extend_value( $name, $value, 5 ) }; $@ };
    isa_ok( $e, 'Quorumlock::Error::Lost', 'extend_value of a gone lock' );
    on_quorum( on_all( 'EXISTS', $name ), sub { $_ == 0 }, 'not re-created' );
    print $in "go\n";
    close $in;
    chomp( my $seen = <$out> // '' );
    is( $seen, 'not-extended expired', 'the holder finds its keys gone at its next extend' );
    waitpid $pid, 0;
    is( $?, 0, 'the other process exited cleanly' );
};

subtest 'extend by value never re-creates an expired lock' => sub {
    my $rd    = client();
    my $short = $rd->lock( unique(), 0.15 );
    ok( eventually( 5, sub { !grep { $_ } @{ on_all( 'EXISTS', key( $short->{resource} ) ) } } ), 'keys expired on every node' );
    my $e = do { local $@; eval { $rd->extend_value( $short->{resource}, $short->{value}, 5 ) }; $@ };
    isa_ok( $e, 'Quorumlock::Error::Lost' );
    is( $e->code, 'QL_LOST', 'code' );
    is_deeply( on_all( 'EXISTS', key( $short->{resource} ) ), [ (0) x 5 ], 'not re-created' );
    my $name = unique();
    my $l    = $rd->lock( $name, 5 );
    $e = do { local $@; eval { $rd->extend_value( $name, 'e' x 40, 60 ) }; $@ };
    isa_ok( $e, 'Quorumlock::Error::Lost', 'another value' );
    cmp_ok( $_, '<=', 5000, 'its keys untouched' ) for @{ on_all( 'PTTL', key($name) ) };
    is( $rd->release_value( $name, 'e' x 40 ), 0, 'release_value of another value' );
    on_every_node( $l->value, 'keys kept', 'GET', key($name) );
    $l->release;
};

subtest 'TTL and loss reason from the engine' => sub {
    my $rd = client();
    my $l  = $rd->lock( unique(), 7 );
    is( $l->ttl_ms, 7000, 'ttl_ms' );
    is( $l->ttl,    7,    'ttl (seconds)' );
    ok( $l->extend, 'extend with its own TTL' );
    cmp_ok( $l->remaining, '>', 6, 'remaining' );
    is( $l->lost_reason, undef, 'not lost while held' );
    $l->release;
    is( $l->lost_reason, undef, 'nor after a release' );

    my $short = $rd->lock( unique(), 0.15 );
    ok( eventually( 5, sub { $short->is_lost } ), 'lost once its TTL ran out' );
    is( $short->lost_reason, 'expired', 'expired' );
    is( $short->lost_error->lost_reason, 'expired', 'lost_error' );

    my $name  = unique();
    my $taken = $rd->lock( $name, 5 );
    on_all( 'SET', key($name), 'someone-else-value', 'PX', 5000 );
    is( $taken->extend(5), undef, 'the extend finds another owner' );
    is( $taken->lost_reason, 'taken', 'taken' );
    isa_ok( $taken->lost_error, 'Quorumlock::Error::Lost' );
    is( $taken->release, 0, 'release of a taken lock' );
};

done_testing;
