use strict;
use warnings;
use lib 't/lib';
use Test::More;
use Time::HiRes qw( sleep time );
use QLTest;
use Quorumlock;

my $rd = client();
is( $rd->node_count, 5, 'five nodes' );

subtest 'lock, busy, release (Redis::DistLock shape)' => sub {
    my $name = unique();
    my $lock = $rd->lock( $name, 5 );
    isa_ok( $lock, 'Quorumlock::Lock' );
    is( ref $lock, 'Quorumlock::Lock', 'a blessed hash' );
    is( $lock->{resource}, $name, 'resource' );
    like( $lock->{value}, qr/\A[0-9a-f]{40}\z/, 'value' );
    ok( $lock->{validity} > 4 && $lock->{validity} <= 5, "validity in seconds ($lock->{validity})" );
    # A lock returns at the quorum-th reply; the other nodes' writes may still be in flight.
    ok( eventually( 5, sub { "@{ on_all( 'GET', key($name) ) }" eq "@{[ ( $lock->{value} ) x 5 ]}" } ),
        'the key holds the value on every node' );
    ok( eventually( 5, sub { !grep { abs( $_ - 5000 ) > 500 } @{ on_all( 'PTTL', key($name) ) } } ),
        'TTL given in seconds, set in ms' );

    is( $rd->lock( $name, 5 ), undef, 'a second lock is refused' );
    my $e = $rd->last_error;
    isa_ok( $e, 'Quorumlock::Error::Busy' );
    is( $e->code, 'QL_BUSY', 'code' );
    is( $e->code_number, 1, 'code number' );
    is( $e->attempts, 3, 'retry_count 3 tries' );
    is( scalar @{ $e->nodes }, 5, 'a report per node' );
    ok( !( grep { $_->{kind} !~ /\A(HeldByOther|Pending)\z/ } @{ $e->nodes } ), 'nodes say HeldByOther' );
    like( $e->nodes->[0]{address}, qr/\A127\.0\.0\.1:\d+/, 'node address' );

    is( $rd->release($lock), 1, 'release: a quorum still held it' );
    is( $rd->release($lock), 0, 'a second release sends nothing' );
    is_deeply( on_all( 'EXISTS', key($name) ), [ (0) x 5 ], 'keys gone' );
    ok( my $again = $rd->lock( $name, 5 ), 'lock again after release' );
    is( $rd->release( $name, $again->{value} ), 1, 'release($resource, $value)' );
    ok( $again->is_released, 'released' );
    ok( !$again->is_lost, 'a released lock is not lost' );
};

subtest 'acquire dies with typed errors' => sub {
    my $name = unique();
    my $held = $rd->acquire( $name, 5 );
    my $e = do { local $@; eval { $rd->acquire( $name, 5, try => 1 ) }; $@ };
    isa_ok( $e, 'Quorumlock::Error::Busy' );
    is( $e->attempts, 1, 'try makes one attempt' );
    my $t0 = time;
    eval { $rd->acquire( $name, 5, wait => 0.3, retry_delay => 0.02 ) };
    ok( time - $t0 >= 0.25, 'wait retries until its budget is spent' );
    isa_ok( $@, 'Quorumlock::Error::Busy' );
    $held->release;
};

subtest 'extend lengthens and never re-creates' => sub {
    my $name = unique();
    my $lock = $rd->lock( $name, 1 );
    ok( $rd->extend( $lock, 20 ), 'extend' );
    ok( $lock->{validity} > 15, "validity updated ($lock->{validity})" );
    on_quorum( on_all( 'PTTL', key($name) ), sub { $_ >= 15000 }, 'keys lengthened' );
    ok( $rd->lock( $name, 30, $lock->{value}, 1 ), 'Redis::DistLock form: lock($name, $ttl, $value, 1)' );

    on_all( 'DEL', key($name) );
    is( $lock->extend(5), undef, 'keys gone: extend fails' );
    isa_ok( $lock->last_error, 'Quorumlock::Error::Lost' );
    is_deeply( on_all( 'EXISTS', key($name) ), [ (0) x 5 ], 'and writes nothing' );
    ok( $lock->is_lost, 'is_lost' );
    is( $lock->lost_reason, 'expired', 'lost_reason' );
    is( $rd->lock( $name, 5, $lock->{value}, 1 ), undef, 'DistLock extend does not re-create either' );

    my $short = $rd->lock( unique(), 0.15 );
    sleep 0.3;
    is( $short->extend(5), undef, 'an expired lock is not revived' );
    is_deeply( on_all( 'EXISTS', key( $short->{resource} ) ), [ (0) x 5 ], 'no key written' );
    is( $short->release, 0, 'releasing an expired lock is not an error' );
    $lock->release;
    my $e = do { local $@; eval { $lock->extend(5) }; $@ };
    isa_ok( $e, 'Quorumlock::Error::Invalid', 'extend after release' );
};

subtest 'fencing tokens increase' => sub {
    my $name = unique();
    my $a = $rd->acquire( $name, 5, fenced => 1 );
    ok( $a->token, 'token ' . $a->token );
    is( $a->{token}, $a->token, 'token in the hash' );
    $a->release;
    my $b = $rd->acquire( $name, 5, fenced => 1 );
    cmp_ok( $b->token, '>', $a->token, 'next token is greater' );
    $b->release;
    my $plain = $rd->lock( $name, 5 );
    ok( !exists $plain->{token}, 'no token unless fenced' );
    $plain->release;
};

subtest 'losses are seen by polling' => sub {
    my $name = unique();
    my $lock = $rd->acquire( $name, 0.6, auto_extend => 1 );
    ok( $lock->is_auto_extending, 'auto-extending' );
    sleep 0.8;
    ok( $lock->is_held, 'held past its first TTL' );
    on_all( 'SET', key($name), 'someone-else-value', 'PX', 5000 );
    ok( eventually( 5, sub { $lock->is_lost } ), 'is_lost once the keys were taken' );
    is( $lock->lost_reason, 'taken', 'reason taken' );
    my $e = $lock->lost_error;
    isa_ok( $e, 'Quorumlock::Error::Lost' );
    like( $e->message, qr/another owner/, 'its message' );
    is( $lock->release, 0, 'release of a lost lock' );
    is_deeply( on_all( 'GET', key($name) ), [ ('someone-else-value') x 5 ], 'another owner\'s key is untouched' );

    my $plain = $rd->lock( unique(), 0.2 );
    ok( eventually( 5, sub { $plain->is_lost } ), 'an unextended lock is lost when its TTL runs out' );
    is( $plain->lost_reason, 'expired', 'reason expired' );
};

subtest 'object lifetime' => sub {
    my $name = unique();
    $rd->lock( $name, 1.5 );    # not kept: stays held until its TTL, as with Redis::DistLock
    is( $rd->lock( $name, 1.5 ), undef, 'a dropped lock stays held' );
    ok( eventually( 3, sub { !grep { $_ } @{ on_all( 'EXISTS', key($name) ) } } ), 'until its TTL' );

    my $auto = unique();
    { my $l = $rd->acquire( $auto, 5, auto_extend => 1 ); }
    ok( eventually( 3, sub { !grep { $_ } @{ on_all( 'EXISTS', key($auto) ) } } ),
        'a dropped auto-extended lock is released' );

    my $released = unique();
    {
        my $mgr = client( auto_release => 1 );
        $mgr->lock( $released, 5 ) or die;
    }
    is_deeply( on_all( 'EXISTS', key($released) ), [ (0) x 5 ], 'auto_release on DESTROY' );

    my $c = client();
    my $l = $c->lock( unique(), 5 );
    $c->close;
    my $e = do { local $@; eval { $c->acquire( unique(), 5 ) }; $@ };
    isa_ok( $e, 'Quorumlock::Error::Invalid', 'a closed client' );
    is( $c->node_count, 0, 'no nodes once closed' );
    ok( $l->extend(5), 'its locks live on: extend' );
    is( $l->release, 1, 'and release' );
};

subtest 'fork: the parent\'s handles are refused in the child' => sub {
    my $lock = $rd->lock( unique(), 5 );
    pipe( my $r, my $w ) or die $!;
    my $pid = fork // die $!;
    if ( !$pid ) {
        close $r;
        my @out;
        for my $f ( sub { $rd->acquire( unique(), 5 ) }, sub { $lock->extend(5) or die $lock->last_error } ) {
            push @out, eval { $f->(); 'ok' } || $@->code;
        }
        my $child = client();
        my $l = $child->lock( unique(), 5 );
        push @out, $l ? $l->release : 'busy';
        print $w join( ',', @out );
        close $w;
        require POSIX;
        POSIX::_exit(0);
    }
    close $w;
    waitpid $pid, 0;
    is( scalar <$r>, 'QL_INVALID,QL_INVALID,1', 'child: parent handles refused, its own client works' );
    ok( $lock->is_held, 'the parent\'s lock is untouched' );
    $lock->release;
};

like( $rd->metrics_prometheus, qr/^quorumlock_acquire_total\{outcome="ok"\} \d+/m, 'metrics' );

done_testing;
