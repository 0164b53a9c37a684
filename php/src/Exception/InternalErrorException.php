<?php

declare(strict_types=1);

namespace Quorumlock\Exception;

/** A bug: the engine caught a panic at the C boundary (`QL_INTERNAL`, code 99). */
class InternalErrorException extends QuorumlockException
{
}
