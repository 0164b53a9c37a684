<?php

declare(strict_types=1);

namespace Quorumlock\Tests;

use PHPUnit\Framework\TestCase;
use Quorumlock\Client;
use Quorumlock\Exception\ConnectionFailedException;
use Quorumlock\Exception\InvalidArgumentException;
use Quorumlock\Exception\LockBusyException;
use Quorumlock\Exception\LockLostException;
use Quorumlock\Exception\QuorumlockException;
use Quorumlock\Exception\QuorumNotReachedException;
use Quorumlock\Lock;
use Quorumlock\NodeReport;

final class ClientTest extends TestCase
{
    public function testLockReleaseAndRelock(): void
    {
        $client = Support::client();
        $this->assertSame(3, $client->nodeCount());
        $name = Support::name('basic');
        $lock = $client->lock($name, 5000);
        $this->assertInstanceOf(Lock::class, $lock);
        $this->assertGreaterThan(4000, $lock->remaining());
        $this->assertLessThanOrEqual(5000, $lock->remaining());
        $this->assertMatchesRegularExpression('/^[0-9a-f]{40}$/', $lock->value());
        $this->assertTrue($lock->isHeld());
        $this->assertFalse($lock->isLost());
        $this->assertTrue($lock->release());
        $this->assertFalse($lock->release(), 'a second release sends nothing');
        $this->assertTrue($lock->isReleased());
        $this->assertFalse($lock->isLost());
        $this->assertSame(0, $lock->remaining());
        $again = $client->lock($name, 5000);
        $this->assertInstanceOf(Lock::class, $again);
        $this->assertNotSame($lock->value(), $again->value());
        $again->release();
    }

    public function testBusyReturnsFalseWithTheNodeReport(): void
    {
        $a = Support::client();
        $b = Support::client();
        $name = Support::name('busy');
        $held = $a->acquire($name, 5000);
        $this->assertFalse($b->lock($name, 5000, ['retryCount' => 0]));
        $e = $b->lastError();
        $this->assertInstanceOf(LockBusyException::class, $e);
        $this->assertSame(QuorumlockException::QL_BUSY, $e->getCode());
        $this->assertSame('QL_BUSY', $e->codeName());
        $this->assertSame('acquire', $e->operation());
        $this->assertSame(1, $e->attempts());
        $this->assertStringContainsString($name, $e->getMessage());
        $nodes = $e->nodes();
        $this->assertCount(3, $nodes);
        $kinds = array_map(fn (NodeReport $n) => $n->kindName, $nodes);
        $this->assertGreaterThanOrEqual(2, count(array_keys($kinds, 'HeldByOther')), implode(',', $kinds));
        $this->assertSame(0, $nodes[0]->index);
        $this->assertMatchesRegularExpression('/^127\.0\.0\.1:\d+\/0$/', $nodes[0]->address);
        try {
            $b->acquire($name, 5000, ['retryCount' => 0]);
            $this->fail('acquire must throw');
        } catch (LockBusyException $e2) {
            $this->assertSame(1, $e2->getCode());
        }
        $held->release();
        $this->assertInstanceOf(Lock::class, $b->lock($name, 5000));
        $this->assertNull($b->lastError());
    }

    public function testWaitMsWaitsUntilTheLockIsFree(): void
    {
        $client = Support::client();
        $name = Support::name('wait');
        $first = $client->acquire($name, 300); // kept (a dropped Lock is released) until it expires
        $t = hrtime(true);
        $lock = $client->acquire($name, 5000, ['waitMs' => 5000]);
        $ms = (hrtime(true) - $t) / 1e6;
        $this->assertGreaterThan(100, $ms);
        $this->assertLessThan(4000, $ms);
        $this->assertTrue($first->isLost());
        $lock->release();
    }

    public function testExtendAndLoss(): void
    {
        $client = Support::client();
        // Margins for a loaded machine: the extend has 900 ms before the first deadline.
        $lock = $client->acquire(Support::name('extend'), 1000);
        usleep(100_000);
        $lock->extend(1500);
        $this->assertGreaterThan(1000, $lock->remaining(), 'extended past the first deadline');
        // remaining() rounds down: it reads 0 up to 1 ms before the engine calls the lock lost.
        $this->assertTrue(Support::eventually(fn () => $lock->isLost(), 10.0));
        $this->assertSame(0, $lock->remaining());
        $this->assertSame(QuorumlockException::LOST_EXPIRED, $lock->lostReason());
        $this->assertFalse($lock->isHeld());
        try {
            $lock->extend();
            $this->fail('an expired lock must not be extended');
        } catch (LockLostException $e) {
            $this->assertSame(QuorumlockException::QL_LOST, $e->getCode());
            $this->assertSame(QuorumlockException::LOST_EXPIRED, $e->lostReason());
        }
        $lock->release(); // no error; the keys may outlive the local validity by the drift
    }

    public function testAutoExtendKeepsTheLock(): void
    {
        $client = Support::client();
        // TTL 3 s, extended every second: a loaded machine can stall a round or two.
        $lock = $client->acquire(Support::name('auto'), 3000, ['autoExtend' => true]);
        usleep(3_300_000);
        $this->assertGreaterThan(0, $lock->remaining(), 'the engine extended while PHP slept');
        $this->assertFalse($lock->isLost());
        $lock->setAutoExtend(false);
        $this->assertTrue($lock->release());
    }

    public function testFencingTokensGrow(): void
    {
        $client = Support::client();
        $name = Support::name('fence');
        $a = $client->acquire($name, 2000, ['fenced' => true]);
        $t1 = $a->token();
        $a->release();
        $b = $client->acquire($name, 2000, ['fenced' => true]);
        $this->assertGreaterThan($t1, $b->token());
        $this->assertSame([$b->token()], $b->tokens());
        $b->release();
        $plain = $client->acquire($name, 2000);
        $this->assertSame([], $plain->tokens());
        $this->expectException(InvalidArgumentException::class);
        $plain->token();
    }

    public function testMultiResourceLockIsAllOrNothing(): void
    {
        $client = Support::client();
        $once = ['retryCount' => 0];
        $x = Support::name('multi-x');
        $y = Support::name('multi-y');
        $both = $client->acquire([$x, $y], 3000);
        $this->assertSame([$x, $y], $both->resource());
        $this->assertFalse($client->lock($y, 3000, $once));
        $this->assertFalse($client->lock([Support::name('free'), $x], 3000, $once));
        $both->release();
        $this->assertInstanceOf(Lock::class, $client->lock($y, 3000));
    }

    public function testBinaryNamesAreBytes(): void
    {
        $client = Support::client();
        $name = "bin\x00\xff\xfe:" . bin2hex(random_bytes(4)); // not UTF-8, with a NUL: any bytes
        $lock = $client->acquire($name, 3000);
        $this->assertFalse($client->lock($name, 3000, ['retryCount' => 0]));
        $short = $client->lock(substr($name, 0, 4), 3000);
        $this->assertInstanceOf(Lock::class, $short, "the NUL does not cut the name");
        $short->release();
        $lock->release();
    }

    public function testGivenValue(): void
    {
        $client = Support::client();
        $lock = $client->acquire(Support::name('value'), 3000, ['value' => 'my-own-value-0123456789']);
        $this->assertSame('my-own-value-0123456789', $lock->value());
        $lock->release();
    }

    public function testClientDefaultsAndClose(): void
    {
        $client = Support::client(['retryCount' => 5, 'quarantine' => 'off', 'notify' => false, 'keyPrefix' => 'php-test:']);
        $lock = $client->acquire(Support::name('close'), 3000);
        $client->close();
        $client->close();
        $this->assertGreaterThan(0, $lock->remaining(), 'locks outlive their client');
        $this->assertTrue($lock->release());
        try {
            $client->lock('x', 1000);
            $this->fail('a closed client must refuse');
        } catch (InvalidArgumentException $e) {
            $this->assertSame(7, $e->getCode());
            $this->assertStringContainsString('closed', $e->getMessage());
        }
    }

    public function testUnreachableNodesAreATypedError(): void
    {
        $dead = ['redis://127.0.0.1:1', 'redis://127.0.0.1:2', 'redis://127.0.0.1:3'];
        $client = new Client($dead, ['connectTimeoutMs' => 200, 'retryCount' => 0]);
        try {
            $client->lock('x', 1000);
            $this->fail('no node is up');
        } catch (QuorumNotReachedException $e) {
            $this->assertSame(QuorumlockException::QL_QUORUM, $e->getCode());
            $this->assertCount(3, $e->nodes());
            foreach ($e->nodes() as $n) {
                $this->assertContains($n->kindName, ['ConnectionRefused', 'NotConnected'], (string) $n);
            }
        }
        try {
            new Client($dead, ['connectTimeoutMs' => 200, 'requireQuorum' => true]);
            $this->fail('requireQuorum must refuse');
        } catch (ConnectionFailedException $e) {
            $this->assertSame(QuorumlockException::QL_CONNECTION, $e->getCode());
            $this->assertCount(3, $e->nodes());
        }
    }

    public function testOneNodeDownStillLocks(): void
    {
        $nodes = Support::nodes();
        $nodes[1] = 'redis://127.0.0.1:1';
        $client = new Client($nodes, ['connectTimeoutMs' => 300, 'nodeTimeoutMs' => Support::NODE_TIMEOUT_MS]);
        $lock = $client->acquire(Support::name('minority-down'), 3000);
        $this->assertGreaterThan(0, $lock->remaining());
        $lock->release();
    }

    public function testMetricsAndVersion(): void
    {
        $client = Support::client();
        $client->acquire(Support::name('metrics'), 1000)->release();
        $this->assertStringContainsString('quorumlock_acquire_total{outcome="ok"} 1', $client->metricsPrometheus());
        $this->assertMatchesRegularExpression('/^\d+\.\d+\.\d+$/', Client::version());
        $this->assertStringContainsString('redis.call', Client::fenceCheckScript());
    }

    public function testEveryCodeHasItsOwnClass(): void
    {
        $seen = [];
        foreach ([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 99] as $code) {
            $e = QuorumlockException::of($code, 'm');
            $this->assertSame($code, $e->getCode());
            $this->assertNotSame(QuorumlockException::class, get_class($e));
            $this->assertSame((string) \Quorumlock\Library::ffi()->quorumlock_result_name($code), $e->codeName());
            $seen[get_class($e)] = true;
        }
        $this->assertCount(13, $seen);
        $this->assertSame('QL_UNKNOWN', QuorumlockException::of(42, 'm')->codeName());
    }
}
