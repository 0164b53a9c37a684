<?php

declare(strict_types=1);

namespace Quorumlock\Tests;

use PHPUnit\Framework\TestCase;
use Quorumlock\Exception\LockBusyException;
use Quorumlock\Exception\QuorumNotReachedException;
use Quorumlock\RedLock;

/** redlock-php's shape: lock() gives an array or false, unlock() takes that array. */
final class RedLockTest extends TestCase
{
    /** @return list<array{0: string, 1: int, 2: float}> */
    private static function servers(): array
    {
        return array_map(function (string $url): array {
            $p = parse_url($url);
            return [$p['host'], $p['port'], 0.5];
        }, Support::nodes());
    }

    public function testLockLikeRedlockPhp(): void
    {
        $redLock = new RedLock(self::servers(), 200, 3, Support::REDLOCK_SETTINGS);
        $resource = Support::name('my_test_resource');
        $lockA = $redLock->lock($resource, 500);
        $this->assertIsArray($lockA);
        $this->assertSame(['validity', 'resource', 'token'], array_keys($lockA));
        $this->assertSame($resource, $lockA['resource']);
        $this->assertIsInt($lockA['validity']);
        $this->assertGreaterThan(0, $lockA['validity']);
        $this->assertLessThanOrEqual(500, $lockA['validity']);

        $this->assertFalse($redLock->lock($resource, 500));
        $this->assertInstanceOf(LockBusyException::class, $redLock->getLastError());

        usleep(550_000); // A expired
        $lockB = $redLock->lock($resource, 5000);
        $this->assertIsArray($lockB);
        $this->assertNotSame($lockA['token'], $lockB['token']);
        $this->assertFalse($redLock->unlock($lockA), 'A had expired');
        $this->assertTrue($redLock->unlock($lockB));
        $this->assertFalse($redLock->unlock($lockB), 'already unlocked');

        $lockC = $redLock->lock($resource, 5000);
        $this->assertIsArray($lockC);
        $this->assertTrue((new RedLock(self::servers(), 200, 3, Support::REDLOCK_SETTINGS))->unlock($lockC), 'another RedLock of this process can unlock');
    }

    public function testUrlsAndPhpredisLikeObjects(): void
    {
        $objects = array_map(fn (array $s) => new class ($s[0], $s[1]) {
            public function __construct(private string $h, private int $p)
            {
            }

            public function getHost(): string
            {
                return $this->h;
            }

            public function getPort(): int
            {
                return $this->p;
            }

            public function getDbNum(): int
            {
                return 0;
            }
        }, self::servers());
        $byObject = new RedLock($objects, 50, 1, Support::REDLOCK_SETTINGS);
        $byUrl = new RedLock(Support::nodes(), 50, 1, Support::REDLOCK_SETTINGS);
        $resource = Support::name('objects');
        $lock = $byObject->lock($resource, 2000);
        $this->assertIsArray($lock);
        $this->assertFalse($byUrl->lock($resource, 2000), 'both point at the same nodes');
        $this->assertTrue($byObject->unlock($lock));
    }

    public function testRetriesLikeRedlockPhp(): void
    {
        $holder = new RedLock(Support::nodes(), 200, 3, Support::REDLOCK_SETTINGS);
        $resource = Support::name('retries');
        $held = $holder->lock($resource, 5000);
        $waiter = new RedLock(Support::nodes(), 100, 3, Support::REDLOCK_SETTINGS); // 3 attempts, 50..100 ms apart
        $t = hrtime(true);
        $this->assertFalse($waiter->lock($resource, 5000));
        $ms = (hrtime(true) - $t) / 1e6;
        $this->assertGreaterThanOrEqual(100, $ms, 'two waits of at least 50 ms');
        $this->assertLessThan(2000, $ms);
        $this->assertSame(3, $waiter->getLastError()->attempts());
        $holder->unlock($held);
    }

    public function testATtlBelowTheDriftIsFalseAsInRedlockPhp(): void
    {
        $redLock = new RedLock(Support::nodes());
        $this->assertFalse($redLock->lock(Support::name('tiny'), 2));
    }

    public function testUnreachableServersGiveFalseWithTheReason(): void
    {
        $redLock = new RedLock([['127.0.0.1', 1, 0.2], ['127.0.0.1', 2, 0.2], ['127.0.0.1', 3, 0.2]], 10, 1);
        $this->assertFalse($redLock->lock('r', 1000));
        $e = $redLock->getLastError();
        $this->assertInstanceOf(QuorumNotReachedException::class, $e);
        $this->assertSame(2, $e->getCode());
        $this->assertCount(3, $e->nodes());
    }
}
