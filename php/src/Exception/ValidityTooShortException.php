<?php

declare(strict_types=1);

namespace Quorumlock\Exception;

/** A quorum was reached with too little validity left (`QL_VALIDITY`, code 3). */
class ValidityTooShortException extends QuorumlockException
{
}
