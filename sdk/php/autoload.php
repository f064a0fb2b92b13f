<?php
// PSR-4 autoloading of Posthorn\ for projects that do not use Composer.
spl_autoload_register(static function (string $class): void {
    if (str_starts_with($class, 'Posthorn\\')) {
        $file = __DIR__ . '/src/' . str_replace('\\', '/', substr($class, strlen('Posthorn\\'))) . '.php';
        if (is_file($file)) {
            require $file;
        }
    }
});
