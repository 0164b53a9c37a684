<?php

declare(strict_types=1);

namespace Quorumlock\Tests;

use PHPUnit\Framework\TestCase;
use Quorumlock\Client;
use Quorumlock\Exception\InvalidArgumentException;
use Quorumlock\Exception\QuorumlockException;
use Quorumlock\RedLock;

/** Bad input gets InvalidArgumentException (code QL_INVALID = 7), never a crash or a TypeError. */
final class BadInputTest extends TestCase
{
    /** @return iterable<string, array{0: callable}> */
    public static function badClients(): iterable
    {
        $ok = fn () => Support::nodes();
        yield 'nodes null' => [fn () => new Client(null)];
        yield 'nodes string' => [fn () => new Client('redis://127.0.0.1:6379')];
        yield 'nodes empty' => [fn () => new Client([])];
        yield 'nodes map' => [fn () => new Client(['a' => 'redis://127.0.0.1:6379'])];
        yield 'node int' => [fn () => new Client([6379])];
        yield 'node null' => [fn () => new Client([null])];
        yield 'node invalid UTF-8' => [fn () => new Client(["redis://127.0.0.1:6379/\xc3\x28"])];
        yield 'node not a URL' => [fn () => new Client(['not a url'])];
        yield 'node wrong scheme' => [fn () => new Client(['http://127.0.0.1:6379'])];
        yield 'settings string' => [fn () => new Client($ok(), 'fast')];
        yield 'setting unknown' => [fn () => new Client($ok(), ['quarantien' => 'off'])];
        yield 'quarantine bad' => [fn () => new Client($ok(), ['quarantine' => 'maybe'])];
        yield 'quarantine bool' => [fn () => new Client($ok(), ['quarantine' => false])];
        yield 'eviction bad' => [fn () => new Client($ok(), ['evictionCheck' => 1])];
        yield 'maxTtl negative' => [fn () => new Client($ok(), ['maxTtlMs' => -1])];
        yield 'maxTtl float' => [fn () => new Client($ok(), ['maxTtlMs' => 1.5])];
        yield 'maxTtl zero' => [fn () => new Client($ok(), ['maxTtlMs' => 0])];
        yield 'notify string' => [fn () => new Client($ok(), ['notify' => 'yes'])];
        yield 'keyPrefix int' => [fn () => new Client($ok(), ['keyPrefix' => 7])];
        yield 'drift string' => [fn () => new Client($ok(), ['driftFactor' => '0.01'])];
        yield 'drift too big' => [fn () => new Client($ok(), ['driftFactor' => 0.9])];
        yield 'default option wrong type' => [fn () => new Client($ok(), ['retryCount' => '3'])];
        yield 'default retryCount negative' => [fn () => new Client($ok(), ['retryCount' => -1])];
        yield 'default retryCount over u32' => [fn () => new Client($ok(), ['retryCount' => 1 << 40])];
    }

    /** @dataProvider badClients */
    public function testBadClientInput(callable $make): void
    {
        $this->assertInvalid($make);
    }

    /** @return iterable<string, array{0: mixed, 1: mixed, 2?: mixed}> */
    public static function badLocks(): iterable
    {
        yield 'resource null' => [null, 1000];
        yield 'resource int' => [42, 1000];
        yield 'resource empty' => ['', 1000];
        yield 'resource too long' => [str_repeat('r', 1025), 1000];
        yield 'resource list empty' => [[], 1000];
        yield 'resource list with int' => [['a', 1], 1000];
        yield 'resource map' => [['a' => 'b'], 1000];
        yield 'resource object' => [new \stdClass(), 1000];
        yield 'ttl zero' => ['r', 0];
        yield 'ttl negative' => ['r', -1];
        yield 'ttl float' => ['r', 1000.0];
        yield 'ttl string' => ['r', '1000'];
        yield 'ttl null' => ['r', null];
        yield 'ttl over max' => ['r', 60_001];
        yield 'ttl huge' => ['r', PHP_INT_MAX];
        yield 'ttl below drift' => ['r', 1];
        yield 'options string' => ['r', 1000, 'fast'];
        yield 'option unknown' => ['r', 1000, ['retries' => 1]];
        yield 'retryCount string' => ['r', 1000, ['retryCount' => '1']];
        yield 'waitMs negative' => ['r', 1000, ['waitMs' => -5]];
        yield 'fenced int' => ['r', 1000, ['fenced' => 1]];
        yield 'value short' => ['r', 1000, ['value' => 'short']];
        yield 'value not printable' => ['r', 1000, ['value' => "\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10"]];
        yield 'value invalid UTF-8' => ['r', 1000, ['value' => str_repeat("\xff", 20)]];
        yield 'fence counter ttl too short' => ['r', 1000, ['fenceCounterTtlMs' => 5]];
        yield 'minValidity over ttl' => ['r', 1000, ['minValidityMs' => 5000]];
    }

    /** @dataProvider badLocks */
    public function testBadLockInput(mixed $resource, mixed $ttl, mixed $options = []): void
    {
        $client = Support::client();
        $this->assertInvalid(fn () => $client->lock($resource, $ttl, $options));
        $this->assertInvalid(fn () => $client->acquire($resource, $ttl, $options));
        $this->assertInstanceOf(InvalidArgumentException::class, $client->lastError());
    }

    public function testBadLockUse(): void
    {
        $client = Support::client();
        $lock = $client->acquire(Support::name('bad-use'), 2000);
        $this->assertInvalid(fn () => $lock->extend(-1));
        $this->assertInvalid(fn () => $lock->extend('1000'));
        $this->assertInvalid(fn () => $lock->extend(0));
        $this->assertInvalid(fn () => $lock->setAutoExtend('yes'));
        $this->assertTrue($lock->release());
        $this->assertInvalid(fn () => $lock->extend(1000)); // released
        $this->assertInvalid(fn () => $lock->setAutoExtend(true));
    }

    public function testBadRedLockInput(): void
    {
        $this->assertInvalid(fn () => new RedLock(null));
        $this->assertInvalid(fn () => new RedLock([]));
        $this->assertInvalid(fn () => new RedLock([['127.0.0.1']]));
        $this->assertInvalid(fn () => new RedLock([['127.0.0.1', '6379', 0.1]]));
        $this->assertInvalid(fn () => new RedLock([['127.0.0.1', 6379, 'soon']]));
        $this->assertInvalid(fn () => new RedLock([new \stdClass()]));
        $this->assertInvalid(fn () => new RedLock(Support::nodes(), -1));
        $this->assertInvalid(fn () => new RedLock(Support::nodes(), 200, 3.5));
        $redLock = new RedLock(Support::nodes());
        $this->assertInvalid(fn () => $redLock->lock(null, 1000));
        $this->assertInvalid(fn () => $redLock->lock('r', -1));
        $this->assertInvalid(fn () => $redLock->lock('r', '1000'));
        $this->assertInvalid(fn () => $redLock->lock('', 1000));
        $this->assertInvalid(fn () => $redLock->unlock('token'));
        $this->assertInvalid(fn () => $redLock->unlock(['resource' => 'r']));
        $this->assertFalse($redLock->unlock(false));
    }

    private function assertInvalid(callable $f): void
    {
        try {
            $f();
        } catch (InvalidArgumentException $e) {
            $this->assertSame(QuorumlockException::QL_INVALID, $e->getCode());
            $this->assertSame('QL_INVALID', $e->codeName());
            $this->assertStringContainsString('QL_INVALID', $e->getMessage());
            return;
        }
        $this->fail('expected InvalidArgumentException (QL_INVALID)');
    }
}
