<?php

declare(strict_types=1);

namespace Quorumlock\Tests;

use PHPUnit\Framework\TestCase;
use Quorumlock\Client;
use Quorumlock\Exception\ConnectionFailedException;
use Quorumlock\Exception\InvalidArgumentException;

/**
 * TLS end to end (docs/SECURITY.md): a mutual-TLS node of its own from ql-harness, the CA and
 * client certificate given as node URL parameters, typed errors for a wrong CA and #insecure.
 */
final class TlsTest extends TestCase
{
    /** @var array<string, mixed>|null */
    private static ?array $info = null;

    public static function setUpBeforeClass(): void
    {
        $harness = getenv('QL_HARNESS') ?: dirname(__DIR__, 2) . '/target/debug/ql-harness';
        $cmd = [$harness, 'start', '--nodes', '1', '--persist', 'none', '--mtls', '--parent', (string) getmypid()];
        [$code, $out, $err] = Support::run($cmd, self::env());
        if ($code !== 0) {
            throw new \RuntimeException("ql-harness start --mtls failed: $err");
        }
        $lines = explode("\n", trim($out));
        self::$info = json_decode(end($lines), true, 512, JSON_THROW_ON_ERROR);
    }

    public static function tearDownAfterClass(): void
    {
        $harness = getenv('QL_HARNESS') ?: dirname(__DIR__, 2) . '/target/debug/ql-harness';
        Support::run([$harness, 'stop', self::$info['run_dir']], self::env());
    }

    /** @return array<string, string> The harness's run root, when make chose one. */
    private static function env(): array
    {
        $root = getenv('QL_RUN_ROOT');
        return $root === false ? [] : ['QL_RUN_ROOT' => $root];
    }

    private static function url(string $ca): string
    {
        $base = explode('?', self::$info['nodes'][0]['url'])[0];
        $t = self::$info['tls'];
        return $base . '?' . http_build_query(['tls_ca' => $ca, 'tls_cert' => $t['cert'], 'tls_key' => $t['key']]);
    }

    private static function client(string $url): Client
    {
        return new Client([$url], [
            'quarantine' => 'off', 'requireQuorum' => true, 'connectTimeoutMs' => 10000,
            'nodeTimeoutMs' => Support::NODE_TIMEOUT_MS,
        ]);
    }

    public function testLocksOverMutualTls(): void
    {
        $client = self::client(self::url(self::$info['tls']['ca']));
        $lock = $client->acquire(Support::name('php:tls'), 5000);
        $this->assertTrue($lock->release());
    }

    public function testAWrongCaIsAConnectionErrorNamingTheNode(): void
    {
        try {
            self::client(self::url(self::$info['tls']['other_ca']));
            $this->fail('connected with a wrong CA');
        } catch (ConnectionFailedException $e) {
            $this->assertSame('QL_CONNECTION', $e->codeName());
            $this->assertSame('Tls', $e->nodes()[0]->kindName);
            $this->assertStringContainsString(self::$info['nodes'][0]['addr'], $e->getMessage());
            $this->assertStringContainsString('UnknownIssuer', $e->getMessage());
        }
    }

    public function testInsecureIsRefused(): void
    {
        $this->expectException(InvalidArgumentException::class);
        $this->expectExceptionMessage('#insecure');
        self::client(explode('?', self::$info['nodes'][0]['url'])[0] . '#insecure');
    }
}
