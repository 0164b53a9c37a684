package Quorumlock;

use strict;
use warnings;

use Encode ();
use Scalar::Util qw( blessed looks_like_number refaddr weaken );

use Quorumlock::FFI;
use Quorumlock::Error;
use Quorumlock::Lock;

our $VERSION = '0.2.0';

sub RETRY_COUNT() { 3 }
sub RETRY_DELAY() { 0.2 }

my %QUARANTINE = ( on => 0, strict => 1, off => 2 );
my %EVICTION   = ( refuse => 0, warn => 1, off => 2 );
my %KEY_FORMAT = ( braced => 0, bare => 1 );

my %CLIENT_KEYS = map { $_ => 1 } qw(
    servers retry_count retry_delay logger auto_release version_check
    quarantine quarantine_margin max_ttl connect_timeout key_prefix key_format require_quorum notify
    drift_factor drift_constant eviction_check
    min_validity node_timeout fenced fence_counter_ttl auto_extend auto_extend_interval
    max_extensions max_hold
);
my %LOCK_KEYS = map { $_ => 1 } qw(
    retry_count retry_delay min_validity node_timeout fenced fence_counter_ttl auto_extend
    auto_extend_interval max_extensions max_hold value wait try
);

# value => record of every held lock without auto-extension (strong) or with it (weak):
# what release($resource, $value) and lock(..., $extend) find.
our %HELD;

sub _invalid { my ( $msg, %a ) = @_; die Quorumlock::Error->invalid( $msg, %a ) }

# Seconds (any number) to whole milliseconds, rounded; undef, references, non-numbers,
# negative, infinite or huge values are refused here, ranges are the engine's.
sub _ms {
    my ( $v, $what, $op ) = @_;
    _invalid( "$what is undefined", op => $op ) unless defined $v;
    _invalid( "$what must be a number of seconds, got a reference", op => $op ) if ref $v;
    _invalid( "$what must be a number of seconds, got '$v'", op => $op ) unless looks_like_number($v);
    _invalid( "$what must be a finite number, got $v", op => $op ) if $v != $v || $v == 9**9**9 || $v == -9**9**9;
    _invalid( "$what must not be negative, got $v", op => $op ) if $v < 0;
    my $ms = $v * 1000 + 0.5;
    _invalid( "$what is too large: $v", op => $op ) if $ms >= 2**63;
    return int $ms;
}

sub _count {
    my ( $v, $what, $op, $max ) = @_;
    _invalid( "$what must be a whole number, got " . ( defined $v ? "'$v'" : 'undef' ), op => $op )
        unless defined $v && !ref $v && $v =~ /\A[0-9]+\z/;
    _invalid( "$what is too large: $v", op => $op ) if $v > $max;
    return $v + 0;
}

sub _flag {
    my ( $v, $what, $op ) = @_;
    _invalid( "$what must be a plain true or false value, got a reference", op => $op ) if ref $v;
    return $v ? 1 : 0;
}

# A name or setting as bytes: character strings must be valid Unicode and are sent as
# UTF-8; byte strings are taken as they are.
sub _bytes {
    my ( $v, $what, $op ) = @_;
    _invalid( "$what is undefined", op => $op ) unless defined $v;
    _invalid( "$what must be a string, got a " . ref($v) . " reference", op => $op ) if ref $v;
    return "$v" unless utf8::is_utf8($v);
    my $copy = "$v";
    _invalid( "$what is not valid UTF-8 (malformed character string)", op => $op ) unless utf8::valid($copy);
    my $bytes = eval { Encode::encode( 'UTF-8', $copy, Encode::FB_CROAK() ) };
    _invalid( "$what is not valid Unicode: " . ( $@ =~ s/ at .*//sr ), op => $op ) unless defined $bytes;
    return $bytes;
}

sub _url {
    my ($server) = @_;
    if ( blessed $server && ref $server && eval { exists $server->{server} } ) {
        return "redis://$server->{server}";    # a Redis.pm object
    }
    my $s = _bytes( $server, 'a server', 'connect' );
    return $s =~ m{://} ? $s : "redis://$s";
}

sub _check { my ( $code, $op ) = @_; die Quorumlock::Error->from_c( $code, undef, op => $op ) if $code != 0 }

sub new {
    my $class = shift;
    my %args = @_ == 1 && ref $_[0] eq 'HASH' ? %{ $_[0] } : @_;
    my $op = 'connect';
    my @unknown = sort grep { !$CLIENT_KEYS{$_} } keys %args;
    _invalid( "unknown option" . ( @unknown > 1 ? 's ' : ' ' ) . join( ', ', @unknown ), op => $op ) if @unknown;
    my $servers = $args{servers};
    _invalid( "servers must be a non-empty array reference", op => $op ) unless ref $servers eq 'ARRAY' && @$servers;

    my $self = bless {
        retry_count  => ( $args{retry_count} || RETRY_COUNT ),
        retry_delay  => ( defined $args{retry_delay} && $args{retry_delay} ne '' ? $args{retry_delay} : RETRY_DELAY ),
        logger       => ( exists $args{logger} ? ( $args{logger} || sub { } ) : sub { warn @_ } ),
        auto_release => $args{auto_release} || 0,
        locks        => [],
        defaults     => { map { $_ => $args{$_} } grep { exists $args{$_} } qw(
                min_validity node_timeout fenced fence_counter_ttl auto_extend auto_extend_interval
                max_extensions max_hold ) },
    }, $class;
    _invalid( "logger must be a code reference", op => $op ) if ref $self->{logger} ne 'CODE';
    _count( $self->{retry_count}, 'retry_count', $op, 2**32 );
    _ms( $self->{retry_delay}, 'retry_delay', $op );
    # Check the lock defaults now, so a bad one fails here and not at the first lock.
    Quorumlock::FFI::quorumlock_lock_options_free( $self->_options( { ttl => 10 }, $op ) );

    my $cfg;
    _check( Quorumlock::FFI::quorumlock_config_new( \$cfg ), $op );
    my $ok = eval {
        $self->_configure( $cfg, [ map { _url($_) } @$servers ], \%args );
        # The lock defaults are also the engine's, for the calls by value (their node_timeout).
        my $opts = $self->_options( {}, $op );
        my $code = Quorumlock::FFI::quorumlock_config_set_lock_options( $cfg, $opts );
        Quorumlock::FFI::quorumlock_lock_options_free($opts);
        _check( $code, $op );
        1;
    };
    my $failed = $@;
    if ($ok) {
        my ( $client, $err );
        my $code = Quorumlock::FFI::quorumlock_client_new( $cfg, \$client, \$err );
        if ( $code == 0 ) {
            $self->{client} = Quorumlock::FFI::ClientHandle->new($client);
        }
        else {
            $ok = 0;
            $failed = Quorumlock::Error->from_c( $code, $err, op => $op );
        }
    }
    Quorumlock::FFI::quorumlock_config_free($cfg);
    die $failed unless $ok;
    return $self;
}

sub _configure {
    my ( $self, $cfg, $urls, $s ) = @_;
    my $op = 'connect';
    for my $url (@$urls) {
        my ( $ptr, $keep ) = Quorumlock::FFI::buffer($url);
        my $err;
        my $code = Quorumlock::FFI::quorumlock_config_add_node( $cfg, $ptr, length $url, \$err );
        die Quorumlock::Error->from_c( $code, $err, op => $op ) if $code != 0;
    }
    # Like Redis::DistLock, refuse to start without a quorum of connected nodes.
    my $rq = exists $s->{require_quorum} ? _flag( $s->{require_quorum}, 'require_quorum', $op ) : 1;
    _check( Quorumlock::FFI::quorumlock_config_set_require_quorum( $cfg, $rq ), $op );
    if ( exists $s->{quarantine} || exists $s->{quarantine_margin} ) {
        my $mode = 0;
        if ( exists $s->{quarantine} ) {
            my $q = $s->{quarantine};
            _invalid( "quarantine must be 'on', 'strict' or 'off'", op => $op ) unless defined $q && !ref $q && exists $QUARANTINE{$q};
            $mode = $QUARANTINE{$q};
        }
        my $margin = exists $s->{quarantine_margin} ? _ms( $s->{quarantine_margin}, 'quarantine_margin', $op ) : 0;
        _check( Quorumlock::FFI::quorumlock_config_set_quarantine( $cfg, $mode, $margin ), $op );
    }
    if ( exists $s->{eviction_check} ) {
        my $e = $s->{eviction_check};
        _invalid( "eviction_check must be 'refuse', 'warn' or 'off'", op => $op ) unless defined $e && !ref $e && exists $EVICTION{$e};
        _check( Quorumlock::FFI::quorumlock_config_set_eviction_check( $cfg, $EVICTION{$e} ), $op );
    }
    _check( Quorumlock::FFI::quorumlock_config_set_max_ttl_ms( $cfg, _ms( $s->{max_ttl}, 'max_ttl', $op ) ), $op )
        if exists $s->{max_ttl};
    _check( Quorumlock::FFI::quorumlock_config_set_connect_timeout_ms( $cfg, _ms( $s->{connect_timeout}, 'connect_timeout', $op ) ), $op )
        if exists $s->{connect_timeout};
    if ( exists $s->{key_prefix} ) {
        my $prefix = _bytes( $s->{key_prefix}, 'key_prefix', $op );
        my ( $ptr, $keep ) = Quorumlock::FFI::buffer($prefix);
        _check( Quorumlock::FFI::quorumlock_config_set_key_prefix( $cfg, $ptr, length $prefix ), $op );
    }
    if ( exists $s->{key_format} ) {
        my $f = $s->{key_format};
        _invalid( "key_format must be 'braced' or 'bare'", op => $op ) unless defined $f && !ref $f && exists $KEY_FORMAT{$f};
        _check( Quorumlock::FFI::quorumlock_config_set_key_format( $cfg, $KEY_FORMAT{$f} ), $op );
    }
    _check( Quorumlock::FFI::quorumlock_config_set_notify( $cfg, _flag( $s->{notify}, 'notify', $op ) ), $op )
        if exists $s->{notify};
    if ( exists $s->{drift_factor} || exists $s->{drift_constant} ) {
        my $f = exists $s->{drift_factor} ? $s->{drift_factor} : 0.01;
        _invalid( "drift_factor must be a number", op => $op ) unless defined $f && !ref $f && looks_like_number($f);
        my $c = exists $s->{drift_constant} ? _ms( $s->{drift_constant}, 'drift_constant', $op ) : 2;
        _check( Quorumlock::FFI::quorumlock_config_set_drift( $cfg, $f + 0, $c ), $op );
    }
}

# Builds C lock options from the client defaults and per-call options (seconds).
sub _options {
    my ( $self, $o, $op ) = @_;
    my %o = ( %{ $self->{defaults} }, %$o );
    my $opts;
    _check( Quorumlock::FFI::quorumlock_lock_options_new( \$opts ), $op );
    my $ok = eval {
        _check( Quorumlock::FFI::quorumlock_lock_options_set_ttl_ms( $opts, _ms( $o{ttl}, 'ttl', $op ) ), $op ) if exists $o{ttl};
        my $tries = defined $o{retry_count} && $o{retry_count} ne '' ? $o{retry_count} : $self->{retry_count};
        $tries = RETRY_COUNT if !$tries;
        $tries = _count( $tries, 'retry_count', $op, 2**32 );
        _check( Quorumlock::FFI::quorumlock_lock_options_set_retry_count( $opts, $tries - 1 ), $op );
        my $delay = exists $o{retry_delay} ? $o{retry_delay} : $self->{retry_delay};
        # Redis::DistLock sleeps rand(retry_delay) between tries.
        _check( Quorumlock::FFI::quorumlock_lock_options_set_retry_delay_ms( $opts, 0, _ms( $delay, 'retry_delay', $op ) ), $op );
        _check( Quorumlock::FFI::quorumlock_lock_options_set_min_validity_ms( $opts, _ms( $o{min_validity}, 'min_validity', $op ) ), $op )
            if exists $o{min_validity};
        _check( Quorumlock::FFI::quorumlock_lock_options_set_node_timeout_ms( $opts, _ms( $o{node_timeout}, 'node_timeout', $op ) ), $op )
            if exists $o{node_timeout};
        if ( exists $o{auto_extend} || exists $o{auto_extend_interval} ) {
            my $on = exists $o{auto_extend} ? _flag( $o{auto_extend}, 'auto_extend', $op ) : 1;
            my $iv = exists $o{auto_extend_interval} ? _ms( $o{auto_extend_interval}, 'auto_extend_interval', $op ) : 0;
            _check( Quorumlock::FFI::quorumlock_lock_options_set_auto_extend( $opts, $on, $iv ), $op );
        }
        if ( exists $o{max_extensions} || exists $o{max_hold} ) {
            my $n = exists $o{max_extensions} ? _count( $o{max_extensions}, 'max_extensions', $op, 2**32 - 1 ) : 0;
            my $h = exists $o{max_hold} ? _ms( $o{max_hold}, 'max_hold', $op ) : 0;
            _check( Quorumlock::FFI::quorumlock_lock_options_set_limits( $opts, $n, $h ), $op );
        }
        if ( exists $o{fenced} || exists $o{fence_counter_ttl} ) {
            my $on = exists $o{fenced} ? _flag( $o{fenced}, 'fenced', $op ) : 1;
            my $t  = exists $o{fence_counter_ttl} ? _ms( $o{fence_counter_ttl}, 'fence_counter_ttl', $op ) : 0;
            _check( Quorumlock::FFI::quorumlock_lock_options_set_fenced( $opts, $on, $t ), $op );
        }
        if ( defined $o{value} ) {
            my $v = _bytes( $o{value}, 'value', $op );
            my ( $ptr, $keep ) = Quorumlock::FFI::buffer($v);
            my $err;
            my $code = Quorumlock::FFI::quorumlock_lock_options_set_value( $opts, $ptr, length $v, \$err );
            die Quorumlock::Error->from_c( $code, $err, op => $op ) if $code != 0;
        }
        1;
    };
    unless ($ok) {
        my $e = $@;
        Quorumlock::FFI::quorumlock_lock_options_free($opts);
        die $e;
    }
    return $opts;
}

sub _client {
    my ( $self, $op ) = @_;
    my $c = $self->{client} && $self->{client}->ptr;
    _invalid( "the client is closed", op => $op ) unless $c;
    return $c;
}

# Locks $resource for $ttl seconds; returns a Quorumlock::Lock or dies with a
# Quorumlock::Error (::Busy, ::Quorum, ::Invalid, ...). Options: value, retry_count (tries),
# retry_delay (max random seconds between tries), wait (seconds: retry until then), try (one
# attempt), auto_extend, auto_extend_interval, fenced, fence_counter_ttl, min_validity,
# node_timeout, max_extensions, max_hold.
sub acquire {
    my ( $self, $resource, $ttl, %o ) = @_;
    my $op = 'acquire';
    my @unknown = sort grep { !$LOCK_KEYS{$_} } keys %o;
    _invalid( "unknown option" . ( @unknown > 1 ? 's ' : ' ' ) . join( ', ', @unknown ), op => $op ) if @unknown;
    my $name  = _bytes( $resource, 'the resource name', $op );
    my $label = "$resource";
    my $try   = _flag( $o{try}, 'try', $op );
    my $wait  = defined $o{wait} ? _ms( $o{wait}, 'wait', $op ) : undef;
    _invalid( "wait and try exclude each other", op => $op ) if $try && defined $wait;
    my %lo = map { $_ => $o{$_} } grep { exists $o{$_} } qw(
        retry_count retry_delay min_validity node_timeout fenced fence_counter_ttl auto_extend
        auto_extend_interval max_extensions max_hold value );
    $lo{ttl} = $ttl;
    my $opts = $self->_options( \%lo, $op );
    my ( $lock, $err, $code );
    my $ok = eval {
        my $c = $self->_client($op);
        my ( $ptr, $keep ) = Quorumlock::FFI::buffer($name);
        $code =
              $try          ? Quorumlock::FFI::quorumlock_client_try_acquire( $c, $ptr, length $name, $opts, \$lock, \$err )
            : defined $wait ? Quorumlock::FFI::quorumlock_client_acquire_timeout( $c, $ptr, length $name, $opts, $wait, undef, \$lock, \$err )
            :                 Quorumlock::FFI::quorumlock_client_acquire( $c, $ptr, length $name, $opts, undef, \$lock, \$err );
        1;
    };
    my $failed = $@;
    Quorumlock::FFI::quorumlock_lock_options_free($opts);
    die $failed unless $ok;
    die Quorumlock::Error->from_c( $code, $err, op => $op, resource => $label ) if $code != 0;

    my %d = ( %{ $self->{defaults} }, %lo );
    my $auto = ( exists $d{auto_extend} ? $d{auto_extend} : exists $d{auto_extend_interval} ) ? 1 : 0;
    my $handle = Quorumlock::FFI::LockHandle->new($lock);
    my @tokens;
    for my $i ( 0 .. Quorumlock::FFI::quorumlock_lock_token_count($lock) - 1 ) {
        my $t = 0;
        push @tokens, $t if Quorumlock::FFI::quorumlock_lock_token_at( $lock, $i, \$t ) == 0;
    }
    my $rec = {
        handle   => $handle,
        resource => $resource,
        value    => Quorumlock::FFI::read_string( sub { Quorumlock::FFI::quorumlock_lock_value( $lock, @_ ) } ),
        ttl_ms   => Quorumlock::FFI::quorumlock_lock_ttl_ms($lock),
        auto     => $auto,
        tokens   => \@tokens,
        released => 0,
    };
    _hold($rec);
    if ( $self->{auto_release} ) {
        push @{ $self->{locks} }, $rec;
        weaken( $self->{locks}[-1] );
    }
    return Quorumlock::Lock->_new($rec);
}

# Keeps a record findable by value: strongly without auto-extension (held until released
# or expired), weakly with it (released when its last lock object goes).
# Released and expired records are swept out whenever %HELD doubled since the last sweep.
my $next_sweep = 64;

sub _hold {
    my ($rec) = @_;
    if ( keys %HELD >= $next_sweep ) {
        for my $v ( keys %HELD ) {
            my $r = $HELD{$v};
            delete $HELD{$v}
                if !$r || $r->{released} || Quorumlock::FFI::quorumlock_lock_remaining_ms( $r->{handle}->ptr ) == 0;
        }
        $next_sweep = 2 * keys %HELD;
        $next_sweep = 64 if $next_sweep < 64;
    }
    $HELD{ $rec->{value} } = $rec;
    weaken( $HELD{ $rec->{value} } ) if $rec->{auto};
}

sub _release_rec {
    my ($rec) = @_;
    my ( $held, $err ) = ( 0, undef );
    my $code = Quorumlock::FFI::quorumlock_lock_release( $rec->{handle}->ptr, \$held, \$err );
    die Quorumlock::Error->from_c( $code, $err, op => 'release', resource => $rec->{resource} ) if $code != 0;
    my $was = $rec->{released};
    $rec->{released} = 1;
    delete $HELD{ $rec->{value} } if $HELD{ $rec->{value} } && $HELD{ $rec->{value} } == $rec;
    return ( $was || !$held ) ? 0 : 1;
}

# Redis::DistLock's lock: returns the lock (a Quorumlock::Lock: {validity, resource, value})
# or undef when it was not acquired (held by others, too little validity, node failures:
# last_error says which; node failures also go to the logger). With $extend true, extends
# the lock whose value is $value instead, never re-creating an expired one: a lock of this
# process through its handle (the Quorumlock::Lock is returned), any other (another process,
# or Redis::DistLock itself) by value (a plain {validity, resource, value} hash is returned).
# Dies with Quorumlock::Error::Invalid for bad input.
sub lock {
    my ( $self, $resource, $ttl, $value, $extend ) = @_;
    $self->{last_error} = undef;
    if ($extend) {
        my $rec = _find( $resource, $value );
        if ($rec) {
            my $lock = Quorumlock::Lock->_new($rec);
            return $lock->extend($ttl) || do { $self->{last_error} = $lock->last_error; undef };
        }
        my $validity = eval { $self->extend_value( $resource, $value, $ttl ) };
        return { validity => $validity, resource => $resource, value => $value } if defined $validity;
        my $e = $@;
        die $e unless ref $e && $e->isa('Quorumlock::Error') && !$e->isa('Quorumlock::Error::Invalid') && !$e->isa('Quorumlock::Error::Internal');
        $self->{last_error} = $e;
        return undef;
    }
    my $lock = eval { $self->acquire( $resource, $ttl, ( defined $value ? ( value => $value ) : () ) ) };
    return $lock if $lock;
    my $e = $@;
    die $e unless ref $e && $e->isa('Quorumlock::Error') && $e->code_number >= 1 && $e->code_number <= 3;
    $self->{last_error} = $e;
    $self->{logger}->("$e\n") if $e->isa('Quorumlock::Error::Quorum');
    return undef;
}

# The error of the last lock (or extend) that returned undef.
sub last_error { $_[0]{last_error} }

# Extends $lock to $ttl seconds from now: the lock, or undef (last_error says why).
sub extend {
    my ( $self, $lock, $ttl ) = @_;
    _invalid( "not a lock", op => 'extend' ) unless blessed $lock && $lock->isa('Quorumlock::Lock');
    my $r = $lock->extend($ttl);
    $self->{last_error} = $lock->last_error unless $r;
    return $r;
}

# Releases a lock: release($lock) (a Quorumlock::Lock, or any {resource, value} hash) or
# release($resource, $value). A lock of this process is released through its handle; any
# other (taken in another process, or by Redis::DistLock) by value: compare-and-delete on
# every node, other owners' keys untouched. Returns 1 if a quorum of nodes still held it, 0
# otherwise. Dies with Quorumlock::Error::Invalid for bad input (a value under 16 printable
# ASCII characters: the engine never gives one, and cannot release one).
sub release {
    my $self = shift;
    _invalid( "release: give a lock, or a resource and a value", op => 'release' ) unless @_ == 1 || @_ == 2;
    _invalid( "release: the lock must be a hash reference", op => 'release' ) if @_ == 1 && ref $_[0] ne 'HASH' && !blessed $_[0];
    my ( $resource, $value ) = @_ == 1 ? @{ $_[0] }{qw( resource value )} : @_;
    my $rec;
    if ( @_ == 1 && blessed $_[0] && $_[0]->isa('Quorumlock::Lock') ) {
        $rec = $Quorumlock::Lock::STATE{ refaddr $_[0] };
    }
    $rec ||= _find( $resource, $value );
    return _release_rec($rec) if $rec;
    return $self->release_value( $resource, $value );
}

# The record of a lock of this process on $resource with $value, or undef.
sub _find {
    my ( $resource, $value ) = @_;
    return undef unless defined $value && !ref $value;
    my $rec = $HELD{$value};
    return $rec && defined $resource && !ref $resource && $rec->{resource} eq $resource ? $rec : undef;
}

# Releases the keys of $resource that hold $value on every node, whoever took them. Returns
# 1 if a quorum of nodes still held the value, 0 otherwise; dies typed for bad input.
sub release_value {
    my ( $self, $resource, $value ) = @_;
    my $held = 0;
    $self->_by_value( 'release', $resource, $value, sub {
        my ( $c, $ptrs, $lens, $n, $vptr, $vlen, $err ) = @_;
        return Quorumlock::FFI::quorumlock_client_release_value( $c, $ptrs, $lens, $n, $vptr, $vlen, \$held, $err );
    } );
    return $held ? 1 : 0;
}

# Extends the keys of $resource that hold $value to $ttl seconds from now on a quorum of
# nodes; keys that are gone are never re-created. Returns the validity left (seconds). Dies
# with Quorumlock::Error::Lost (gone or taken), ::Quorum / ::Validity (transient) or ::Invalid.
sub extend_value {
    my ( $self, $resource, $value, $ttl ) = @_;
    my $ms   = _ms( $ttl, 'ttl', 'extend' );
    my $left = 0;
    $self->_by_value( 'extend', $resource, $value, sub {
        my ( $c, $ptrs, $lens, $n, $vptr, $vlen, $err ) = @_;
        return Quorumlock::FFI::quorumlock_client_extend_value( $c, $ptrs, $lens, $n, $vptr, $vlen, $ms, \$left, $err );
    } );
    return $left / 1000;
}

# Converts a resource (a name, or an array reference of names) and a value, calls $call
# with the C arguments and dies typed on failure.
sub _by_value {
    my ( $self, $op, $resource, $value, $call ) = @_;
    my @names = ref $resource eq 'ARRAY' ? @$resource : ($resource);
    _invalid( "no resources", op => $op ) unless @names;
    my @bytes = map { _bytes( $_, 'the resource name', $op ) } @names;
    my $v     = _bytes( $value, 'the value', $op );
    my $label = join ',', map {"$_"} @names;
    my @bufs  = map { [ Quorumlock::FFI::buffer($_) ] } @bytes;
    my ( $vptr, $vkeep ) = Quorumlock::FFI::buffer($v);
    my $err;
    my $code = $call->(
        $self->_client($op), [ map { $_->[0] } @bufs ], [ map { length } @bytes ], scalar(@bytes),
        $vptr, length $v, \$err
    );
    die Quorumlock::Error->from_c( $code, $err, op => $op, resource => $label ) if $code != 0;
    return;
}

sub node_count {
    my ($self) = @_;
    my $c = $self->{client} && $self->{client}->ptr;
    return $c ? Quorumlock::FFI::quorumlock_client_node_count($c) : 0;
}

# The client's counters and latency histograms in the Prometheus text format.
sub metrics_prometheus {
    my ($self) = @_;
    my $m;
    _check( Quorumlock::FFI::quorumlock_client_metrics( $self->_client('metrics'), \$m ), 'metrics' );
    my $text = Quorumlock::FFI::read_string( sub { Quorumlock::FFI::quorumlock_metrics_prometheus( $m, @_ ) } );
    Quorumlock::FFI::quorumlock_metrics_free($m);
    return $text;
}

# Frees the client; its locks stay usable (extend, release).
sub close {
    my ($self) = @_;
    $self->{client}->free if $self->{client};
    return;
}

sub library_version { Quorumlock::FFI::quorumlock_version() }
sub library_path    { $Quorumlock::FFI::LIBRARY_PATH }
sub fence_check_script { Quorumlock::FFI::quorumlock_fence_check_script() }

sub DESTROY {
    my ($self) = @_;
    return unless $self->{auto_release};
    for my $rec ( grep { $_ && !$_->{released} } @{ $self->{locks} || [] } ) {
        eval { _release_rec($rec) };
    }
}

{
    my ($lib_major) = split /\./, library_version();
    my ($our_major) = split /\./, $VERSION;
    die "libquorumlock " . library_version() . " at " . library_path() . " does not match Quorumlock $VERSION\n"
        if $lib_major ne $our_major;
}

1;

__END__

=head1 NAME

Quorumlock - Redlock distributed locks over N independent Redis masters (libquorumlock)

=head1 SYNOPSIS

  use Quorumlock;
  my $rd = Quorumlock->new( servers => [qw( 10.0.0.1:6379 10.0.0.2:6379 10.0.0.3:6379 )] );
  my $lock = $rd->lock( "invoice:7", 10 )       # seconds, as Redis::DistLock
      or die "not acquired: " . $rd->last_error;
  # ... critical section, while $lock->remaining > 0 ...
  $rd->release($lock);

  my $l = $rd->acquire( "invoice:7", 10, fenced => 1, auto_extend => 1 );   # dies typed
  do_work( token => $l->token ) until $l->is_lost || $done;
  $l->release;

=head1 DESCRIPTION

The Perl binding of quorumlock's Redlock engine, through its C ABI and FFI::Platypus; shaped
like Redis::DistLock 0.07. See README.md in the distribution for the options, the error
classes and what differs from Redis::DistLock.

=cut
