<?php

declare(strict_types=1);

namespace Quorumlock;

use FFI;
use FFI\CData;
use Quorumlock\Exception\QuorumlockException;

/**
 * Finds and loads libquorumlock through PHP FFI, once per process.
 *
 * Lookup, first hit wins:
 *   1. Library::load('/path/libquorumlock.so') called before the first client;
 *   2. the environment variable QUORUMLOCK_LIB (a file, or a directory holding libquorumlock.so);
 *   3. a copy bundled in the package: <package>/lib/libquorumlock.so;
 *   4. the standard prefixes /usr/local/lib, /usr/lib, /usr/lib/<multiarch>, /usr/lib64
 *      (where `make install PREFIX=...` puts it);
 *   5. "libquorumlock.so.0" through the dynamic loader's own search (ld.so.cache).
 * With opcache.preload=<package>/preload.php (PHP-FPM with ffi.enable=preload) the library was
 * loaded at server start and is taken from the FFI scope "quorumlock".
 */
final class Library
{
    /** The FFI scope name that preload.php registers. */
    public const SCOPE = 'quorumlock';

    private static ?FFI $ffi = null;
    private static ?string $path = null;
    private static ?string $explicit = null;

    /** Uses the library at $path (a file or a directory); only before the first use. */
    public static function load(string $path): void
    {
        if (self::$ffi !== null) {
            throw QuorumlockException::invalid('load', 'the library is already loaded from ' . self::$path);
        }
        self::$explicit = $path;
        self::ffi();
    }

    /** The path the library was loaded from ("scope:quorumlock" when preloaded). */
    public static function path(): string
    {
        self::ffi();
        return (string) self::$path;
    }

    /** The library's version ("0.2.0"). */
    public static function version(): string
    {
        return (string) self::ffi()->quorumlock_version();
    }

    /**
     * The candidate paths in lookup order (without the final soname search).
     *
     * @return list<string>
     */
    public static function candidates(): array
    {
        $given = self::$explicit ?? (getenv('QUORUMLOCK_LIB') ?: null);
        if ($given !== null) {
            return [is_dir($given) ? rtrim($given, '/') . '/libquorumlock.so' : $given];
        }
        $dirs = [dirname(__DIR__) . '/lib', '/usr/local/lib', '/usr/lib'];
        $machine = php_uname('m');
        $multiarch = ['x86_64' => 'x86_64-linux-gnu', 'aarch64' => 'aarch64-linux-gnu'][$machine] ?? null;
        if ($multiarch !== null) {
            $dirs[] = "/usr/lib/$multiarch";
        }
        $dirs[] = '/usr/lib64';
        $out = [];
        foreach ($dirs as $d) {
            $out[] = "$d/libquorumlock.so.0";
            $out[] = "$d/libquorumlock.so";
        }
        return $out;
    }

    /** The FFI declarations the package uses (src/quorumlock.h). */
    public static function declarations(): string
    {
        $h = file_get_contents(__DIR__ . '/quorumlock.h');
        if ($h === false) {
            throw QuorumlockException::invalid('load', 'cannot read ' . __DIR__ . '/quorumlock.h');
        }
        return $h;
    }

    /**
     * The declarations with FFI_SCOPE "quorumlock" and FFI_LIB set to the library found by the
     * lookup, for php.ini's ffi.preload (bin/quorumlock-ffi-header prints it).
     */
    public static function scopeHeader(?string $path = null): string
    {
        if ($path !== null) {
            self::$explicit = $path;
        }
        return '#define FFI_SCOPE "' . self::SCOPE . "\"\n#define FFI_LIB \"" . addcslashes(self::find(), "\"\\") . "\"\n"
            . self::declarations();
    }

    /**
     * For opcache.preload (see preload.php): loads the library into the FFI scope "quorumlock",
     * which survives across requests, unless ffi.preload already did. FFI::load() refuses to
     * run with opcache.preload_user (a server started as root): use ffi.preload there.
     */
    public static function preload(?string $path = null): void
    {
        try {
            FFI::scope(self::SCOPE);
            return;
        } catch (\Throwable) {
            // Not loaded by ffi.preload: load it here.
        }
        $file = sys_get_temp_dir() . '/quorumlock-ffi-' . getmypid() . '-' . bin2hex(random_bytes(4)) . '.h';
        if (file_put_contents($file, self::scopeHeader($path)) === false) {
            throw QuorumlockException::invalid('preload', "cannot write $file");
        }
        try {
            FFI::load($file);
        } finally {
            @unlink($file);
        }
    }

    /** @internal The loaded FFI instance. */
    public static function ffi(): FFI
    {
        if (self::$ffi !== null) {
            return self::$ffi;
        }
        if (!extension_loaded('ffi')) {
            throw QuorumlockException::invalid('load', 'the PHP FFI extension is not loaded (Debian: php8.2-cli ships it; enable extension=ffi)');
        }
        if (self::$explicit === null) {
            try {
                self::$ffi = FFI::scope(self::SCOPE);
                self::$path = 'scope:' . self::SCOPE;
                return self::$ffi;
            } catch (\Throwable) {
                // Not preloaded: load it ourselves below.
            }
        }
        $lib = self::find();
        try {
            self::$ffi = FFI::cdef(self::declarations(), $lib);
        } catch (\Throwable $e) {
            $hint = str_contains($e->getMessage(), 'ffi.enable')
                ? ' (set ffi.enable=true, or preload the package with opcache.preload=' . dirname(__DIR__) . '/preload.php; see php/README.md)'
                : '';
            throw QuorumlockException::of(
                QuorumlockException::QL_INVALID,
                "quorumlock: load: QL_INVALID: cannot load $lib: " . $e->getMessage() . $hint,
                'load',
                previous: $e,
            );
        }
        self::$path = $lib;
        $version = (string) self::$ffi->quorumlock_version();
        if (!str_starts_with($version, '0.')) {
            self::$ffi = null;
            throw QuorumlockException::invalid('load', "$lib is libquorumlock $version; this package needs 0.x");
        }
        return self::$ffi;
    }

    private static function find(): string
    {
        $candidates = self::candidates();
        $explicit = self::$explicit !== null || (getenv('QUORUMLOCK_LIB') ?: null) !== null;
        foreach ($candidates as $c) {
            if (is_file($c)) {
                return $c;
            }
        }
        if ($explicit) {
            throw QuorumlockException::invalid('load', "no libquorumlock at {$candidates[0]} (QUORUMLOCK_LIB or Library::load)");
        }
        // The dynamic loader's own search (ld.so.cache after ldconfig, LD_LIBRARY_PATH).
        return 'libquorumlock.so.0';
    }

    // ---- conversions shared by Client and Lock (internal) ----

    /** @internal Reads and frees a C error, and returns the exception for it. */
    public static function error(int $code, ?CData $err, string $operation, ?string $resource = null): QuorumlockException
    {
        $ffi = self::ffi();
        $message = '';
        $nodes = [];
        $attempts = 0;
        $lost = 0;
        if ($err !== null && !FFI::isNull($err)) {
            $code = (int) $ffi->quorumlock_error_code($err);
            $message = self::text(fn ($buf, $len, $n) => $ffi->quorumlock_error_message($err, $buf, $len, $n));
            $attempts = (int) $ffi->quorumlock_error_attempts($err);
            $lost = (int) $ffi->quorumlock_error_lost_reason($err);
            $count = (int) $ffi->quorumlock_error_node_count($err);
            $kind = $ffi->new('uint32_t');
            $lat = $ffi->new('uint64_t');
            for ($i = 0; $i < $count; $i++) {
                $ffi->quorumlock_error_node_kind($err, $i, FFI::addr($kind));
                $ffi->quorumlock_error_node_latency_us($err, $i, FFI::addr($lat));
                $addr = self::text(fn ($buf, $len, $n) => $ffi->quorumlock_error_node_address($err, $i, $buf, $len, $n));
                $latency = $lat->cdata;
                $nodes[] = new NodeReport(
                    $i,
                    $addr,
                    (int) $kind->cdata,
                    (string) $ffi->quorumlock_node_kind_name($kind->cdata),
                    ($latency < 0 || $latency >= PHP_INT_MAX) ? null : (int) $latency,
                );
            }
            $ffi->quorumlock_error_free($err);
        }
        $name = (string) $ffi->quorumlock_result_name($code);
        $head = "quorumlock: $operation";
        if ($resource !== null) {
            $head .= ' ' . json_encode(strlen($resource) > 80 ? substr($resource, 0, 80) . '...' : $resource, JSON_INVALID_UTF8_SUBSTITUTE | JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE);
        }
        $text = str_starts_with($message, $name) ? $message : ($message === '' ? $name : "$name: $message");
        return QuorumlockException::of($code, "$head: $text", $operation, $nodes, $attempts, $lost);
    }

    /** @internal Calls a snprintf-style C function twice and returns its text. */
    public static function text(callable $call): string
    {
        $ffi = self::ffi();
        $n = $ffi->new('size_t');
        $call(null, 0, FFI::addr($n));
        $len = (int) $n->cdata;
        $buf = $ffi->new('char[' . ($len + 1) . ']');
        $call($buf, $len + 1, FFI::addr($n));
        return FFI::string($buf, min($len, (int) $n->cdata));
    }
}
