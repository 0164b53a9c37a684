<?php

declare(strict_types=1);

namespace Quorumlock;

/** What happened on one node in the call that failed (the C ABI's per-node report). */
final class NodeReport
{
    public function __construct(
        /** Position in the node list given to the client. */
        public readonly int $index,
        /** host:port/db, never credentials. */
        public readonly string $address,
        /** QL_NODE_* number of the C header. */
        public readonly int $kind,
        /** Its name: "Ok", "HeldByOther", "Timeout", "ConnectionRefused", ... */
        public readonly string $kindName,
        /** Reply latency in microseconds; null when the node gave no reply. */
        public readonly ?int $latencyUs,
    ) {
    }

    public function __toString(): string
    {
        $s = "node {$this->index} ({$this->address}): {$this->kindName}";
        return $this->latencyUs === null ? "$s, no reply" : "$s in {$this->latencyUs} us";
    }
}
