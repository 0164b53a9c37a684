<?php

declare(strict_types=1);

namespace Quorumlock\Exception;

/** Other owners hold the resource (`QL_BUSY`, code 1). */
class LockBusyException extends QuorumlockException
{
}
