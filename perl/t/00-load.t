use strict;
use warnings;
use Test::More;

use_ok('Quorumlock') or BAIL_OUT('cannot load Quorumlock');
like( Quorumlock->library_version, qr/\A\d+\.\d+\.\d+\z/, 'library version' );
ok( -e Quorumlock->library_path, 'library path ' . Quorumlock->library_path );
like( Quorumlock->fence_check_script, qr/redis\.call/, 'fence check script' );

# Every code, name and class matches the C ABI.
for my $n ( sort { $a <=> $b } keys %Quorumlock::Error::CODES ) {
    is( Quorumlock::FFI::quorumlock_result_name($n), $Quorumlock::Error::CODES{$n}, "code $n is $Quorumlock::Error::CODES{$n}" );
    next unless $n;
    my $e = Quorumlock::Error->new( code_number => $n, message => 'x' );
    is( $e->code, $Quorumlock::Error::CODES{$n}, "error code $n" );
    isa_ok( $e, 'Quorumlock::Error' );
    isa_ok( $e, "Quorumlock::Error::$Quorumlock::Error::CLASSES{$n}" );
}
is( Quorumlock::FFI::quorumlock_result_name(13), 'QL_UNKNOWN', 'unknown code' );
my %seen;
ok( !( grep { $seen{$_}++ } values %Quorumlock::Error::CLASSES ), 'one class per code' );

done_testing;
