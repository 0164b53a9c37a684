<?php

declare(strict_types=1);

namespace Quorumlock\Exception;

/** Unsafe node settings (`QL_MISCONFIGURED`, code 11). */
class MisconfiguredException extends QuorumlockException
{
}
