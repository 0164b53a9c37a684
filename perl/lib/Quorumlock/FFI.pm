package Quorumlock::FFI;

# The C ABI of libquorumlock (include/quorumlock.h) through FFI::Platypus. Internal: the
# public API is Quorumlock and Quorumlock::Lock. No lock logic here, only the C calls.

use strict;
use warnings;

use FFI::Platypus 1.00;
use FFI::Platypus::Buffer qw( scalar_to_buffer );
use File::Spec;

our $VERSION = '0.2.0';

our $LIBRARY_PATH;
our @TRIED;

# Where libquorumlock is looked for, in order:
#   1. QUORUMLOCK_LIB: the library file, or a directory holding it;
#   2. the library directory recorded by `perl Makefile.PL` (Quorumlock::LibPath);
#   3. the libdir that `pkg-config quorumlock` gives (PKG_CONFIG_PATH is honoured);
#   4. /usr/local/lib, ~/.local/lib, /usr/lib, /usr/lib/<arch>;
#   5. the system's own search (FFI::CheckLib: ldconfig, LD_LIBRARY_PATH).
sub candidates {
    my @list;
    if ( defined $ENV{QUORUMLOCK_LIB} && length $ENV{QUORUMLOCK_LIB} ) {
        my $p = $ENV{QUORUMLOCK_LIB};
        return ( -d $p ? File::Spec->catfile( $p, 'libquorumlock.so' ) : $p );
    }
    if ( eval { require Quorumlock::LibPath; 1 } && defined $Quorumlock::LibPath::LIBDIR ) {
        push @list, File::Spec->catfile( $Quorumlock::LibPath::LIBDIR, 'libquorumlock.so' );
    }
    if ( my $dir = pkg_config_libdir() ) {
        push @list, File::Spec->catfile( $dir, 'libquorumlock.so' );
    }
    my @dirs = ('/usr/local/lib');
    push @dirs, "$ENV{HOME}/.local/lib" if defined $ENV{HOME};
    push @dirs, qw( /usr/lib /usr/lib/x86_64-linux-gnu /usr/lib/aarch64-linux-gnu /usr/lib64 );
    push @list, map { File::Spec->catfile( $_, 'libquorumlock.so' ) } @dirs;
    my %seen;
    return grep { !$seen{$_}++ } @list;
}

sub pkg_config_libdir {
    my $out = `pkg-config --variable=libdir quorumlock 2>/dev/null`;
    return undef unless defined $out && $? == 0;
    chomp $out;
    return length $out ? $out : undef;
}

sub locate {
    for my $path ( candidates() ) {
        push @TRIED, $path;
        return $path if -e $path;
    }
    if ( !( defined $ENV{QUORUMLOCK_LIB} && length $ENV{QUORUMLOCK_LIB} ) ) {
        require FFI::CheckLib;
        my ($found) = FFI::CheckLib::find_lib( lib => 'quorumlock' );
        push @TRIED, 'the system library path';
        return $found if $found;
    }
    die "libquorumlock not found. Install it (`make install PREFIX=...` in the quorumlock repository) "
      . "and set QUORUMLOCK_LIB to the library file or its directory, put its lib/pkgconfig on "
      . "PKG_CONFIG_PATH, or re-run `perl Makefile.PL` with it there. Looked at: "
      . join( ', ', @TRIED ) . "\n";
}

$LIBRARY_PATH = locate();

my $ffi = FFI::Platypus->new( api => 2, lib => [$LIBRARY_PATH] );

my @functions = (
    [ quorumlock_version            => []         => 'string' ],
    [ quorumlock_result_name        => ['uint32'] => 'string' ],
    [ quorumlock_node_kind_name     => ['uint32'] => 'string' ],
    [ quorumlock_fence_check_script => []         => 'string' ],

    [ quorumlock_config_new                   => ['opaque*']                                  => 'uint32' ],
    [ quorumlock_config_free                  => ['opaque']                                   => 'void' ],
    [ quorumlock_config_add_node              => [ 'opaque', 'opaque', 'size_t', 'opaque*' ] => 'uint32' ],
    [ quorumlock_config_set_drift             => [ 'opaque', 'double', 'uint64' ]            => 'uint32' ],
    [ quorumlock_config_set_max_ttl_ms        => [ 'opaque', 'uint64' ]                      => 'uint32' ],
    [ quorumlock_config_set_connect_timeout_ms => [ 'opaque', 'uint64' ]                     => 'uint32' ],
    [ quorumlock_config_set_key_prefix        => [ 'opaque', 'opaque', 'size_t' ]            => 'uint32' ],
    [ quorumlock_config_set_require_quorum    => [ 'opaque', 'bool' ]                        => 'uint32' ],
    [ quorumlock_config_set_notify            => [ 'opaque', 'bool' ]                        => 'uint32' ],
    [ quorumlock_config_set_quarantine        => [ 'opaque', 'uint32', 'uint64' ]            => 'uint32' ],
    [ quorumlock_config_set_eviction_check    => [ 'opaque', 'uint32' ]                      => 'uint32' ],
    [ quorumlock_config_set_key_format        => [ 'opaque', 'uint32' ]                      => 'uint32' ],
    [ quorumlock_config_set_lock_options      => [ 'opaque', 'opaque' ]                      => 'uint32' ],

    [ quorumlock_client_new        => [ 'opaque', 'opaque*', 'opaque*' ] => 'uint32' ],
    [ quorumlock_client_free       => ['opaque']                          => 'void' ],
    [ quorumlock_client_node_count => ['opaque']                          => 'size_t' ],
    [ quorumlock_client_release_value =>
          [ 'opaque', 'opaque[]', 'size_t[]', 'size_t', 'opaque', 'size_t', 'uint8*', 'opaque*' ] => 'uint32' ],
    [ quorumlock_client_extend_value =>
          [ 'opaque', 'opaque[]', 'size_t[]', 'size_t', 'opaque', 'size_t', 'uint64', 'uint64*', 'opaque*' ] => 'uint32' ],

    [ quorumlock_error_free              => ['opaque']                                      => 'void' ],
    [ quorumlock_error_code              => ['opaque']                                      => 'uint32' ],
    [ quorumlock_error_message           => [ 'opaque', 'opaque', 'size_t', 'size_t*' ]    => 'uint32' ],
    [ quorumlock_error_attempts          => ['opaque']                                      => 'uint32' ],
    [ quorumlock_error_attempt_count     => ['opaque']                                      => 'size_t' ],
    [ quorumlock_error_attempt_node_kind => [ 'opaque', 'size_t', 'size_t', 'uint32*' ]    => 'uint32' ],
    [ quorumlock_error_lost_reason       => ['opaque']                                      => 'uint32' ],
    [ quorumlock_error_node_count        => ['opaque']                                      => 'size_t' ],
    [ quorumlock_error_node_kind         => [ 'opaque', 'size_t', 'uint32*' ]               => 'uint32' ],
    [ quorumlock_error_node_latency_us   => [ 'opaque', 'size_t', 'uint64*' ]               => 'uint32' ],
    [ quorumlock_error_node_address => [ 'opaque', 'size_t', 'opaque', 'size_t', 'size_t*' ] => 'uint32' ],

    [ quorumlock_lock_options_new              => ['opaque*']                                  => 'uint32' ],
    [ quorumlock_lock_options_free             => ['opaque']                                   => 'void' ],
    [ quorumlock_lock_options_set_ttl_ms       => [ 'opaque', 'uint64' ]                      => 'uint32' ],
    [ quorumlock_lock_options_set_retry_count  => [ 'opaque', 'uint32' ]                      => 'uint32' ],
    [ quorumlock_lock_options_set_retry_delay_ms => [ 'opaque', 'uint64', 'uint64' ]          => 'uint32' ],
    [ quorumlock_lock_options_set_min_validity_ms => [ 'opaque', 'uint64' ]                   => 'uint32' ],
    [ quorumlock_lock_options_set_node_timeout_ms => [ 'opaque', 'uint64' ]                   => 'uint32' ],
    [ quorumlock_lock_options_set_auto_extend  => [ 'opaque', 'bool', 'uint64' ]              => 'uint32' ],
    [ quorumlock_lock_options_set_limits       => [ 'opaque', 'uint32', 'uint64' ]            => 'uint32' ],
    [ quorumlock_lock_options_set_value        => [ 'opaque', 'opaque', 'size_t', 'opaque*' ] => 'uint32' ],
    [ quorumlock_lock_options_set_fenced       => [ 'opaque', 'bool', 'uint64' ]              => 'uint32' ],

    [ quorumlock_client_acquire =>
          [ 'opaque', 'opaque', 'size_t', 'opaque', 'opaque', 'opaque*', 'opaque*' ] => 'uint32' ],
    [ quorumlock_client_try_acquire =>
          [ 'opaque', 'opaque', 'size_t', 'opaque', 'opaque*', 'opaque*' ] => 'uint32' ],
    [ quorumlock_client_acquire_timeout =>
          [ 'opaque', 'opaque', 'size_t', 'opaque', 'uint64', 'opaque', 'opaque*', 'opaque*' ] => 'uint32' ],
    [ quorumlock_lock_extend          => [ 'opaque', 'uint64', 'opaque*' ]                 => 'uint32' ],
    [ quorumlock_lock_release         => [ 'opaque', 'uint8*', 'opaque*' ]                 => 'uint32' ],
    [ quorumlock_lock_set_auto_extend => [ 'opaque', 'bool', 'opaque*' ]                   => 'uint32' ],
    [ quorumlock_lock_remaining_ms    => ['opaque']                                        => 'uint64' ],
    [ quorumlock_lock_ttl_ms          => ['opaque']                                        => 'uint64' ],
    [ quorumlock_lock_lost_reason     => ['opaque']                                        => 'uint32' ],
    [ quorumlock_lock_value           => [ 'opaque', 'opaque', 'size_t', 'size_t*' ]       => 'uint32' ],
    [ quorumlock_lock_free            => ['opaque']                                        => 'void' ],
    [ quorumlock_lock_token_count     => ['opaque']                                        => 'size_t' ],
    [ quorumlock_lock_token_at        => [ 'opaque', 'size_t', 'uint64*' ]                 => 'uint32' ],

    [ quorumlock_client_metrics    => [ 'opaque', 'opaque*' ]                         => 'uint32' ],
    [ quorumlock_metrics_free      => ['opaque']                                      => 'void' ],
    [ quorumlock_metrics_prometheus => [ 'opaque', 'opaque', 'size_t', 'size_t*' ]   => 'uint32' ],
);

$ffi->attach(@$_) for @functions;

use constant NO_LATENCY => 18446744073709551615;

# Reads a snprintf-style string: once for the length, then into a buffer of that length
# plus one. $get->($buf_ptr, $len, \$out_n) returns a result code.
sub read_string {
    my ($get) = @_;
    my $n = 0;
    return '' if $get->( undef, 0, \$n ) != 0;
    my $buf = "\0" x ( $n + 1 );
    my ($ptr) = scalar_to_buffer($buf);
    return '' if $get->( $ptr, $n + 1, undef ) != 0;
    return substr( $buf, 0, $n );
}

# A pointer to a copy of $bytes with a NUL after it (never zero-sized); keep the returned
# scalar alive for as long as the pointer is used.
sub buffer {
    my ($bytes) = @_;
    my $copy = $bytes . "\0";
    my ($ptr) = scalar_to_buffer($copy);
    return ( $ptr, \$copy );
}

# A lock handle: frees the C lock when the last reference goes (a lock still held is then
# released in the background by the engine).
package Quorumlock::FFI::LockHandle;

sub new { my ( $class, $ptr ) = @_; return bless \$ptr, $class }
sub ptr { ${ $_[0] } }

sub DESTROY {
    my ($self) = @_;
    Quorumlock::FFI::quorumlock_lock_free($$self) if $$self;
    $$self = undef;
}

package Quorumlock::FFI::ClientHandle;

sub new { my ( $class, $ptr ) = @_; return bless \$ptr, $class }
sub ptr { ${ $_[0] } }

sub free {
    my ($self) = @_;
    Quorumlock::FFI::quorumlock_client_free($$self) if $$self;
    $$self = undef;
}

sub DESTROY { $_[0]->free }

1;
