<?php

declare(strict_types=1);

namespace Quorumlock\Exception;

/** Credentials or ACL refused (`QL_AUTH`, code 9). */
class AuthFailedException extends QuorumlockException
{
}
