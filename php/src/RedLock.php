<?php

declare(strict_types=1);

namespace Quorumlock;

use Quorumlock\Exception\LockBusyException;
use Quorumlock\Exception\LockLostException;
use Quorumlock\Exception\QuorumlockException;
use Quorumlock\Exception\QuorumNotReachedException;
use Quorumlock\Exception\ValidityTooShortException;

/**
 * redlock-php's API over quorumlock: replace `new RedLock($servers)` by
 * `new Quorumlock\RedLock($servers)`.
 *
 *     $redLock = new RedLock([['127.0.0.1', 6379, 0.01], ['127.0.0.1', 6389, 0.01], ['127.0.0.1', 6399, 0.01]]);
 *     $lock = $redLock->lock('my_resource_name', 1000);   // ['validity' => ms, 'resource' => ..., 'token' => ...] or false
 *     $redLock->unlock($lock);
 *
 * Servers are [host, port, timeout seconds] arrays as in redlock-php, redis:// URL strings,
 * or phpredis-like objects (getHost(), getPort(), getDbNum()). $settings are
 * Quorumlock\Client settings; the defaults are redlock-php's: keys are the bare resource
 * names (so redlock-php and quorumlock processes exclude each other during a migration), no
 * restart quarantine and no TTL cap below 2^53 - 1 ms, no minimum validity beyond
 * "more than 0 ms". Lock arrays from any process can be unlocked (and extended) by value.
 */
class RedLock
{
    /** The peer's defaults; any Client setting in the constructor's $settings overrides them. */
    public const PEER_DEFAULTS = [
        'quarantine' => 'off',
        'maxTtlMs' => 9007199254740991,
        'keyPrefix' => '',
        'keyFormat' => 'bare',
        'minValidityMs' => 0,
    ];

    /** @var array<string, Lock> native locks by token, until unlock() or expiry */
    private static array $held = [];

    private Client $client;
    private ?QuorumlockException $lastError = null;

    /**
     * @param list<array{0: string, 1: int, 2?: float}|string|object> $servers
     * @param array<string, mixed> $settings Quorumlock\Client settings
     */
    public function __construct(mixed $servers, mixed $retryDelay = 200, mixed $retryCount = 3, mixed $settings = [])
    {
        if (!is_array($servers) || $servers === []) {
            throw QuorumlockException::invalid('connect', 'servers must be a non-empty array, got ' . get_debug_type($servers));
        }
        $retryDelay = Client::uint($retryDelay, 'retryDelay', 'connect');
        $retryCount = Client::uint($retryCount, 'retryCount', 'connect');
        if (!is_array($settings)) {
            throw QuorumlockException::invalid('connect', 'settings must be an array, got ' . get_debug_type($settings));
        }
        $urls = [];
        $timeout = 0.0;
        foreach (array_values($servers) as $i => $s) {
            [$url, $t] = self::url($s, $i);
            $urls[] = $url;
            $timeout = max($timeout, $t);
        }
        $defaults = self::PEER_DEFAULTS + [
            // redlock-php: retryCount attempts in all, random delay in [retryDelay / 2, retryDelay].
            'retryCount' => max($retryCount - 1, 0),
            'retryDelayMs' => intdiv($retryDelay, 2),
            'retryJitterMs' => $retryDelay - intdiv($retryDelay, 2) + 1,
        ];
        if ($timeout > 0) {
            $defaults['connectTimeoutMs'] = (int) ceil($timeout * 1000);
        }
        $this->client = new Client($urls, $settings + $defaults);
    }

    /**
     * Locks $resource for $ttl milliseconds. Returns ['validity' => ms left (int), 'resource' =>
     * $resource, 'token' => the lock's value], or false when it was not acquired (held by
     * others, no quorum, validity used up): getLastError() then says why, per node.
     * Bad input (a non-integer or non-positive TTL, an empty name) throws InvalidArgumentException.
     *
     * @return array{validity: int, resource: string, token: string}|false
     */
    public function lock(mixed $resource, mixed $ttl): array|false
    {
        $this->lastError = null;
        if (!is_string($resource)) {
            throw QuorumlockException::invalid('acquire', 'the resource must be a string, got ' . get_debug_type($resource));
        }
        try {
            $lock = $this->client->acquire($resource, $ttl);
        } catch (LockBusyException | QuorumNotReachedException | ValidityTooShortException $e) {
            $this->lastError = $e;
            return false;
        } catch (QuorumlockException $e) {
            // The engine refuses up front a TTL shorter than its drift allowance; redlock-php
            // tries, finds no validity left and returns false.
            if ($e->getCode() === QuorumlockException::QL_INVALID && str_contains($e->getMessage(), 'leaves no validity')) {
                $this->lastError = $e;
                return false;
            }
            throw $e;
        }
        foreach (self::$held as $token => $held) {
            if ($held->remaining() === 0) {
                unset(self::$held[$token]);
            }
        }
        $token = $lock->value();
        self::$held[$token] = $lock;
        return ['validity' => $lock->remaining(), 'resource' => $resource, 'token' => $token];
    }

    /**
     * Releases a lock array returned by lock(), in this process or in any other (by value:
     * compare-and-delete on every node, other owners' keys untouched). Returns whether a
     * quorum of nodes still held it; false for a lock already released or expired.
     * InvalidArgumentException for a token the engine never gives (fewer than 16 printable
     * ASCII characters, such as redlock-php's 13-character uniqid() tokens).
     *
     * @param array{resource: string, token: string}|false $lock
     */
    public function unlock(mixed $lock): bool
    {
        if ($lock === false) {
            return false;
        }
        [$resource, $token] = self::parts($lock, 'release');
        $native = self::$held[$token] ?? null;
        if ($native !== null && $native->resource() === $resource) {
            unset(self::$held[$token]);
            try {
                return $native->release();
            } catch (QuorumlockException $e) {
                $this->lastError = $e;
                return false;
            }
        }
        return $this->client->releaseValue($resource, $token);
    }

    /**
     * Extends a lock array (from this process or any other) to $ttl ms from now on a quorum of
     * nodes. Returns the lock array with the new validity, or false when the lock is gone
     * (never re-created: expired, released or taken) or the nodes failed; getLastError() says why.
     *
     * @param array{resource: string, token: string} $lock
     * @return array{validity: int, resource: string, token: string}|false
     */
    public function extend(mixed $lock, mixed $ttl): array|false
    {
        $this->lastError = null;
        [$resource, $token] = self::parts($lock, 'extend');
        try {
            $validity = $this->client->extendValue($resource, $token, $ttl);
        } catch (LockLostException | QuorumNotReachedException | ValidityTooShortException $e) {
            $this->lastError = $e;
            return false;
        }
        return ['validity' => $validity, 'resource' => $resource, 'token' => $token];
    }

    /** @return array{0: string, 1: string} the resource and token of a lock array */
    private static function parts(mixed $lock, string $op): array
    {
        if (!is_array($lock) || !is_string($lock['token'] ?? null) || !is_string($lock['resource'] ?? null)) {
            throw QuorumlockException::invalid($op, "the lock must be an array returned by lock() with 'resource' and 'token'");
        }
        return [$lock['resource'], $lock['token']];
    }

    /** Why the last lock() returned false (or the last unlock() failed), with per-node detail. */
    public function getLastError(): ?QuorumlockException
    {
        return $this->lastError;
    }

    /** The native client behind it. */
    public function client(): Client
    {
        return $this->client;
    }

    /** @return array{0: string, 1: float} a node URL and the connect timeout in seconds */
    private static function url(mixed $s, int $i): array
    {
        if (is_string($s)) {
            return [$s, 0.0];
        }
        if (is_array($s) && isset($s[0], $s[1]) && is_string($s[0]) && is_int($s[1])) {
            $t = $s[2] ?? 0.0;
            if (!is_int($t) && !is_float($t)) {
                throw QuorumlockException::invalid('connect', "server $i: the timeout must be a number of seconds, got " . get_debug_type($t));
            }
            return [self::hostUrl($s[0], $s[1], 0), (float) $t];
        }
        if (is_object($s) && method_exists($s, 'getHost') && method_exists($s, 'getPort')) {
            $host = $s->getHost();
            $port = $s->getPort();
            $db = method_exists($s, 'getDbNum') ? $s->getDbNum() : 0;
            if (is_string($host) && is_int($port) && is_int($db)) {
                return [self::hostUrl($host, $port, $db), 0.0];
            }
        }
        throw QuorumlockException::invalid('connect', "server $i must be [host, port, timeout], a redis:// URL or a connected phpredis object, got " . get_debug_type($s));
    }

    private static function hostUrl(string $host, int $port, int $db): string
    {
        $h = str_contains($host, ':') && !str_starts_with($host, '[') ? "[$host]" : $host;
        return "redis://$h:$port/$db";
    }
}
