<?php

declare(strict_types=1);

namespace Quorumlock;

use FFI;
use FFI\CData;
use Quorumlock\Exception\QuorumlockException;

/**
 * A held distributed lock. Act on the protected resource only while remaining() > 0.
 *
 * PHP FFI cannot take calls from the engine's threads, so there is no lost-lock callback:
 * read remaining() (or isLost()) before each step. A Lock that is destroyed while still held
 * (it went out of scope, or the script ended) is released in the background.
 */
final class Lock
{
    private ?CData $ptr;
    private bool $released = false;
    private readonly int $ttlMs;

    /**
     * @internal made by Client::lock() / acquire()
     * @param string|list<string> $resource
     */
    public function __construct(CData $ptr, private readonly string|array $resource)
    {
        $this->ptr = $ptr;
        $this->ttlMs = (int) Library::ffi()->quorumlock_lock_ttl_ms($ptr);
    }

    public function __destruct()
    {
        if ($this->ptr !== null) {
            Library::ffi()->quorumlock_lock_free($this->ptr);
            $this->ptr = null;
        }
    }

    /** @return string|list<string> the resource (or the list given to lock()) */
    public function resource(): string|array
    {
        return $this->resource;
    }

    /** The TTL it was acquired with, in milliseconds (as the engine has it). */
    public function ttlMs(): int
    {
        return $this->ttlMs;
    }

    /** The lock's random value (40 hex characters), the same on every node. */
    public function value(): string
    {
        $ffi = Library::ffi();
        $ptr = $this->ptr();
        return Library::text(fn ($buf, $len, $n) => $ffi->quorumlock_lock_value($ptr, $buf, $len, $n));
    }

    /** Validity left in milliseconds; 0 once expired, lost or released. */
    public function remaining(): int
    {
        return $this->ptr === null ? 0 : (int) Library::ffi()->quorumlock_lock_remaining_ms($this->ptr);
    }

    /** Whether it is still held (validity left and not released). */
    public function isHeld(): bool
    {
        return !$this->released && $this->remaining() > 0;
    }

    /** Whether it was lost: its validity ran out, or it was taken or capped, before release(). */
    public function isLost(): bool
    {
        return $this->lostReason() !== QuorumlockException::LOST_NONE;
    }

    /**
     * Why it was lost, as the engine has it (read without sending anything):
     * QuorumlockException::LOST_EXPIRED, LOST_TAKEN or LOST_EXTENSION_LIMIT; LOST_NONE while
     * it is held and after release().
     */
    public function lostReason(): int
    {
        if ($this->released || $this->ptr === null) {
            return QuorumlockException::LOST_NONE;
        }
        return (int) Library::ffi()->quorumlock_lock_lost_reason($this->ptr);
    }

    /** Whether release() was called. */
    public function isReleased(): bool
    {
        return $this->released;
    }

    /**
     * Extends the lock to $ttlMs (default: its TTL) from now on a quorum of nodes. An expired
     * lock is never revived: LockLostException (code QL_LOST, lostReason()); a failed extend
     * keeps the previous deadline (QuorumNotReachedException, ...).
     */
    public function extend(mixed $ttlMs = null): void
    {
        $ttl = $ttlMs === null ? $this->ttlMs : Client::uint($ttlMs, 'ttlMs', 'extend', $this->label());
        $ffi = Library::ffi();
        $err = $ffi->new('quorumlock_error*');
        $r = $ffi->quorumlock_lock_extend($this->ptr('extend'), $ttl, FFI::addr($err));
        if ($r !== 0) {
            throw Library::error($r, $err, 'extend', $this->label());
        }
    }

    /**
     * Releases the lock on every node (compare-and-delete). Returns whether a quorum of nodes
     * still held it; false also when it had been lost. Idempotent: a second call returns
     * false and sends nothing.
     */
    public function release(): bool
    {
        if ($this->released) {
            return false;
        }
        $ffi = Library::ffi();
        $held = $ffi->new('bool');
        $err = $ffi->new('quorumlock_error*');
        $r = $ffi->quorumlock_lock_release($this->ptr('release'), FFI::addr($held), FFI::addr($err));
        if ($r !== 0) {
            throw Library::error($r, $err, 'release', $this->label());
        }
        $this->released = true;
        return (bool) $held->cdata;
    }

    /** Alias of release(), for redlock-style code. */
    public function unlock(): bool
    {
        return $this->release();
    }

    /**
     * Starts or stops the engine's automatic extension (every TTL / 3 by default). It runs on
     * the engine's threads, also while PHP is busy; read remaining() to see if it kept up.
     */
    public function setAutoExtend(mixed $on): void
    {
        if (!is_bool($on)) {
            throw QuorumlockException::invalid('autoExtend', 'on must be a bool, got ' . get_debug_type($on));
        }
        $ffi = Library::ffi();
        $err = $ffi->new('quorumlock_error*');
        $r = $ffi->quorumlock_lock_set_auto_extend($this->ptr('autoExtend'), $on, FFI::addr($err));
        if ($r !== 0) {
            throw Library::error($r, $err, 'autoExtend', $this->label());
        }
    }

    /**
     * The fencing token of the (first, in sorted order) resource of a lock taken with
     * 'fenced' => true; QL_INVALID otherwise.
     */
    public function token(): int
    {
        $ffi = Library::ffi();
        $out = $ffi->new('uint64_t');
        $r = $ffi->quorumlock_lock_token($this->ptr('token'), FFI::addr($out));
        if ($r !== 0) {
            throw QuorumlockException::invalid('token', 'the lock was not acquired with fenced => true');
        }
        return (int) $out->cdata;
    }

    /** @return list<int> one fencing token per resource, in sorted resource order ([] unfenced) */
    public function tokens(): array
    {
        $ffi = Library::ffi();
        $ptr = $this->ptr('token');
        $n = (int) $ffi->quorumlock_lock_token_count($ptr);
        $out = $ffi->new('uint64_t');
        $tokens = [];
        for ($i = 0; $i < $n; $i++) {
            if ($ffi->quorumlock_lock_token_at($ptr, $i, FFI::addr($out)) !== 0) {
                throw QuorumlockException::invalid('token', "no token at $i");
            }
            $tokens[] = (int) $out->cdata;
        }
        return $tokens;
    }

    private function ptr(string $op = 'lock'): CData
    {
        if ($this->ptr === null) {
            throw QuorumlockException::invalid($op, 'the lock was freed');
        }
        return $this->ptr;
    }

    private function label(): ?string
    {
        return is_string($this->resource) ? $this->resource : null;
    }
}
