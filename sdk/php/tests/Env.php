<?php

declare(strict_types=1);

namespace Posthorn\Tests;

use PHPUnit\Framework\TestCase;

/** The server's address and keys, given by sdk/test.sh. */
final class Env
{
    /** The variable, or a skip (a failure under POSTHORN_REQUIRE_SERVER=1, as in test.sh). */
    public static function get(TestCase $test, string $name): string
    {
        $value = getenv($name);
        if ($value !== false && $value !== '') {
            return $value;
        }
        if (getenv('POSTHORN_REQUIRE_SERVER') === '1') {
            $test->fail("{$name} is not set");
        }
        $test->markTestSkipped("{$name} is not set: run sdk/test.sh for the server tests");
    }

    public static function freePort(): int
    {
        $sock = stream_socket_server('tcp://127.0.0.1:0');
        $port = (int) substr(strrchr(stream_socket_get_name($sock, false), ':'), 1);
        fclose($sock);
        return $port;
    }

    public static function waitFor(string $what, callable $check, float $timeout = 30.0): mixed
    {
        $deadline = microtime(true) + $timeout;
        while (microtime(true) < $deadline) {
            $value = $check();
            if ($value) {
                return $value;
            }
            usleep(200_000);
        }
        throw new \RuntimeException("timed out waiting for {$what}");
    }
}
