<?php

declare(strict_types=1);

namespace Quorumlock\Exception;

/** Scripting unavailable on the nodes (`QL_SCRIPT`, code 10). */
class ScriptFailedException extends QuorumlockException
{
}
