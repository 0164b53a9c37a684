<?php

declare(strict_types=1);

namespace Quorumlock\Exception;

use Quorumlock\NodeReport;

/**
 * Every error of the package. getCode() is the C ABI's result code (QL_BUSY is 1, ...; the
 * constants below), codeName() its name; engine failures carry the per-node report.
 */
class QuorumlockException extends \RuntimeException
{
    public const QL_BUSY = 1;
    public const QL_QUORUM = 2;
    public const QL_VALIDITY = 3;
    public const QL_CANCELLED = 4;
    public const QL_LOST = 5;
    public const QL_EXT_LIMIT = 6;
    public const QL_INVALID = 7;
    public const QL_CONNECTION = 8;
    public const QL_AUTH = 9;
    public const QL_SCRIPT = 10;
    public const QL_MISCONFIGURED = 11;
    public const QL_TIMEOUT = 12;
    public const QL_INTERNAL = 99;

    /** Lost reasons (QL_LOST_* of the C header), from lostReason(). */
    public const LOST_NONE = 0;
    public const LOST_EXPIRED = 1;
    public const LOST_TAKEN = 2;
    public const LOST_EXTENSION_LIMIT = 3;

    private const NAMES = [
        1 => 'QL_BUSY', 2 => 'QL_QUORUM', 3 => 'QL_VALIDITY', 4 => 'QL_CANCELLED', 5 => 'QL_LOST',
        6 => 'QL_EXT_LIMIT', 7 => 'QL_INVALID', 8 => 'QL_CONNECTION', 9 => 'QL_AUTH',
        10 => 'QL_SCRIPT', 11 => 'QL_MISCONFIGURED', 12 => 'QL_TIMEOUT', 99 => 'QL_INTERNAL',
    ];

    /** The class thrown for each code. */
    public const CLASSES = [
        1 => LockBusyException::class,
        2 => QuorumNotReachedException::class,
        3 => ValidityTooShortException::class,
        4 => CancelledException::class,
        5 => LockLostException::class,
        6 => ExtensionLimitException::class,
        7 => InvalidArgumentException::class,
        8 => ConnectionFailedException::class,
        9 => AuthFailedException::class,
        10 => ScriptFailedException::class,
        11 => MisconfiguredException::class,
        12 => TimedOutException::class,
        99 => InternalErrorException::class,
    ];

    /**
     * @param list<NodeReport> $nodes
     */
    final public function __construct(
        string $message,
        int $code,
        private readonly string $operation = '',
        private readonly array $nodes = [],
        private readonly int $attempts = 0,
        private readonly int $lostReason = self::LOST_NONE,
        ?\Throwable $previous = null,
    ) {
        parent::__construct($message, $code, $previous);
    }

    /** The exception of the class that goes with $code (QuorumlockException for unknown codes). */
    public static function of(
        int $code,
        string $message,
        string $operation = '',
        array $nodes = [],
        int $attempts = 0,
        int $lostReason = self::LOST_NONE,
        ?\Throwable $previous = null,
    ): self {
        $class = self::CLASSES[$code] ?? self::class;
        return new $class($message, $code, $operation, $nodes, $attempts, $lostReason, $previous);
    }

    /** A QL_INVALID error raised by the package before anything reached the library. */
    public static function invalid(string $operation, string $what): InvalidArgumentException
    {
        /** @var InvalidArgumentException */
        return self::of(self::QL_INVALID, "quorumlock: $operation: QL_INVALID: $what", $operation);
    }

    /** The C name of the code ("QL_BUSY"), or "QL_UNKNOWN". */
    public function codeName(): string
    {
        return self::NAMES[$this->getCode()] ?? 'QL_UNKNOWN';
    }

    /** "connect", "acquire", "extend", "release", ... */
    public function operation(): string
    {
        return $this->operation;
    }

    /** @return list<NodeReport> what happened on each node (empty when none was asked) */
    public function nodes(): array
    {
        return $this->nodes;
    }

    /** Acquisition attempts made (0 when nothing was sent). */
    public function attempts(): int
    {
        return $this->attempts;
    }

    /** For QL_LOST: LOST_EXPIRED, LOST_TAKEN or LOST_EXTENSION_LIMIT; LOST_NONE otherwise. */
    public function lostReason(): int
    {
        return $this->lostReason;
    }
}
