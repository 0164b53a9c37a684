<?php

declare(strict_types=1);

namespace Quorumlock\Tests;

use PHPUnit\Framework\TestCase;
use Quorumlock\Exception\InvalidArgumentException;
use Quorumlock\Exception\LockBusyException;
use Quorumlock\Exception\LockLostException;
use Quorumlock\Exception\QuorumlockException;
use Quorumlock\RedLock;

/** Key formats, release and extend by value, the engine's TTL and polled loss reasons. */
final class ByValueTest extends TestCase
{
    /**
     * Every node answers $expected to the command, within a few seconds: an acquire returns at
     * the quorum-th reply, and the other nodes' writes may still be in flight.
     */
    private function assertOnEvery(int $n, mixed $expected, string ...$command): void
    {
        $this->assertTrue(
            Support::eventually(fn () => Support::onAll(...$command) === array_fill(0, $n, $expected)),
            implode(' ', $command) . ': ' . var_export(Support::onAll(...$command), true),
        );
    }

    public function testKeyFormats(): void
    {
        $name = Support::name('format');
        $lock = Support::client(['keyFormat' => 'bare', 'keyPrefix' => ''])->acquire($name, 5000);
        $this->assertOnEvery(count(Support::nodes()), $lock->value(), 'GET', $name);
        $lock->release();
        $lock = Support::client(['keyFormat' => 'bare'])->acquire($name, 5000);
        $this->assertOnEvery(count(Support::nodes()), $lock->value(), 'GET', "quorumlock:$name");
        $lock->release();
        $lock = Support::client(['keyFormat' => 'braced'])->acquire($name, 5000);
        $this->assertOnEvery(count(Support::nodes()), $lock->value(), 'GET', "quorumlock:{{$name}}");
        $lock->release();
        foreach (['curly', 1, null] as $bad) {
            try {
                Support::client(['keyFormat' => $bad]);
                $this->fail('keyFormat ' . var_export($bad, true));
            } catch (InvalidArgumentException $e) {
                $this->assertSame(QuorumlockException::QL_INVALID, $e->getCode());
            }
        }
    }

    /** The drop-in's keys are redlock-php's: each library keeps the other out. */
    public function testRedLockKeysAreTheBareResourceName(): void
    {
        $n = count(Support::nodes());
        $redLock = new RedLock(Support::nodes(), 200, 3, Support::REDLOCK_SETTINGS);
        $resource = Support::name('bare');
        $lock = $redLock->lock($resource, 5000);
        $this->assertOnEvery($n, $lock['token'], 'GET', $resource);
        $this->assertSame(array_fill(0, $n, 0), Support::onAll('EXISTS', "{{$resource}}"));
        $this->assertTrue($redLock->unlock($lock));
        // A redlock-php holder: SET NX PX with a uniqid() token (13 characters).
        $token = uniqid();
        Support::onAll('SET', $resource, $token, 'NX', 'PX', '3000');
        $this->assertFalse($redLock->lock($resource, 2000), 'kept out by the redlock-php holder');
        $this->assertInstanceOf(LockBusyException::class, $redLock->getLastError());
        try {
            $redLock->unlock(['validity' => 2900, 'resource' => $resource, 'token' => $token]);
            $this->fail('a 13-character token cannot be released by value');
        } catch (InvalidArgumentException $e) {
            $this->assertSame(QuorumlockException::QL_INVALID, $e->getCode());
        }
        $this->assertSame(array_fill(0, $n, $token), Support::onAll('GET', $resource), 'untouched');
        // A token of 16+ printable characters (a redlock-php fork's, or quorumlock's) is released.
        $long = bin2hex(random_bytes(16));
        Support::onAll('SET', "$resource:2", $long, 'NX', 'PX', '3000');
        $this->assertTrue($redLock->unlock(['validity' => 2900, 'resource' => "$resource:2", 'token' => $long]));
        $this->assertQuorum(Support::onAll('EXISTS', "$resource:2"), fn ($x) => $x === 0, 'released');
        // keyFormat / keyPrefix settings override the defaults.
        $braced = new RedLock(Support::nodes(), 200, 3, ['keyFormat' => 'braced', 'keyPrefix' => 'quorumlock:'] + Support::REDLOCK_SETTINGS);
        $l = $braced->lock("$resource:3", 2000);
        $this->assertOnEvery($n, 1, 'EXISTS', "quorumlock:{{$resource}:3}");
        $braced->unlock($l);
    }

    /** A lock held by another PHP process is extended and released here by value. */
    public function testALockOfAnotherProcess(): void
    {
        $n = count(Support::nodes());
        $resource = Support::name('other');
        $script = 'require ' . var_export(dirname(__DIR__) . '/autoload.php', true) . ';'
            . '$r = new Quorumlock\RedLock(explode(",", getenv("QL_NODES")), 200, 3, ["nodeTimeoutMs" => 250]);'
            . '$l = $r->client()->acquire($argv[1], 10000);'
            . 'echo json_encode(["validity" => $l->remaining(), "resource" => $argv[1], "token" => $l->value()]), "\n";'
            . 'fgets(STDIN);'
            . 'try { $l->extend(5000); echo "extended\n"; }'
            . 'catch (Quorumlock\Exception\LockLostException $e) { echo "lost ", $e->lostReason(), " ", $l->lostReason(), "\n"; }';
        $env = ['QL_NODES' => implode(',', Support::nodes()), 'QUORUMLOCK_LIB' => Support::lib(), 'PATH' => (string) getenv('PATH')];
        $p = proc_open([...Support::php(), '-r', $script, $resource], [0 => ['pipe', 'r'], 1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes, null, $env);
        $this->assertIsResource($p);
        $theirs = json_decode((string) fgets($pipes[1]), true);
        if (!is_array($theirs)) {
            $this->fail('the other process: ' . stream_get_contents($pipes[2])); // it exited: EOF
        }
        $this->assertOnEvery($n, $theirs['token'], 'GET', $resource);

        $redLock = new RedLock(Support::nodes(), 10, 1, Support::REDLOCK_SETTINGS);
        $this->assertFalse($redLock->lock($resource, 2000), 'held by the other process');
        $ext = $redLock->extend($theirs, 30000);
        $this->assertIsArray($ext, (string) $redLock->getLastError()?->getMessage());
        $this->assertSame($theirs['token'], $ext['token']);
        $this->assertGreaterThan(25000, $ext['validity']);
        $this->assertQuorum(Support::onAll('PTTL', $resource), fn ($ms) => $ms > 25000, 'lengthened');
        $this->assertTrue($redLock->unlock($theirs));
        $this->assertQuorum(Support::onAll('EXISTS', $resource), fn ($x) => $x === 0, 'released');
        $this->assertFalse($redLock->unlock($theirs), 'a second unlock finds nothing');
        $this->assertFalse($redLock->extend($theirs, 5000), 'never re-created');
        $this->assertInstanceOf(LockLostException::class, $redLock->getLastError());
        $this->assertQuorum(Support::onAll('EXISTS', $resource), fn ($x) => $x === 0, 'not re-created');

        fwrite($pipes[0], "go\n");
        fclose($pipes[0]);
        $this->assertSame('lost 1 1', trim((string) fgets($pipes[1])), 'the holder finds its keys gone');
        fclose($pipes[1]);
        fclose($pipes[2]);
        $this->assertSame(0, proc_close($p));
    }

    public function testExtendValueNeverRecreates(): void
    {
        $n = count(Support::nodes());
        $client = Support::client(['keyFormat' => 'bare', 'keyPrefix' => '']);
        $short = $client->acquire(Support::name('short'), 300);
        $name = $short->resource();
        $this->assertTrue(Support::eventually(fn () => Support::onAll('EXISTS', $name) === array_fill(0, $n, 0)), 'keys expired');
        try {
            $client->extendValue($name, $short->value(), 5000);
            $this->fail('an expired lock was extended');
        } catch (LockLostException $e) {
            $this->assertSame(QuorumlockException::QL_LOST, $e->getCode());
        }
        $this->assertSame(array_fill(0, $n, 0), Support::onAll('EXISTS', $name), 'not re-created');

        $held = $client->acquire(Support::name('held'), 5000);
        try {
            $client->extendValue($held->resource(), str_repeat('e', 40), 60000);
            $this->fail("another owner's keys were extended");
        } catch (LockLostException $e) {
            $this->assertSame(QuorumlockException::QL_LOST, $e->getCode());
        }
        foreach (Support::onAll('PTTL', $held->resource()) as $ms) {
            $this->assertLessThanOrEqual(5000, $ms);
        }
        $this->assertFalse($client->releaseValue($held->resource(), str_repeat('e', 40)));
        $this->assertGreaterThan(10000, $client->extendValue([$held->resource()], $held->value(), 15000));
        Support::onAll('DEL', $held->resource());
        try {
            $client->extendValue($held->resource(), $held->value(), 5000);
            $this->fail('deleted keys were re-created');
        } catch (LockLostException $e) {
            $this->assertSame(QuorumlockException::LOST_EXPIRED, $e->lostReason());
        }
        $this->assertSame(array_fill(0, $n, 0), Support::onAll('EXISTS', $held->resource()));
    }

    public function testTtlAndLostReasonFromTheEngine(): void
    {
        $client = Support::client(['keyFormat' => 'bare', 'keyPrefix' => '']);
        $lock = $client->acquire(Support::name('ttl'), 7000);
        $this->assertSame(7000, $lock->ttlMs());
        $lock->extend();
        $this->assertGreaterThan(6000, $lock->remaining());
        $this->assertSame(QuorumlockException::LOST_NONE, $lock->lostReason());
        $this->assertFalse($lock->isLost());
        $lock->release();
        $this->assertSame(QuorumlockException::LOST_NONE, $lock->lostReason(), 'none after release');

        $short = $client->acquire(Support::name('expires'), 300);
        $this->assertTrue(Support::eventually(fn () => $short->isLost()));
        $this->assertSame(QuorumlockException::LOST_EXPIRED, $short->lostReason());

        $taken = $client->acquire(Support::name('taken'), 5000);
        Support::onAll('SET', $taken->resource(), 'someone-else-value', 'PX', '5000');
        try {
            $taken->extend(5000);
            $this->fail('extended a taken lock');
        } catch (LockLostException $e) {
            $this->assertSame(QuorumlockException::LOST_TAKEN, $e->lostReason());
        }
        $this->assertSame(QuorumlockException::LOST_TAKEN, $taken->lostReason());
        $this->assertTrue($taken->isLost());
        $this->assertFalse($taken->release());
    }

    /**
     * At least a quorum of the replies satisfy $cond: a node slower than the node timeout (a
     * loaded machine) can miss a write that the engine decided at the quorum.
     *
     * @param list<mixed> $replies
     */
    private function assertQuorum(array $replies, callable $cond, string $what): void
    {
        $this->assertGreaterThanOrEqual(intdiv(count($replies), 2) + 1, count(array_filter($replies, $cond)), "$what: " . json_encode($replies));
    }

    public function testByValueBadInput(): void
    {
        $client = Support::client();
        $f40 = str_repeat('f', 40);
        $cases = [
            'short value' => fn () => $client->releaseValue('x', 'short'),
            'non-printable value' => fn () => $client->releaseValue('x', str_repeat("\x01", 20)),
            'int value' => fn () => $client->releaseValue('x', 12),
            'no resources' => fn () => $client->releaseValue([], $f40),
            'int resource' => fn () => $client->releaseValue([1], $f40),
            'map of resources' => fn () => $client->releaseValue(['a' => 'x'], $f40),
            'zero ttl' => fn () => $client->extendValue('x', $f40, 0),
            'negative ttl' => fn () => $client->extendValue('x', $f40, -1),
            'string ttl' => fn () => $client->extendValue('x', $f40, '1000'),
            'RedLock: not an array' => fn () => (new RedLock(Support::nodes()))->unlock('x'),
            'RedLock: no token' => fn () => (new RedLock(Support::nodes()))->extend(['resource' => 'x'], 1000),
        ];
        foreach ($cases as $what => $call) {
            try {
                $call();
                $this->fail("$what: no error");
            } catch (InvalidArgumentException $e) {
                $this->assertSame(QuorumlockException::QL_INVALID, $e->getCode(), $what);
            }
        }
        $client->close();
        $this->expectException(InvalidArgumentException::class);
        $client->releaseValue('x', $f40);
    }
}
