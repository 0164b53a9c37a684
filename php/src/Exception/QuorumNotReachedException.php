<?php

declare(strict_types=1);

namespace Quorumlock\Exception;

/** Node failures blocked the quorum; nodes() says what each node did (`QL_QUORUM`, code 2). */
class QuorumNotReachedException extends QuorumlockException
{
}
