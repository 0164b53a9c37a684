<?php

declare(strict_types=1);

namespace Quorumlock\Exception;

/** The held lock expired or was taken over; lostReason() says which (`QL_LOST`, code 5). */
class LockLostException extends QuorumlockException
{
}
