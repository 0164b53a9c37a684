<?php

// php -d ffi.enable=1 examples/hello.php   (QL_NODES=redis://...,redis://... ; QUORUMLOCK_LIB if the
// library is not under a standard prefix)

declare(strict_types=1);

require dirname(__DIR__) . '/autoload.php';   // or Composer's vendor/autoload.php

use Quorumlock\Client;

$nodes = explode(',', getenv('QL_NODES') ?: 'redis://127.0.0.1:6379');
$client = new Client($nodes, ['nodeTimeoutMs' => 250]);
$lock = $client->lock('hello:php', 10000);
if ($lock === false) {
    echo 'busy: ', $client->lastError()->getMessage(), "\n";
    exit(1);
}
echo 'locked for ', $lock->remaining(), " ms with libquorumlock ", Client::version(), "\n";
$lock->release();
echo "released\n";
