<?php

declare(strict_types=1);

namespace Quorumlock\Exception;

/** Bad input, configuration or state (including a missing library or FFI turned off); nothing was sent (`QL_INVALID`, code 7). */
class InvalidArgumentException extends QuorumlockException
{
}
