<?php

declare(strict_types=1);

namespace Quorumlock\Tests;

use PHPUnit\Framework\TestCase;

/** src/quorumlock.h (what FFI parses) must match include/quorumlock.h, the generated header. */
final class HeaderTest extends TestCase
{
    public function testDeclarationsMatchTheCHeader(): void
    {
        $c = dirname(__DIR__, 2) . '/include/quorumlock.h';
        $this->assertFileExists($c, 'run from the repository');
        $norm = fn (string $s): string => trim((string) preg_replace('/\s+/', ' ', str_replace(
            ['const uint8_t *', 'quorumlock_result '],
            ['const char *', 'uint32_t '],
            $s,
        )));
        $text = (string) preg_replace('~//[^\n]*~', '', (string) file_get_contents($c));
        preg_match_all('/^[a-z][^;#{}]*\([^;]*\);/m', $text, $m);
        $cDecls = [];
        foreach ($m[0] as $d) {
            if (str_starts_with($d, 'typedef')) {
                continue;
            }
            $d = $norm($d);
            preg_match('/(\w+)\(/', $d, $name);
            $cDecls[$name[1]] = $d;
        }
        $php = (string) preg_replace('~/\*.*?\*/~s', '', (string) file_get_contents(dirname(__DIR__) . '/src/quorumlock.h'));
        $count = 0;
        foreach (explode("\n", $php) as $line) {
            $line = trim($line);
            if ($line === '' || str_starts_with($line, 'typedef struct')) {
                continue;
            }
            preg_match('/(\w+)\(/', $line, $name);
            $this->assertArrayHasKey($name[1], $cDecls, "$name[1] is not in include/quorumlock.h");
            $this->assertSame($cDecls[$name[1]], $norm($line), "$name[1] differs from include/quorumlock.h");
            $count++;
        }
        $this->assertGreaterThan(50, $count);
    }
}
