package QLTest;

# Shared set-up: real redis-server nodes from ql-harness. Under `ql-harness exec` (make
# test-perl) QL_NODES names them; otherwise this starts 5 nodes itself and stops them at
# exit. The nodes have no durable writes, so clients turn the restart quarantine off.

use strict;
use warnings;
use Exporter 'import';
use File::Basename qw( dirname );
use File::Spec;
use IO::Socket::INET;
use Test::More;

our @EXPORT = qw( @NODES client unique key redis on_all on_every_node on_quorum eventually is_invalid );

my $REPO = File::Spec->rel2abs( File::Spec->catdir( dirname(__FILE__), '..', '..', '..' ) );
my ( $run_dir, $owner );
our @NODES;

sub harness { $ENV{QL_HARNESS} || "$REPO/target/debug/ql-harness" }

if ( $ENV{QL_NODES} ) {
    @NODES = split /,/, $ENV{QL_NODES};
}
else {
    my $h = harness();
    my $out = `$h start --nodes 5 --persist none --parent $$`;
    die "ql-harness start failed (build it with `make harness`)\n" if $? != 0;
    my ($last) = ( split /\n/, $out )[-1];
    ($run_dir) = $last =~ /"run_dir":"([^"]+)"/;
    @NODES = $last =~ /"url":"(redis:[^"]+)"/g;
    $owner = $$;
}

END { system( harness(), 'stop', $run_dir ) if $run_dir && $owner && $$ == $owner }

# A client on the test nodes; node requests get 1 s so a loaded machine does not turn an
# expected outcome into a timeout.
sub client {
    require Quorumlock;
    return Quorumlock->new( servers => [@NODES], quarantine => 'off', connect_timeout => 5, node_timeout => 1, @_ );
}

my $seq = 0;
sub unique { my $tag = shift // 't'; return "pl:$tag:$$:" . ( ++$seq ) . ':' . int( rand( 2**30 ) ) }

sub key { "quorumlock:{$_[0]}" }

# Sends one RESP command to node $i and returns the reply (arrays as array references).
sub redis {
    my ( $i, @args ) = @_;
    my ($addr) = $NODES[$i] =~ m{\Aredis://(.*)\z};
    my $s = IO::Socket::INET->new( PeerAddr => $addr, Timeout => 5 ) or die "node $i: $!";
    print $s "*" . scalar(@args) . "\r\n" . join( '', map { '$' . length($_) . "\r\n$_\r\n" } @args );
    my $r = _reply($s);
    close $s;
    return $r;
}

sub _reply {
    my ($s) = @_;
    my $line = <$s>;
    $line =~ s/\r\n\z//;
    my ( $t, $rest ) = ( substr( $line, 0, 1 ), substr( $line, 1 ) );
    return $rest if $t eq '+';
    die "redis error: $rest" if $t eq '-';
    return $rest + 0 if $t eq ':';
    if ( $t eq '$' ) {
        return undef if $rest < 0;
        read( $s, my $buf, $rest + 2 );
        return substr( $buf, 0, $rest );
    }
    return [ map { _reply($s) } 1 .. $rest ] if $t eq '*';
    die "bad reply $line";
}

sub on_all { my @args = @_; return [ map { redis( $_, @args ) } 0 .. $#NODES ] }

# Checks that every node comes to answer $expected to the command @args: a call returns at the
# quorum-th reply, so the other nodes' writes may still be in flight.
sub on_every_node {
    my ( $expected, $what, @args ) = @_;
    my $ok = eventually( 5, sub { !grep { !defined $_ || $_ ne $expected } @{ on_all(@args) } } );
    Test::More::ok( $ok, $what ) or Test::More::diag( "replies: @{ on_all(@args) }" );
}

# Checks that at least a quorum of $replies satisfy $cond (on $_): a node slower than the node
# timeout (a loaded machine) can miss a write that the engine decided at the quorum.
sub on_quorum {
    my ( $replies, $cond, $what ) = @_;
    my $n = grep { $cond->() } @$replies;
    Test::More::cmp_ok( $n, '>=', int( @$replies / 2 ) + 1, $what ) or Test::More::diag("replies: @$replies");
}

sub eventually {
    my ( $secs, $cond ) = @_;
    require Time::HiRes;
    my $end = Time::HiRes::time() + $secs;
    until ( $cond->() ) {
        return 0 if Time::HiRes::time() > $end;
        Time::HiRes::sleep(0.01);
    }
    return 1;
}

# Runs $code and checks that it died with a Quorumlock::Error::Invalid (QL_INVALID, 7).
sub is_invalid {
    my ( $code, $what ) = @_;
    local $@;
    my $ok = eval { $code->(); 1 };
    my $e = $@;
    my $good = !$ok && ref $e && $e->isa('Quorumlock::Error::Invalid') && $e->code eq 'QL_INVALID' && $e->code_number == 7;
    Test::More::ok( $good, "$what: QL_INVALID" ) or Test::More::diag( $ok ? 'no error' : "got: $e" );
    return $e;
}

1;
