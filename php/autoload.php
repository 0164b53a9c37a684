<?php

// PSR-4 autoloader for the Quorumlock\ namespace, for projects that do not use Composer:
// require '/path/to/quorumlock/php/autoload.php';

declare(strict_types=1);

spl_autoload_register(static function (string $class): void {
    if (str_starts_with($class, 'Quorumlock\\')) {
        $file = __DIR__ . '/src/' . str_replace('\\', '/', substr($class, strlen('Quorumlock\\'))) . '.php';
        if (is_file($file)) {
            require $file;
        }
    }
});
