<?php
require __DIR__ . '/../autoload.php';
spl_autoload_register(static function (string $class): void {
    if (str_starts_with($class, 'Posthorn\\Tests\\')) {
        require __DIR__ . '/' . substr($class, strlen('Posthorn\\Tests\\')) . '.php';
    }
});
