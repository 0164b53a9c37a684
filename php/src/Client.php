<?php

declare(strict_types=1);

namespace Quorumlock;

use FFI;
use FFI\CData;
use Quorumlock\Exception\LockBusyException;
use Quorumlock\Exception\QuorumlockException;

/**
 * A client of N independent Redis masters (the quorum is N / 2 + 1).
 *
 *     $client = new Quorumlock\Client(['redis://10.0.0.1:6379', 'redis://10.0.0.2:6379', 'redis://10.0.0.3:6379']);
 *     $lock = $client->lock('invoice:7', 10000);       // Lock, or false when others hold it
 *     if ($lock) { ...; $lock->release(); }
 *
 * Every error is a QuorumlockException subclass whose getCode() is the C ABI's QL_* code.
 */
final class Client
{
    /** Client settings (constructor); any lock option below is also accepted there as a default. */
    public const SETTINGS = [
        'quarantine', 'quarantineMarginMs', 'maxTtlMs', 'evictionCheck', 'notify', 'keyPrefix',
        'keyFormat', 'requireQuorum', 'connectTimeoutMs', 'driftFactor', 'driftConstantMs',
    ];

    /** Lock options (lock(), acquire() and client defaults). */
    public const LOCK_OPTIONS = [
        'retryCount', 'retryDelayMs', 'retryJitterMs', 'waitMs', 'minValidityMs', 'nodeTimeoutMs',
        'autoExtend', 'extendIntervalMs', 'maxExtensions', 'maxHoldMs', 'fenced', 'fenceCounterTtlMs',
        'value',
    ];

    private const QUARANTINE = ['on' => 0, 'strict' => 1, 'off' => 2];
    private const EVICTION = ['refuse' => 0, 'warn' => 1, 'off' => 2];
    /** 'braced' (default): keys are <keyPrefix>{<resource>}; 'bare': <keyPrefix><resource>. */
    private const KEY_FORMAT = ['braced' => 0, 'bare' => 1];
    private const UINT32_MAX = 4294967295;

    private ?CData $ptr;
    /** @var array<string, mixed> */
    private array $defaults;
    private ?QuorumlockException $lastError = null;

    /**
     * Validates the settings and connects to every node in parallel (waiting up to the connect
     * timeout, default 1 s). Nodes that are down join when they come up, unless
     * 'requireQuorum' => true, which throws ConnectionFailedException (or AuthFailed, ...).
     *
     * @param list<string>          $nodes    redis://[user:password@]host:port[/db], rediss:// for TLS,
     *                                        redis+cluster://h:p,h:p for a Redis Cluster as one member
     * @param array<string, mixed>  $settings see SETTINGS and LOCK_OPTIONS
     */
    public function __construct(mixed $nodes, mixed $settings = [])
    {
        $this->ptr = null;
        if (!is_array($nodes) || !array_is_list($nodes)) {
            throw QuorumlockException::invalid('connect', 'nodes must be a list of URL strings, got ' . get_debug_type($nodes));
        }
        if (!is_array($settings)) {
            throw QuorumlockException::invalid('connect', 'settings must be an array, got ' . get_debug_type($settings));
        }
        foreach (array_keys($settings) as $k) {
            if (!in_array($k, self::SETTINGS, true) && !in_array($k, self::LOCK_OPTIONS, true)) {
                throw QuorumlockException::invalid('connect', 'unknown setting ' . json_encode($k) . ' (known: ' . implode(', ', array_merge(self::SETTINGS, self::LOCK_OPTIONS)) . ')');
            }
        }
        $this->defaults = array_diff_key($settings, array_flip(self::SETTINGS));
        // Check the default lock options now, so a typo fails here and not at the first lock.
        self::checkOptions($this->defaults, 'connect');

        $ffi = Library::ffi();
        $cfg = $ffi->new('quorumlock_config*');
        $r = $ffi->quorumlock_config_new(FFI::addr($cfg));
        if ($r !== 0) {
            throw Library::error($r, null, 'connect');
        }
        try {
            foreach ($nodes as $i => $url) {
                if (!is_string($url)) {
                    throw QuorumlockException::invalid('connect', "node $i must be a URL string, got " . get_debug_type($url));
                }
                $err = $ffi->new('quorumlock_error*');
                $r = $ffi->quorumlock_config_add_node($cfg, $url, strlen($url), FFI::addr($err));
                if ($r !== 0) {
                    throw Library::error($r, $err, 'connect');
                }
            }
            $this->configure($cfg, $settings);
            // The lock defaults are also the engine's, for the calls by value (their nodeTimeoutMs).
            $opts = self::options(null, $this->defaults, 'connect', null);
            try {
                $r = $ffi->quorumlock_config_set_lock_options($cfg, $opts);
            } finally {
                $ffi->quorumlock_lock_options_free($opts);
            }
            if ($r !== 0) {
                throw Library::error($r, null, 'connect');
            }
            $client = $ffi->new('quorumlock_client*');
            $err = $ffi->new('quorumlock_error*');
            $r = $ffi->quorumlock_client_new($cfg, FFI::addr($client), FFI::addr($err));
            if ($r !== 0) {
                throw Library::error($r, $err, 'connect');
            }
            $this->ptr = $client;
        } finally {
            $ffi->quorumlock_config_free($cfg);
        }
    }

    public function __destruct()
    {
        $this->close();
    }

    /** Frees the client. Locks taken through it stay usable; closing twice does nothing. */
    public function close(): void
    {
        if ($this->ptr !== null) {
            Library::ffi()->quorumlock_client_free($this->ptr);
            $this->ptr = null;
        }
    }

    /** Number of configured nodes N. */
    public function nodeCount(): int
    {
        return (int) Library::ffi()->quorumlock_client_node_count($this->live('nodeCount'));
    }

    /**
     * Acquires $resource (a string of 1..1024 bytes, any content; or a list of them, locked
     * all or nothing) for $ttlMs milliseconds. Returns false when other owners hold it
     * (lastError() then has the LockBusyException with the node report); throws for every
     * other failure (QuorumNotReachedException, ValidityTooShortException, InvalidArgumentException, ...).
     *
     * @param string|list<string>  $resource
     * @param array<string, mixed> $options  see LOCK_OPTIONS; 'waitMs' retries until that much time is spent
     */
    public function lock(mixed $resource, mixed $ttlMs = 10000, mixed $options = []): Lock|false
    {
        try {
            return $this->acquire($resource, $ttlMs, $options);
        } catch (LockBusyException $e) {
            return false;
        }
    }

    /**
     * As lock(), but throws LockBusyException instead of returning false.
     *
     * @param string|list<string>  $resource
     * @param array<string, mixed> $options
     */
    public function acquire(mixed $resource, mixed $ttlMs = 10000, mixed $options = []): Lock
    {
        $this->lastError = null;
        try {
            return $this->doAcquire($resource, $ttlMs, $options);
        } catch (QuorumlockException $e) {
            $this->lastError = $e;
            throw $e;
        }
    }

    /** The error of the last lock()/acquire() call on this client, null after a success. */
    public function lastError(): ?QuorumlockException
    {
        return $this->lastError;
    }

    /**
     * Releases the keys of $resource (or of each resource of a list) that hold $value on every
     * node, whoever took them: another process, or the library this one replaces
     * (compare-and-delete; other owners' keys are never touched). Returns whether a quorum of
     * nodes still held the value. InvalidArgumentException for a value the engine never gives
     * (fewer than 16 printable ASCII characters).
     *
     * @param string|list<string> $resource
     */
    public function releaseValue(mixed $resource, mixed $value): bool
    {
        $ffi = Library::ffi();
        $held = $ffi->new('bool');
        $this->byValue('release', $resource, $value, fn (CData $c, CData $ptrs, CData $lens, int $n, string $v, CData $err): int =>
            $ffi->quorumlock_client_release_value($c, $ptrs, $lens, $n, $v, strlen($v), FFI::addr($held), FFI::addr($err)));
        return (bool) $held->cdata;
    }

    /**
     * Extends the keys of $resource that hold $value to $ttlMs from now on a quorum of nodes.
     * Keys that are gone are never re-created: LockLostException. Returns the validity left
     * (ms); QuorumNotReachedException / ValidityTooShortException when transient.
     *
     * @param string|list<string> $resource
     */
    public function extendValue(mixed $resource, mixed $value, mixed $ttlMs): int
    {
        $ttl = self::uint($ttlMs, 'ttlMs', 'extend', is_string($resource) ? $resource : null);
        $ffi = Library::ffi();
        $left = $ffi->new('uint64_t');
        $this->byValue('extend', $resource, $value, fn (CData $c, CData $ptrs, CData $lens, int $n, string $v, CData $err): int =>
            $ffi->quorumlock_client_extend_value($c, $ptrs, $lens, $n, $v, strlen($v), $ttl, FFI::addr($left), FFI::addr($err)));
        return (int) $left->cdata;
    }

    /**
     * Converts the arguments of a by-value call and runs it; throws the typed error.
     *
     * @param callable(CData, CData, CData, int, string, CData): int $call
     */
    private function byValue(string $op, mixed $resource, mixed $value, callable $call): void
    {
        $label = is_string($resource) ? $resource : null;
        $list = is_string($resource) ? [$resource] : $resource;
        if (!is_array($list) || !array_is_list($list) || $list === []) {
            throw QuorumlockException::invalid($op, 'the resource must be a string or a non-empty list of strings, got ' . get_debug_type($resource));
        }
        if (!is_string($value)) {
            throw QuorumlockException::invalid($op, 'the value must be a string, got ' . get_debug_type($value));
        }
        $client = $this->live($op, $label);
        $ffi = Library::ffi();
        [$ptrs, $lens, $keep] = self::byteList($list, $op);
        $err = $ffi->new('quorumlock_error*');
        $r = $call($client, $ptrs, $lens, count($list), $value, $err); // $keep holds the names until here
        if ($r !== 0) {
            throw Library::error($r, $err, $op, $label);
        }
    }

    /**
     * C arrays of pointers and lengths for a list of names, and the buffers to keep alive.
     *
     * @param list<mixed> $list
     * @return array{0: CData, 1: CData, 2: list<CData>}
     */
    private static function byteList(array $list, string $op): array
    {
        $ffi = Library::ffi();
        $n = count($list);
        $ptrs = $ffi->new("const char*[$n]");
        $lens = $ffi->new("size_t[$n]");
        $keep = [];
        foreach ($list as $i => $r) {
            if (!is_string($r)) {
                throw QuorumlockException::invalid($op, "resource $i must be a string, got " . get_debug_type($r));
            }
            $len = strlen($r);
            $buf = $ffi->new('char[' . max($len, 1) . ']');
            FFI::memcpy($buf, $r, $len);
            $keep[] = $buf;
            $ptrs[$i] = $ffi->cast('const char*', FFI::addr($buf[0]));
            $lens[$i] = $len;
        }
        return [$ptrs, $lens, $keep];
    }

    /** A snapshot of the client's counters in the Prometheus text format (no I/O). */
    public function metricsPrometheus(): string
    {
        $ffi = Library::ffi();
        $m = $ffi->new('quorumlock_metrics*');
        $r = $ffi->quorumlock_client_metrics($this->live('metrics'), FFI::addr($m));
        if ($r !== 0) {
            throw Library::error($r, null, 'metrics');
        }
        try {
            return Library::text(fn ($buf, $len, $n) => $ffi->quorumlock_metrics_prometheus($m, $buf, $len, $n));
        } finally {
            $ffi->quorumlock_metrics_free($m);
        }
    }

    /** The library version ("0.2.0"). */
    public static function version(): string
    {
        return Library::version();
    }

    /** Lua source of the fence check: EVAL <script> 1 <fence key> <token> returns 1 or 0 (stale). */
    public static function fenceCheckScript(): string
    {
        return (string) Library::ffi()->quorumlock_fence_check_script();
    }

    private function doAcquire(mixed $resource, mixed $ttlMs, mixed $options): Lock
    {
        $op = 'acquire';
        if (!is_array($options)) {
            throw QuorumlockException::invalid($op, 'options must be an array, got ' . get_debug_type($options));
        }
        $label = is_string($resource) ? $resource : null;
        if (is_string($resource)) {
            $list = [$resource];
        } elseif (is_array($resource) && array_is_list($resource) && $resource !== []) {
            foreach ($resource as $i => $r) {
                if (!is_string($r)) {
                    throw QuorumlockException::invalid($op, "resource $i must be a string, got " . get_debug_type($r));
                }
            }
            $list = $resource;
        } else {
            throw QuorumlockException::invalid($op, 'the resource must be a string or a non-empty list of strings, got ' . get_debug_type($resource));
        }
        $ttl = self::uint($ttlMs, 'ttlMs', $op, $label);
        foreach (array_keys($options) as $k) {
            if (!in_array($k, self::LOCK_OPTIONS, true)) {
                throw QuorumlockException::invalid($op, 'unknown option ' . json_encode($k) . ' (known: ' . implode(', ', self::LOCK_OPTIONS) . ')');
            }
        }
        $o = $options + $this->defaults;
        self::checkOptions($o, $op, $label);
        $client = $this->live($op, $label);

        $ffi = Library::ffi();
        $opts = self::options($ttl, $o, $op, $label);
        $out = $ffi->new('quorumlock_lock*');
        $err = $ffi->new('quorumlock_error*');
        try {
            if (count($list) > 1 || !is_string($resource)) {
                [$ptrs, $lens, $keep] = self::byteList($list, $op);
                $r = $ffi->quorumlock_client_acquire_multi($client, $ptrs, $lens, count($list), $opts, null, FFI::addr($out), FFI::addr($err));
            } elseif (array_key_exists('waitMs', $o)) {
                $wait = self::uint($o['waitMs'], 'waitMs', $op, $label);
                $r = $ffi->quorumlock_client_acquire_timeout($client, $resource, strlen($resource), $opts, $wait, null, FFI::addr($out), FFI::addr($err));
            } else {
                $r = $ffi->quorumlock_client_acquire($client, $resource, strlen($resource), $opts, null, FFI::addr($out), FFI::addr($err));
            }
        } finally {
            $ffi->quorumlock_lock_options_free($opts);
        }
        if ($r !== 0) {
            throw Library::error($r, $err, $op, $label);
        }
        return new Lock($out, is_string($resource) ? $resource : $list);
    }

    /** The live C client, or QL_INVALID for a closed one or one made in another process. */
    private function live(string $op, ?string $resource = null): CData
    {
        if ($this->ptr === null) {
            throw QuorumlockException::invalid($op, 'the client is closed');
        }
        return $this->ptr;
    }

    /** @param array<string, mixed> $s */
    private function configure(CData $cfg, array $s): void
    {
        $ffi = Library::ffi();
        $op = 'connect';
        $check = function (int $r) use ($op): void {
            if ($r !== 0) {
                throw Library::error($r, null, $op);
            }
        };
        if (array_key_exists('quarantine', $s) || array_key_exists('quarantineMarginMs', $s)) {
            $mode = $s['quarantine'] ?? 'on';
            if (!is_string($mode) || !isset(self::QUARANTINE[$mode])) {
                throw QuorumlockException::invalid($op, "quarantine must be 'on', 'strict' or 'off', got " . self::show($mode));
            }
            $margin = array_key_exists('quarantineMarginMs', $s) ? self::uint($s['quarantineMarginMs'], 'quarantineMarginMs', $op) : 0;
            $check($ffi->quorumlock_config_set_quarantine($cfg, self::QUARANTINE[$mode], $margin));
        }
        if (array_key_exists('evictionCheck', $s)) {
            $mode = $s['evictionCheck'];
            if (!is_string($mode) || !isset(self::EVICTION[$mode])) {
                throw QuorumlockException::invalid($op, "evictionCheck must be 'refuse', 'warn' or 'off', got " . self::show($mode));
            }
            $check($ffi->quorumlock_config_set_eviction_check($cfg, self::EVICTION[$mode]));
        }
        if (array_key_exists('maxTtlMs', $s)) {
            $check($ffi->quorumlock_config_set_max_ttl_ms($cfg, self::uint($s['maxTtlMs'], 'maxTtlMs', $op)));
        }
        if (array_key_exists('connectTimeoutMs', $s)) {
            $check($ffi->quorumlock_config_set_connect_timeout_ms($cfg, self::uint($s['connectTimeoutMs'], 'connectTimeoutMs', $op)));
        }
        if (array_key_exists('notify', $s)) {
            $check($ffi->quorumlock_config_set_notify($cfg, self::bool($s['notify'], 'notify', $op)));
        }
        if (array_key_exists('requireQuorum', $s)) {
            $check($ffi->quorumlock_config_set_require_quorum($cfg, self::bool($s['requireQuorum'], 'requireQuorum', $op)));
        }
        if (array_key_exists('keyFormat', $s)) {
            $f = $s['keyFormat'];
            if (!is_string($f) || !isset(self::KEY_FORMAT[$f])) {
                throw QuorumlockException::invalid($op, "keyFormat must be 'braced' or 'bare', got " . self::show($f));
            }
            $check($ffi->quorumlock_config_set_key_format($cfg, self::KEY_FORMAT[$f]));
        }
        if (array_key_exists('keyPrefix', $s)) {
            $p = $s['keyPrefix'];
            if (!is_string($p)) {
                throw QuorumlockException::invalid($op, 'keyPrefix must be a string, got ' . get_debug_type($p));
            }
            $check($ffi->quorumlock_config_set_key_prefix($cfg, $p, strlen($p)));
        }
        if (array_key_exists('driftFactor', $s) || array_key_exists('driftConstantMs', $s)) {
            $f = $s['driftFactor'] ?? 0.01;
            if (!is_int($f) && !is_float($f)) {
                throw QuorumlockException::invalid($op, 'driftFactor must be a number, got ' . get_debug_type($f));
            }
            $c = array_key_exists('driftConstantMs', $s) ? self::uint($s['driftConstantMs'], 'driftConstantMs', $op) : 2;
            $check($ffi->quorumlock_config_set_drift($cfg, (float) $f, $c));
        }
    }

    /**
     * Type checks of lock options (values are checked by the engine).
     *
     * @param array<string, mixed> $o
     */
    private static function checkOptions(array $o, string $op, ?string $resource = null): void
    {
        foreach ($o as $k => $v) {
            switch ($k) {
                case 'autoExtend':
                case 'fenced':
                    self::bool($v, $k, $op, $resource);
                    break;
                case 'value':
                    if (!is_string($v)) {
                        throw QuorumlockException::invalid($op, 'value must be a string, got ' . get_debug_type($v));
                    }
                    break;
                case 'retryCount':
                case 'maxExtensions':
                    if (self::uint($v, $k, $op, $resource) > self::UINT32_MAX) {
                        throw QuorumlockException::invalid($op, "$k must be at most " . self::UINT32_MAX);
                    }
                    break;
                default:
                    self::uint($v, $k, $op, $resource);
            }
        }
    }

    /** @param array<string, mixed> $o */
    private static function options(?int $ttl, array $o, string $op, ?string $resource): CData
    {
        $ffi = Library::ffi();
        $opts = $ffi->new('quorumlock_lock_options*');
        $r = $ffi->quorumlock_lock_options_new(FFI::addr($opts));
        if ($r !== 0) {
            throw Library::error($r, null, $op, $resource);
        }
        try {
            $rc = $ttl === null ? [] : [$ffi->quorumlock_lock_options_set_ttl_ms($opts, $ttl)];
            if (isset($o['retryCount'])) {
                $rc[] = $ffi->quorumlock_lock_options_set_retry_count($opts, $o['retryCount']);
            }
            if (isset($o['retryDelayMs']) || isset($o['retryJitterMs'])) {
                // A delay alone is a fixed delay; a jitter alone keeps the default delay.
                $rc[] = $ffi->quorumlock_lock_options_set_retry_delay_ms(
                    $opts,
                    $o['retryDelayMs'] ?? 100,
                    $o['retryJitterMs'] ?? (isset($o['retryDelayMs']) ? 0 : 200),
                );
            }
            if (isset($o['minValidityMs'])) {
                $rc[] = $ffi->quorumlock_lock_options_set_min_validity_ms($opts, $o['minValidityMs']);
            }
            if (isset($o['nodeTimeoutMs'])) {
                $rc[] = $ffi->quorumlock_lock_options_set_node_timeout_ms($opts, $o['nodeTimeoutMs']);
            }
            if (!empty($o['autoExtend']) || isset($o['extendIntervalMs'])) {
                $rc[] = $ffi->quorumlock_lock_options_set_auto_extend($opts, (bool) ($o['autoExtend'] ?? false), $o['extendIntervalMs'] ?? 0);
            }
            if (isset($o['maxExtensions']) || isset($o['maxHoldMs'])) {
                $rc[] = $ffi->quorumlock_lock_options_set_limits($opts, $o['maxExtensions'] ?? 0, $o['maxHoldMs'] ?? 0);
            }
            if (!empty($o['fenced']) || isset($o['fenceCounterTtlMs'])) {
                $rc[] = $ffi->quorumlock_lock_options_set_fenced($opts, true, $o['fenceCounterTtlMs'] ?? 0);
            }
            foreach ($rc as $r) {
                if ($r !== 0) {
                    throw Library::error($r, null, $op, $resource);
                }
            }
            if (isset($o['value'])) {
                $err = $ffi->new('quorumlock_error*');
                $r = $ffi->quorumlock_lock_options_set_value($opts, $o['value'], strlen($o['value']), FFI::addr($err));
                if ($r !== 0) {
                    throw Library::error($r, $err, $op, $resource);
                }
            }
        } catch (\Throwable $e) {
            $ffi->quorumlock_lock_options_free($opts);
            throw $e;
        }
        return $opts;
    }

    /** @internal A non-negative integer (milliseconds, counts), or QL_INVALID. */
    public static function uint(mixed $v, string $name, string $op, ?string $resource = null): int
    {
        if (!is_int($v)) {
            throw QuorumlockException::invalid($op, "$name must be an integer, got " . get_debug_type($v));
        }
        if ($v < 0) {
            throw QuorumlockException::invalid($op, "$name must not be negative, got $v");
        }
        return $v;
    }

    private static function bool(mixed $v, string $name, string $op, ?string $resource = null): bool
    {
        if (!is_bool($v)) {
            throw QuorumlockException::invalid($op, "$name must be a bool, got " . get_debug_type($v));
        }
        return $v;
    }

    private static function show(mixed $v): string
    {
        return is_string($v) ? json_encode($v, JSON_INVALID_UTF8_SUBSTITUTE) : get_debug_type($v);
    }
}
