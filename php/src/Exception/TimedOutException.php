<?php

declare(strict_types=1);

namespace Quorumlock\Exception;

/** No reply in time (`QL_TIMEOUT`, code 12). */
class TimedOutException extends QuorumlockException
{
}
