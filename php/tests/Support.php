<?php

declare(strict_types=1);

namespace Quorumlock\Tests;

use Quorumlock\Client;

/** Nodes and helpers shared by the tests (run under `ql-harness exec`, which sets QL_NODES). */
final class Support
{
    /** Node timeout for a loaded 2-core machine (docs/TESTING.md §2.2). */
    public const NODE_TIMEOUT_MS = 250;

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

    /** The library the tests use (QUORUMLOCK_LIB, set by make test-php). */
    public static function lib(): string
    {
        return \Quorumlock\Library::path();
    }
}
