<?php

// One contending worker: php worker.php <lock|nolock> <resource> <iterations> <log file>.
// Inside the critical section it appends "<enter ns> <leave ns> <pid> <remaining ms at leave>"
// (CLOCK_MONOTONIC, shared by all processes) to the log; ContentionTest checks the windows never
// overlap. "nolock" skips the lock: the same check must then find overlaps.

declare(strict_types=1);

require dirname(__DIR__) . '/autoload.php';

[, $mode, $resource, $iterations, $log] = $argv;
$client = new Quorumlock\Client(explode(',', (string) getenv('QL_NODES')), ['nodeTimeoutMs' => 250]);
$lines = [];
for ($i = 0; $i < (int) $iterations; $i++) {
    $lock = null;
    if ($mode === 'lock') {
        $lock = $client->acquire($resource, 5000, ['waitMs' => 20000]);
    }
    $enter = hrtime(true);
    usleep(3000);
    $left = $lock ? $lock->remaining() : 1;
    $leave = hrtime(true);
    $lines[] = "$enter $leave " . getmypid() . " $left\n";
    $lock?->release();
}
$f = fopen($log, 'a');
flock($f, LOCK_EX);
fwrite($f, implode('', $lines));
flock($f, LOCK_UN);
fclose($f);
