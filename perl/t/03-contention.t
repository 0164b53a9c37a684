use strict;
use warnings;
use lib 't/lib';
use Test::More;
use Fcntl qw( O_WRONLY O_CREAT O_EXCL );
use File::Temp qw( tempdir );
use POSIX ();
use Time::HiRes qw( sleep time );
use QLTest;
use Quorumlock;

# Processes contend for one name; each holder creates a marker file with O_EXCL on entry
# (EEXIST: another holder is inside) and removes it on exit. The same checker without the
# lock must see overlaps, so it is shown able to fail.

# Workers start their rounds together (each waits until every worker has connected), so the
# control run overlaps even when a loaded machine staggers the forks; $hold is the time spent
# inside (seconds).
sub run_workers {
    my ( $name, $workers, $rounds, $locked, $hold ) = @_;
    my $dir    = tempdir( CLEANUP => 1 );
    my $marker = "$dir/inside";
    my @pids;
    for my $w ( 1 .. $workers ) {
        my $pid = fork // die "fork: $!";
        if ( !$pid ) {
            my $ok = eval {
                my $rd = client( retry_count => 1000, retry_delay => 0.01 );
                open my $ready, '>', "$dir/ready$w" or die $!;
                close $ready;
                my $deadline = time + 30;
                sleep 0.005 while grep( { !-e "$dir/ready$_" } 1 .. $workers ) && time < $deadline;
                my $overlaps = 0;
                for ( 1 .. $rounds ) {
                    my $lock = $locked ? ( $rd->acquire( $name, 5, wait => 20 ) ) : undef;
                    my $mine = sysopen( my $fh, $marker, O_WRONLY | O_CREAT | O_EXCL );
                    $overlaps++ unless $mine;
                    $overlaps++ if $lock && !$lock->is_held;
                    sleep $hold;
                    if ($mine) { close $fh; unlink $marker }
                    $lock->release if $lock;
                }
                open my $out, '>', "$dir/w$w" or die $!;
                print $out "$rounds $overlaps";
                close $out;
                1;
            };
            unless ($ok) {
                open my $out, '>', "$dir/w$w";
                print $out "error $@";
            }
            POSIX::_exit( $ok ? 0 : 1 );
        }
        push @pids, $pid;
    }
    my $failed = 0;
    for (@pids) { waitpid $_, 0; $failed++ if $? != 0 }
    my ( $entries, $overlaps ) = ( 0, 0 );
    for my $w ( 1 .. $workers ) {
        open my $in, '<', "$dir/w$w" or die "w$w: $!";
        my $line = <$in>;
        diag("worker $w: $line") if $line =~ /^error/;
        my ( $e, $o ) = split ' ', $line;
        $entries += $e =~ /^\d+$/ ? $e : 0;
        $overlaps += $o // 0;
    }
    is( $failed, 0, 'every worker finished' );
    return ( $entries, $overlaps );
}

my ( $entries, $overlaps ) = run_workers( unique('contention'), 4, 8, 1, 0.003 );
is( $entries,  32, '4 processes x 8 rounds' );
is( $overlaps, 0,  'no two holders at once' );

( undef, $overlaps ) = run_workers( unique('control'), 4, 4, 0, 0.05 );
cmp_ok( $overlaps, '>', 0, 'without the lock the checker sees overlaps' );

done_testing;
