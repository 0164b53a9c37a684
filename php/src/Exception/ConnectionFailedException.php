<?php

declare(strict_types=1);

namespace Quorumlock\Exception;

/** Fewer than a quorum of nodes could be reached (requireQuorum) (`QL_CONNECTION`, code 8). */
class ConnectionFailedException extends QuorumlockException
{
}
