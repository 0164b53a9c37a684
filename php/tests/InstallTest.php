<?php

declare(strict_types=1);

namespace Quorumlock\Tests;

use PHPUnit\Framework\TestCase;

/**
 * The documented install steps, each in a fresh process whose environment holds only PATH,
 * QL_NODES and what the step names: QUORUMLOCK_LIB, a bundled lib/, or the preload recipe for
 * PHP-FPM (checked under php-cgi, a SAPI where ffi.enable=preload really restricts FFI).
 */
final class InstallTest extends TestCase
{
    private static function nodes(): string
    {
        return implode(',', Support::nodes());
    }

    public function testExampleRunsWithQuorumlockLib(): void
    {
        [$code, $out, $err] = Support::run(
            [...Support::php(), dirname(__DIR__) . '/examples/hello.php'],
            ['QL_NODES' => self::nodes(), 'QUORUMLOCK_LIB' => Support::lib()],
        );
        $this->assertSame(0, $code, $out . $err);
        $this->assertStringContainsString('released', $out);
    }

    public function testBundledLibraryIsFoundWithoutEnvironment(): void
    {
        $dir = sys_get_temp_dir() . '/ql-php-bundle-' . bin2hex(random_bytes(4));
        mkdir("$dir/lib", 0o777, true);
        exec('cp -r ' . escapeshellarg(dirname(__DIR__) . '/src') . ' ' . escapeshellarg(dirname(__DIR__) . '/autoload.php') . ' ' . escapeshellarg(dirname(__DIR__) . '/examples') . ' ' . escapeshellarg($dir));
        symlink(realpath(Support::lib()), "$dir/lib/libquorumlock.so");
        $probe = "$dir/probe.php";
        file_put_contents($probe, '<?php require __DIR__ . "/autoload.php"; echo Quorumlock\Library::path(), "\n";');
        try {
            [$code, $out, $err] = Support::run([...Support::php(), $probe], []);
            $this->assertSame(0, $code, $out . $err);
            $this->assertSame("$dir/lib/libquorumlock.so", trim($out));
            [$code, $out, $err] = Support::run([...Support::php(), "$dir/examples/hello.php"], ['QL_NODES' => self::nodes()]);
            $this->assertSame(0, $code, $out . $err);
            $this->assertStringContainsString('released', $out);
        } finally {
            exec('rm -rf ' . escapeshellarg($dir));
        }
    }

    /** @return iterable<string, array{0: list<string>, 1: array<string, string>, 2: string}> */
    public static function brokenSetups(): iterable
    {
        yield 'QUORUMLOCK_LIB names nothing' => [['-d', 'ffi.enable=1'], ['QUORUMLOCK_LIB' => '/nonexistent/libquorumlock.so'], 'no libquorumlock at /nonexistent'];
        yield 'QUORUMLOCK_LIB is not a library' => [['-d', 'ffi.enable=1'], ['QUORUMLOCK_LIB' => __FILE__], 'cannot load'];
        yield 'FFI turned off' => [['-d', 'ffi.enable=0'], [], 'ffi.enable'];
    }

    /**
     * @dataProvider brokenSetups
     * @param list<string>          $ini
     * @param array<string, string> $env
     */
    public function testBrokenSetupsAreTypedErrors(array $ini, array $env, string $says): void
    {
        $script = '<?php require ' . var_export(dirname(__DIR__) . '/autoload.php', true) . ';'
            . ' try { new Quorumlock\Client(["redis://127.0.0.1:1"]); echo "no error"; }'
            . ' catch (Quorumlock\Exception\InvalidArgumentException $e) { echo $e->getCode(), " ", $e->getMessage(); }';
        [$code, $out, $err] = Support::run([PHP_BINARY, ...$ini, '-r', substr($script, 6)], $env + ['QUORUMLOCK_LIB' => Support::lib()]);
        $this->assertSame(0, $code, $out . $err);
        $this->assertStringStartsWith('7 ', $out);
        $this->assertStringContainsString($says, $out);
    }

    public function testPreloadRecipeForPhpFpm(): void
    {
        $cgi = trim((string) shell_exec('command -v php-cgi8.2 || command -v php-cgi'));
        $this->assertNotSame('', $cgi, 'php-cgi is needed for this test (make deps-php installs php8.2-cgi)');
        $header = tempnam(sys_get_temp_dir(), 'ql-ffi-h');
        [$code, $out, $err] = Support::run([PHP_BINARY, dirname(__DIR__) . '/bin/quorumlock-ffi-header'], ['QUORUMLOCK_LIB' => Support::lib()]);
        $this->assertSame(0, $code, $err);
        file_put_contents($header, $out);
        $script = tempnam(sys_get_temp_dir(), 'ql-fpm') . '.php';
        file_put_contents($script, <<<'PHP'
            <?php
            $c = new Quorumlock\Client(explode(',', getenv('QL_NODES')), ['nodeTimeoutMs' => 250]);
            $l = $c->acquire('preload:' . getmypid(), 2000);
            echo Quorumlock\Library::path(), ' ', $l->remaining() > 0 ? 'held' : 'not held', ' ', $l->release() ? 'released' : 'kept', "\n";
            try { FFI::cdef('int abs(int);'); echo "FFI open to all code\n"; } catch (FFI\Exception $e) { echo "FFI restricted\n"; }
            PHP);
        $preload = [$cgi, '-q', '-d', 'opcache.enable=1', '-d', 'opcache.preload=' . dirname(__DIR__) . '/preload.php', '-d', 'ffi.enable=preload'];
        if (function_exists('posix_geteuid') ? posix_geteuid() === 0 : trim((string) shell_exec('id -u')) === '0') {
            // A server started as root preloads as opcache.preload_user, which needs ffi.preload.
            $preload = [...$preload, '-d', 'opcache.preload_user=root', '-d', "ffi.preload=$header"];
        }
        try {
            [$code, $out, $err] = Support::run([...$preload, $script], ['QL_NODES' => self::nodes(), 'QUORUMLOCK_LIB' => Support::lib()]);
            $this->assertSame(0, $code, $out . $err);
            $this->assertStringContainsString('scope:quorumlock held released', $out);
            $this->assertStringContainsString('FFI restricted', $out, 'php-cgi must enforce ffi.enable=preload, or this test proves nothing');
            // The same SAPI without the recipe: a typed error that names the fix.
            [$code, $out, $err] = Support::run(
                [$cgi, '-q', '-d', 'ffi.enable=preload', '-d', 'auto_prepend_file=' . dirname(__DIR__) . '/autoload.php', $script],
                ['QL_NODES' => self::nodes(), 'QUORUMLOCK_LIB' => Support::lib()],
            );
            $this->assertStringContainsString('QL_INVALID', $out . $err);
            $this->assertStringContainsString('opcache.preload=', $out . $err);
        } finally {
            unlink($header);
            unlink($script);
        }
    }

    public function testComposerJsonMapsTheAutoloader(): void
    {
        $json = json_decode((string) file_get_contents(dirname(__DIR__) . '/composer.json'), true, 512, JSON_THROW_ON_ERROR);
        $this->assertSame('quorumlock/quorumlock', $json['name']);
        $this->assertSame(['Quorumlock\\' => 'src/'], $json['autoload']['psr-4']);
        $this->assertArrayHasKey('ext-ffi', $json['require']);
        foreach (new \RecursiveIteratorIterator(new \RecursiveDirectoryIterator(dirname(__DIR__) . '/src', \FilesystemIterator::SKIP_DOTS)) as $f) {
            if ($f->getExtension() === 'php') {
                $rel = substr($f->getPathname(), strlen(dirname(__DIR__) . '/src/'), -4);
                $this->assertTrue(class_exists('Quorumlock\\' . str_replace('/', '\\', $rel)), "PSR-4 path $rel");
            }
        }
    }
}
