<?php

declare(strict_types=1);

namespace Quorumlock\Tests;

use Quorumlock\Client;

/** Nodes and helpers shared by the tests (run under `ql-harness exec`, which sets QL_NODES). */
final class Support
{
    /** Node timeout for a loaded 2-core machine (docs/TESTING.md §2.2). */
    public const NODE_TIMEOUT_MS = 250;

    /** Client settings for a RedLock on the test nodes (its default node timeout is TTL / 200). */
    public const REDLOCK_SETTINGS = ['nodeTimeoutMs' => self::NODE_TIMEOUT_MS];

    /** @return list<string> */
    public static function nodes(): array
    {
        $nodes = getenv('QL_NODES');
        if ($nodes === false || $nodes === '') {
            throw new \RuntimeException('QL_NODES is not set: run the tests under `ql-harness exec --nodes 3 -- ...` (make test-php)');
        }
        return explode(',', $nodes);
    }

    /** @param array<string, mixed> $settings */
    public static function client(array $settings = []): Client
    {
        return new Client(self::nodes(), $settings + ['nodeTimeoutMs' => self::NODE_TIMEOUT_MS]);
    }

    /** A resource name no other test uses. */
    public static function name(string $prefix): string
    {
        return $prefix . ':' . bin2hex(random_bytes(6));
    }

    /** The php binary with FFI on, as the tests' own process runs. */
    public static function php(): array
    {
        return [PHP_BINARY, '-d', 'ffi.enable=1'];
    }

    /**
     * Runs a command with the given environment (nothing inherited but PATH), returns
     * [exit code, stdout, stderr].
     *
     * @param list<string>          $cmd
     * @param array<string, string> $env
     * @return array{0: int, 1: string, 2: string}
     */
    public static function run(array $cmd, array $env, ?string $cwd = null): array
    {
        $env += ['PATH' => (string) getenv('PATH')];
        $p = proc_open($cmd, [1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes, $cwd, $env);
        if (!is_resource($p)) {
            throw new \RuntimeException('cannot start ' . implode(' ', $cmd));
        }
        $out = stream_get_contents($pipes[1]);
        $err = stream_get_contents($pipes[2]);
        fclose($pipes[1]);
        fclose($pipes[2]);
        return [proc_close($p), (string) $out, (string) $err];
    }

    /** Sends one command to node $i (RESP over a socket) and returns the reply. */
    public static function redis(int $i, string ...$args): mixed
    {
        $addr = (string) preg_replace('~^redis://~', 'tcp://', self::nodes()[$i]);
        $s = stream_socket_client($addr, $errno, $errstr, 5.0);
        if ($s === false) {
            throw new \RuntimeException("node $i: $errstr");
        }
        $cmd = '*' . count($args) . "\r\n";
        foreach ($args as $a) {
            $cmd .= '$' . strlen($a) . "\r\n" . $a . "\r\n";
        }
        fwrite($s, $cmd);
        $reply = self::reply($s);
        fclose($s);
        return $reply;
    }

    /** @return list<mixed> the reply of every node */
    public static function onAll(string ...$args): array
    {
        return array_map(fn (int $i) => self::redis($i, ...$args), array_keys(self::nodes()));
    }

    /** @param resource $s */
    private static function reply($s): mixed
    {
        $line = rtrim((string) fgets($s), "\r\n");
        $rest = substr($line, 1);
        switch ($line[0] ?? '') {
            case '+':
                return $rest;
            case ':':
                return (int) $rest;
            case '$':
                if ((int) $rest < 0) {
                    return null;
                }
                $data = '';
                while (strlen($data) < (int) $rest + 2) {
                    $data .= (string) fread($s, (int) $rest + 2 - strlen($data));
                }
                return substr($data, 0, (int) $rest);
            case '*':
                $out = [];
                for ($i = 0; $i < (int) $rest; $i++) {
                    $out[] = self::reply($s);
                }
                return $out;
            default:
                throw new \RuntimeException("redis: $line");
        }
    }

    /** Waits up to $seconds for $cond to be true. */
    public static function eventually(callable $cond, float $seconds = 5.0): bool
    {
        $end = microtime(true) + $seconds;
        while (!$cond()) {
            if (microtime(true) > $end) {
                return false;
            }
            usleep(10_000);
        }
        return true;
    }

    /** The library the tests use (QUORUMLOCK_LIB, set by make test-php). */
    public static function lib(): string
    {
        return \Quorumlock\Library::path();
    }
}
