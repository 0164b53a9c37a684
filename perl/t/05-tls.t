use strict;
use warnings;
use lib 't/lib';
use Test::More;
use JSON::PP ();
use QLTest;
use Quorumlock;

# TLS end to end (docs/SECURITY.md): a mutual-TLS node of its own from ql-harness, the CA and
# client certificate given as node URL parameters, typed errors for a wrong CA and #insecure.

my $h   = QLTest::harness();
my $out = `$h start --nodes 1 --persist none --mtls --parent $$`;
die "ql-harness start --mtls failed\n" if $? != 0;
my $info  = JSON::PP::decode_json( ( split /\n/, $out )[-1] );
my $owner = $$;
END { system( $h, 'stop', $info->{run_dir} ) if $info && $$ == $owner }

my $tls  = $info->{tls};
my $addr = $info->{nodes}[0]{addr};
my ($base) = split /\?/, $info->{nodes}[0]{url};
sub enc { my $s = shift; $s =~ s/([^A-Za-z0-9\/._~-])/sprintf('%%%02X', ord $1)/ge; $s }
sub node_url { "$base?tls_ca=" . enc(shift) . '&tls_cert=' . enc( $tls->{cert} ) . '&tls_key=' . enc( $tls->{key} ) }
sub tls_client {
    Quorumlock->new( servers => [shift], quarantine => 'off', require_quorum => 1, connect_timeout => 10, node_timeout => 1 );
}

subtest 'locks over mutual TLS' => sub {
    my $rd   = tls_client( node_url( $tls->{ca} ) );
    my $lock = $rd->lock( unique('tls'), 5 );
    ok( $lock, 'locked over TLS' ) or diag( $rd->last_error );
    ok( $rd->release($lock), 'released' );
};

subtest 'a wrong CA is a connection error naming the node' => sub {
    my $e = eval { tls_client( node_url( $tls->{other_ca} ) ); undef } || $@;
    isa_ok( $e, 'Quorumlock::Error::Connection' );
    is( $e->code, 'QL_CONNECTION', 'code' );
    is( $e->nodes->[0]{kind}, 'Tls', 'node kind' );
    like( $e->message, qr/\Q$addr\E.*UnknownIssuer/, 'the message names the node and the cause' );
};

subtest '#insecure is refused' => sub {
    my $e = eval { tls_client("$base#insecure"); undef } || $@;
    isa_ok( $e, 'Quorumlock::Error::Invalid' );
    like( $e->message, qr/#insecure/, 'message' );
};

done_testing;
