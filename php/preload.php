<?php

// opcache.preload script for PHP-FPM (or any SAPI) with ffi.enable=preload:
//
//   opcache.preload=/path/to/quorumlock/php/preload.php
//   opcache.preload_user=www-data        ; needed when the server starts as root
//   ffi.enable=preload                   ; Debian's default
//   ffi.preload=/etc/php/8.2/quorumlock.h ; with preload_user: php bin/quorumlock-ffi-header > that file
//
// It preloads the package's classes, whose methods may then use FFI in every request, and
// loads libquorumlock into the FFI scope "quorumlock" unless ffi.preload did (FFI::load() does
// not work with opcache.preload_user; then set ffi.preload to the output of
// bin/quorumlock-ffi-header). Library lookup: QUORUMLOCK_LIB, the bundled lib/, the standard
// prefixes.

declare(strict_types=1);

require __DIR__ . '/autoload.php';

foreach (new RecursiveIteratorIterator(new RecursiveDirectoryIterator(__DIR__ . '/src', FilesystemIterator::SKIP_DOTS)) as $file) {
    if ($file->getExtension() === 'php') {
        require_once $file->getPathname();
    }
}

Quorumlock\Library::preload();
