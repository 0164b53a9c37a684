<?php

declare(strict_types=1);

namespace Quorumlock\Exception;

/** An extension cap was reached (`QL_EXT_LIMIT`, code 6). */
class ExtensionLimitException extends QuorumlockException
{
}
