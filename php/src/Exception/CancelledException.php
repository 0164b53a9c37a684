<?php

declare(strict_types=1);

namespace Quorumlock\Exception;

/** The acquisition was cancelled (`QL_CANCELLED`, code 4). */
class CancelledException extends QuorumlockException
{
}
