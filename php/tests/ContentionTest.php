<?php

declare(strict_types=1);

namespace Quorumlock\Tests;

use PHPUnit\Framework\TestCase;

/**
 * Processes contend for one resource; each records its critical-section window on the shared
 * monotonic clock. No two windows may overlap, and every holder still had validity left when
 * it left. The same workers without the lock must show overlaps: the check can fail.
 */
final class ContentionTest extends TestCase
{
    private const WORKERS = 4;
    private const ITERATIONS = 8;

    public function testNoTwoHoldersAtOnce(): void
    {
        $windows = $this->contend('lock');
        $this->assertCount(self::WORKERS * self::ITERATIONS, $windows);
        $this->assertSame([], self::overlaps($windows), 'two holders at once');
        foreach ($windows as [, , $pid, $left]) {
            $this->assertGreaterThan(0, $left, "worker $pid held an expired lock");
        }
        $this->assertCount(self::WORKERS, array_unique(array_column($windows, 2)));
    }

    public function testTheCheckFindsOverlapsWithoutTheLock(): void
    {
        $windows = $this->contend('nolock');
        $this->assertCount(self::WORKERS * self::ITERATIONS, $windows);
        $this->assertNotSame([], self::overlaps($windows), 'the overlap check must fire without a lock');
    }

    /** @return list<array{0: int, 1: int, 2: int, 3: int}> */
    private function contend(string $mode): array
    {
        $log = tempnam(sys_get_temp_dir(), 'ql-php-contention');
        $resource = Support::name('contention');
        $env = ['QL_NODES' => implode(',', Support::nodes()), 'QUORUMLOCK_LIB' => Support::lib(), 'PATH' => (string) getenv('PATH')];
        $procs = [];
        $errs = [];
        for ($i = 0; $i < self::WORKERS; $i++) {
            $cmd = [...Support::php(), __DIR__ . '/worker.php', $mode, $resource, (string) self::ITERATIONS, $log];
            $procs[] = proc_open($cmd, [1 => ['file', '/dev/null', 'w'], 2 => ['pipe', 'w']], $pipes, null, $env);
            $errs[] = $pipes[2];
        }
        foreach ($procs as $i => $p) {
            $err = stream_get_contents($errs[$i]);
            $this->assertSame(0, proc_close($p), "worker $i failed: $err");
        }
        $windows = [];
        foreach (file($log, FILE_IGNORE_NEW_LINES | FILE_SKIP_EMPTY_LINES) as $line) {
            $windows[] = array_map('intval', explode(' ', $line));
        }
        unlink($log);
        return $windows;
    }

    /**
     * @param list<array{0: int, 1: int, 2: int, 3: int}> $windows
     * @return list<string>
     */
    private static function overlaps(array $windows): array
    {
        usort($windows, fn ($a, $b) => $a[0] <=> $b[0]);
        $out = [];
        for ($i = 1; $i < count($windows); $i++) {
            if ($windows[$i][0] < $windows[$i - 1][1]) {
                $out[] = "pid {$windows[$i][2]} entered before pid {$windows[$i - 1][2]} left";
            }
        }
        return $out;
    }
}
